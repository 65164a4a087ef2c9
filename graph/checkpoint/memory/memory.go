package memory

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// Store is an in-memory checkpoint.Store. The zero value is not usable; call
// New (every checkpoint of every thread) or NewLatestOnly (each thread's latest
// checkpoint only).
type Store struct {
	// LocalLeases makes the store a checkpoint.Leaser: agents sharing one
	// memory store exclude each other per thread, and Put and PutWrites
	// refuse writes under a lost lease (see checkpoint.WithLease).
	checkpoint.LocalLeases

	latestOnly bool

	mu      sync.RWMutex
	threads map[string]*thread

	records recordLog // records.go
	runs    runTable  // runs.go
}

type thread struct {
	cps    []*entry // ascending by id; at most one when latestOnly
	writes map[uuid.UUID][]checkpoint.Write
	// first and created are the id and time of the oldest checkpoint Put,
	// which ThreadInfo reports even when that checkpoint was not kept.
	first   uuid.UUID
	created time.Time
	mem     arena
}

// New returns an empty store that keeps every checkpoint of every thread.
func New() *Store { return &Store{threads: make(map[string]*thread)} }

var (
	_ checkpoint.Store       = (*Store)(nil)
	_ checkpoint.Leaser      = (*Store)(nil)
	_ checkpoint.TuplePutter = (*Store)(nil)
	_ checkpoint.FirstPutter = (*Store)(nil)
	_ checkpoint.InMemory    = (*Store)(nil)
)

// InMemory implements checkpoint.InMemory: a write is a copy in memory.
func (s *Store) InMemory() bool { return true }

// Put stores a copy of a checkpoint, normalised like the durable stores do
// (UTC microsecond times, nil for empty collections), so that tests against
// memory see what SQLite and PostgreSQL would return.
func (s *Store) Put(ctx context.Context, cp checkpoint.Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkpoint.ValidateCheckpoint(cp); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.putLocked(ctx, cp)
}

// PutFirst stores cp as Put does when its thread has no checkpoint, the
// check and the write under one lock.
func (s *Store) PutFirst(ctx context.Context, cp checkpoint.Checkpoint) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := checkpoint.ValidateCheckpoint(cp); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.Fence(ctx, cp.ThreadID); err != nil {
		return false, err
	}
	if t := s.threads[cp.ThreadID]; t != nil && len(t.cps) > 0 {
		return false, nil
	}
	return true, s.putLocked(ctx, cp)
}

// putLocked is Put with s.mu held.
func (s *Store) putLocked(ctx context.Context, cp checkpoint.Checkpoint) error {
	if err := s.Fence(ctx, cp.ThreadID); err != nil {
		return err
	}
	t := s.threads[cp.ThreadID]
	if t == nil {
		t = &thread{}
		s.threads[cp.ThreadID] = t
	}
	if t.first == uuid.Nil || compareUUID(cp.ID, t.first) <= 0 {
		t.first, t.created = cp.ID, storedTime(cp.Created)
	}
	if s.latestOnly {
		t.putLatest(&cp)
		return nil
	}
	t.put(&cp)
	if opts, ok := checkpoint.PruningFrom(ctx, cp); ok {
		var res checkpoint.PruneResult
		t.prune(opts, &res)
	}
	return nil
}

// put keeps a copy of cp in the thread's checkpoints, in id order.
func (t *thread) put(cp *checkpoint.Checkpoint) {
	n := len(t.cps)
	if t.cps == nil {
		t.cps = make([]*entry, 0, minEntries*2)
	}
	if n == 0 || uuidLess(t.cps[n-1].id, cp.ID) {
		// Common case: ids are time-ordered, so appending keeps the order.
		t.cps = append(t.cps, t.mem.keep(cp))
		return
	}
	i, found := slices.BinarySearchFunc(t.cps, cp.ID, func(e *entry, id uuid.UUID) int {
		return compareUUID(e.id, id)
	})
	if found {
		t.cps[i] = t.mem.keep(cp)
		return
	}
	t.cps = slices.Insert(t.cps, i, t.mem.keep(cp))
}

// PutWrites stores pending writes, replacing any with the same task and kind.
func (s *Store) PutWrites(ctx context.Context, threadID string, id uuid.UUID, writes []checkpoint.Write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkpoint.ValidateWrites(threadID, id, writes); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.putWritesLocked(ctx, threadID, id, writes)
}

// PutTuple stores a checkpoint and its pending writes under one lock: no
// reader sees the checkpoint without them.
func (s *Store) PutTuple(ctx context.Context, tu checkpoint.Tuple) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cp := tu.Checkpoint
	if err := checkpoint.ValidateCheckpoint(cp); err != nil {
		return err
	}
	if err := checkpoint.ValidateWrites(cp.ThreadID, cp.ID, tu.Writes); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.putLocked(ctx, cp); err != nil {
		return err
	}
	return s.putWritesLocked(ctx, cp.ThreadID, cp.ID, tu.Writes)
}

// putWritesLocked is PutWrites with s.mu held.
func (s *Store) putWritesLocked(ctx context.Context, threadID string, id uuid.UUID, writes []checkpoint.Write) error {
	if err := s.Fence(ctx, threadID); err != nil {
		return err
	}
	t := s.threads[threadID]
	if t == nil || !t.has(id) {
		return checkpoint.ErrNotFound
	}
	if t.writes == nil {
		t.writes = make(map[uuid.UUID][]checkpoint.Write)
	}
	cur := t.writes[id]
	for _, w := range writes {
		w.Value = slices.Clone(w.Value)
		if i := slices.IndexFunc(cur, func(x checkpoint.Write) bool { return x.Task == w.Task && x.Kind == w.Kind }); i >= 0 {
			cur[i] = w
		} else {
			cur = append(cur, w)
		}
	}
	t.writes[id] = cur
	return nil
}

// Get returns a checkpoint with its pending writes; uuid.Nil means the latest.
func (s *Store) Get(ctx context.Context, threadID string, id uuid.UUID) (checkpoint.Tuple, error) {
	if err := ctx.Err(); err != nil {
		return checkpoint.Tuple{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	t := s.threads[threadID]
	if t == nil || len(t.cps) == 0 {
		return checkpoint.Tuple{}, checkpoint.ErrNotFound
	}
	var cp checkpoint.Checkpoint
	if id == uuid.Nil {
		cp = t.cps[len(t.cps)-1].checkpoint(threadID)
	} else {
		i := t.index(id)
		if i < 0 {
			return checkpoint.Tuple{}, checkpoint.ErrNotFound
		}
		cp = t.cps[i].checkpoint(threadID)
	}
	ws := slices.Clone(t.writes[cp.ID])
	for i := range ws {
		ws[i].Value = slices.Clone(ws[i].Value)
	}
	return checkpoint.Tuple{Checkpoint: cp, Writes: ws}, nil
}

// List returns checkpoints newest first.
func (s *Store) List(ctx context.Context, threadID string, opts checkpoint.ListOptions) ([]checkpoint.Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	t := s.threads[threadID]
	if t == nil {
		return nil, nil
	}
	var out []checkpoint.Checkpoint
	for i := len(t.cps) - 1; i >= 0; i-- {
		e := t.cps[i]
		if opts.Before != uuid.Nil && compareUUID(e.id, opts.Before) >= 0 {
			continue
		}
		if !e.metadata.matches(opts.Filter) {
			continue
		}
		out = append(out, e.checkpoint(threadID))
		if opts.Limit > 0 && len(out) == opts.Limit {
			break
		}
	}
	return out, nil
}

// Threads lists threads, most recently updated first.
func (s *Store) Threads(ctx context.Context, f checkpoint.ThreadFilter) ([]checkpoint.ThreadInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	var out []checkpoint.ThreadInfo
	threads := s.threads
	if f.ThreadID != "" {
		threads = nil
		if t, ok := s.threads[f.ThreadID]; ok {
			threads = map[string]*thread{f.ThreadID: t}
		}
	}
	for id, t := range threads {
		if len(t.cps) == 0 {
			continue
		}
		last := t.cps[len(t.cps)-1]
		if !last.metadata.matches(f.Metadata) || f.Before != uuid.Nil && compareUUID(last.id, f.Before) >= 0 {
			continue
		}
		out = append(out, checkpoint.ThreadInfo{
			ThreadID: id, Latest: last.id, Metadata: last.metadata.unpack(),
			Created: t.created, Updated: fromMicros(last.created),
		})
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b checkpoint.ThreadInfo) int { return -compareUUID(a.Latest, b.Latest) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// DeleteThread removes a thread.
func (s *Store) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.threads, threadID)
	s.mu.Unlock()
	return nil
}

func (t *thread) index(id uuid.UUID) int {
	i, found := slices.BinarySearchFunc(t.cps, id, func(e *entry, id uuid.UUID) int {
		return compareUUID(e.id, id)
	})
	if !found {
		return -1
	}
	return i
}

func (t *thread) has(id uuid.UUID) bool { return t.index(id) >= 0 }

func compareUUID(a, b uuid.UUID) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func uuidLess(a, b uuid.UUID) bool { return compareUUID(a, b) < 0 }

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}
