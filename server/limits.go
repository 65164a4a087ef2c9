package server

import (
	"container/list"
	"context"
	"github.com/capgraph/capgraph/server/internal/turns"
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
)

// What one principal can make the server hold is bounded: its threads
// (Config.MaxThreads per owner — the principal, or a trusted frontend's
// forwarded user), each thread's metadata (Config.MaxMetadataKeys keys,
// Config.MaxMetadataBytes bytes), and every list is read a page at a time
// (Config.MaxPageSize). docs/reliability.md lists every limit.

// Defaults of the limits above.
const (
	DefaultMaxThreads       = 10000
	DefaultMaxMetadataKeys  = 64
	DefaultMaxMetadataBytes = 16 << 10
	DefaultPageSize         = 50
	DefaultMaxPageSize      = 500
	// metadataKeyMaxLen bounds one metadata key of the native API, in bytes.
	metadataKeyMaxLen = 64
)

// checkMetadata refuses client metadata the limits or the store would
// refuse: too many keys or bytes, keys outside the thread-id alphabet,
// values that are not UTF-8 or hold a NUL.
func (s *Server) checkMetadata(meta map[string]string) error {
	if len(meta) > s.cfg.MaxMetadataKeys {
		return badRequest("metadata", "%d keys exceed the limit of %d", len(meta), s.cfg.MaxMetadataKeys)
	}
	size := 0
	for k, v := range meta {
		size += len(k) + len(v)
		if len(k) > metadataKeyMaxLen || !turns.ValidThreadID(k) {
			return badRequest("metadata", "key %s: a metadata key is 1 to %d characters: ASCII letters, digits, '-', '_', '.' and ':', starting with a letter or digit",
				turns.QuoteForClient(k), metadataKeyMaxLen)
		}
		if !utf8.ValidString(v) {
			return badRequest("metadata."+k, "is not valid UTF-8")
		}
		for i := 0; i < len(v); i++ {
			if v[i] == 0 {
				return badRequest("metadata."+k, "holds a NUL character")
			}
		}
	}
	if size > s.cfg.MaxMetadataBytes {
		return badRequest("metadata", "%d bytes exceed the limit of %d (keys and values together)", size, s.cfg.MaxMetadataBytes)
	}
	return nil
}

// page is a list request's paging: ?limit= and ?cursor=.
type page struct {
	limit  int
	cursor string
}

// pageOf reads ?limit (1..MaxPageSize, default DefaultPageSize) and
// ?cursor (the next_cursor of the previous page).
func (s *Server) pageOf(r *http.Request) (page, error) {
	p := page{limit: DefaultPageSize, cursor: r.URL.Query().Get("cursor")}
	if p.limit > s.cfg.MaxPageSize {
		p.limit = s.cfg.MaxPageSize
	}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > s.cfg.MaxPageSize {
			return p, badRequest("limit", "must be a whole number from 1 to %d, got %s", s.cfg.MaxPageSize, turns.QuoteForClient(v))
		}
		p.limit = n
	}
	if len(p.cursor) > 128 {
		return p, badRequest("cursor", "is not a cursor this server gave")
	}
	return p, nil
}

// threadCounts knows how many threads each owner has, so a new thread can
// be refused at Config.MaxThreads without listing the owner's threads
// every time: an owner's count is read from the store when first needed
// and then kept up to date by this process's creations and deletions.
// A creation is counted from its reservation (reserve) to its end
// (commit): concurrent creations of one owner never see the same free
// place, and the count read from the store is read while none of this
// process's creations is half-way, so the limit holds exactly within one
// process. With replicas (shared), other replicas' creations and
// deletions are seen when the count is read again: at every creation that
// would leave the owner less than a tenth of the limit free, so that
// replicas together overshoot it by no more than the creations other
// replicas have in flight.
type threadCounts struct {
	max    int
	shared bool

	mu sync.Mutex
	// changed is broadcast when an owner's count was read or a creation
	// ended: reservations waiting for either look again.
	changed *sync.Cond
	order   *list.List // of *countEntry, most recently used first
	by      map[string]*list.Element
}

type countEntry struct {
	owner string
	// n counts the owner's threads: the store's at the last read, with
	// this process's creations and deletions since; known once read.
	n     int
	known bool
	// inflight counts the reservations whose creation has not ended;
	// reading is set while the store's count is read.
	inflight int
	reading  bool
}

// threadCountOwners bounds the owners whose counts are kept.
const threadCountOwners = 4096

func newThreadCounts(max int) *threadCounts {
	t := &threadCounts{max: max, order: list.New(), by: map[string]*list.Element{}}
	t.changed = sync.NewCond(&t.mu)
	return t
}

// entry returns owner's entry, made unknown when missing, as the most
// recently used (t.mu held). Entries in use are never evicted.
func (t *threadCounts) entry(owner string) *countEntry {
	if el, ok := t.by[owner]; ok {
		t.order.MoveToFront(el)
		return el.Value.(*countEntry)
	}
	e := &countEntry{owner: owner}
	t.by[owner] = t.order.PushFront(e)
	for el := t.order.Back(); t.order.Len() > threadCountOwners && el != nil; {
		prev := el.Prev()
		if old := el.Value.(*countEntry); old.inflight == 0 && !old.reading && old != e {
			delete(t.by, old.owner)
			t.order.Remove(el)
		}
		el = prev
	}
	return e
}

// reserve counts one more thread for owner, or reports apierror.ErrQuota; commit
// ends the reservation. count reads the owner's number of threads when it
// is not known.
func (t *threadCounts) reserve(ctx context.Context, owner string, count func(ctx context.Context) (int, error)) error {
	if t.max <= 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		e := t.entry(owner)
		if e.reading {
			t.changed.Wait()
			continue
		}
		if !e.known || t.shared && e.n+e.inflight >= t.max-max(1, t.max/10) {
			if e.inflight > 0 {
				// The store's count would hold some of them and not
				// others: read it once they have ended.
				t.changed.Wait()
				continue
			}
			e.reading = true
			t.mu.Unlock()
			n, err := count(ctx)
			t.mu.Lock()
			e.reading = false
			t.changed.Broadcast()
			if err != nil {
				return err
			}
			e.n, e.known = n, true
		}
		if e.n+e.inflight >= t.max {
			return &apierror.RequestError{Kind: apierror.ErrQuota, Param: "thread", Message: "this API key (or forwarded user) has " + strconv.Itoa(e.n+e.inflight) +
				" threads, the limit (server.limits.max_threads); delete threads (DELETE /api/threads/{id}) to start new ones"}
		}
		e.inflight++
		return nil
	}
}

// commit ends a reservation of owner: the thread was created (counted
// from now on) or not (a concurrent request made it, or the creation
// failed).
func (t *threadCounts) commit(owner string, created bool) {
	if t.max <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entry(owner)
	if e.inflight > 0 {
		e.inflight--
	}
	if created {
		e.n++
	}
	t.changed.Broadcast()
}

// release uncounts a deleted thread.
func (t *threadCounts) release(owner string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, ok := t.by[owner]; ok {
		if e := el.Value.(*countEntry); e.n > 0 {
			e.n--
		}
	}
}

// countThreads counts c's threads in the store, a page at a time.
func (s *Server) countThreads(ctx context.Context, c caller) (int, error) {
	if s.features.threads == nil {
		return s.threads.count(c), nil
	}
	const batch = 1000
	n := 0
	f := agent.ThreadFilter{Metadata: ownerFilter(c), Limit: batch}
	for {
		infos, err := s.features.threads.Threads(ctx, f)
		if err != nil {
			return 0, err
		}
		for _, info := range infos {
			if _, ok := threadFromInfo(c, info); ok {
				n++
			}
		}
		if len(infos) < batch {
			return n, nil
		}
		f.Before = infos[len(infos)-1].Latest
	}
}
