package server

import (
	"context"
	"github.com/capgraph/capgraph/server/internal/native"
	"github.com/capgraph/capgraph/server/internal/turns"
	"strconv"
	"strings"
	"unicode"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
)

// Threads outlive the server: the agent stores the turn's metadata with
// every checkpoint, and the server writes who owns the thread and the
// client's id for it there (turnMetadata). A thread a client creates
// before its first turn gets an initial checkpoint (ThreadCreator) before
// the 201. Listing and finding a thread read the checkpoint store through
// a ThreadLister, so after a restart a client finds its threads without
// registering them again. Only for a runner that cannot create threads in
// its store does an in-memory index (threadIndex) keep the threads not yet
// run.

// Metadata keys the server writes with every turn (agent.TurnRequest.Metadata).
const (
	metaOwner  = agent.MetaOwner  // the principal's name
	metaTenant = agent.MetaTenant // the principal's tenant
	metaUser   = agent.MetaUser   // the end user a trusted frontend forwarded ("" when none)
	metaSource = "source"         // openai, native or agui
	metaThread = "thread"         // the client's id of the thread
	// metaClientPrefix prefixes the metadata a client gave the thread
	// (POST /api/threads {"metadata"}).
	metaClientPrefix = "meta."
)

// ownerFilter matches the metadata of c's threads.
func ownerFilter(c caller) map[string]string {
	return map[string]string{metaTenant: c.Principal.Tenant, metaOwner: c.Principal.Name, metaUser: c.User}
}

// turnMetadata is stored with the thread's checkpoints: who owns it, the
// client's id for it, and the client's metadata.
func (s *Server) turnMetadata(c caller, source, clientThread string, clientMeta map[string]string) map[string]string {
	m := ownerFilter(c)
	m[metaSource], m[metaThread] = source, clientThread
	for k, v := range clientMeta {
		m[metaClientPrefix+k] = v
	}
	return m
}

// threadFromInfo is a stored thread as the native API shows it, if it is
// c's: its id must derive from c and the client id in its metadata, so
// metadata alone can never hand c another principal's thread.
func threadFromInfo(c caller, info agent.ThreadInfo) (apiThread, bool) {
	id := info.Metadata[metaThread]
	if id == "" || internalThreadID(c, id) != info.ThreadID {
		return apiThread{}, false
	}
	th := apiThread{Thread: native.Thread{ID: id, Created: info.Created, Updated: info.Updated, Internal: info.ThreadID}, owner: ownerKey(c), latest: info.Latest}
	for k, v := range info.Metadata {
		if name, ok := strings.CutPrefix(k, metaClientPrefix); ok {
			if th.Metadata == nil {
				th.Metadata = map[string]string{}
			}
			th.Metadata[name] = v
		}
	}
	return th, true
}

// findThread returns c's thread with the client id: from the checkpoint
// store, else from the index of threads never run (threadIndex).
func (s *Server) findThread(ctx context.Context, c caller, id string) (apiThread, bool, error) {
	if th, ok := s.threads.get(c, id); ok {
		return th, true, nil
	}
	if s.features.threads == nil {
		return apiThread{}, false, nil
	}
	f := ownerFilter(c)
	f[metaThread] = id
	// By the store's key (the internal id is derived from the caller and
	// id): a new conversation must not read every thread to learn it is new.
	infos, err := s.features.threads.Threads(ctx, agent.ThreadFilter{ThreadID: internalThreadID(c, id), Metadata: f, Limit: 8})
	if err != nil {
		return apiThread{}, false, err
	}
	for _, info := range infos {
		if th, ok := threadFromInfo(c, info); ok {
			return th, true, nil
		}
	}
	return apiThread{}, false, nil
}

// openThread finds c's thread or creates it; created reports a new one. A
// new thread counts against c's Config.MaxThreads and is durable (in the
// checkpoint store, through the ThreadCreator) when this returns.
func (s *Server) openThread(ctx context.Context, c caller, id, source string, meta map[string]string) (th apiThread, created bool, err error) {
	th, nt, err := s.prepareThread(ctx, c, id, source, meta)
	if err != nil || nt == nil {
		return th, false, err
	}
	return nt.make(ctx)
}

// prepareThread finds c's thread, or counts a new one against c's
// Config.MaxThreads: nt is then its creation, which the caller makes
// (newThread.make) or drops, once.
func (s *Server) prepareThread(ctx context.Context, c caller, id, source string, meta map[string]string) (th apiThread, nt *newThread, err error) {
	if err := turns.CheckThreadID("thread", id); err != nil {
		return apiThread{}, nil, err
	}
	if th, found, err := s.findThread(ctx, c, id); err != nil || found {
		return th, nil, err
	}
	owner := ownerKey(c)
	if err := s.counts.reserve(ctx, owner, func(ctx context.Context) (int, error) { return s.countThreads(ctx, c) }); err != nil {
		return apiThread{}, nil, err
	}
	now := s.cfg.Now()
	th = apiThread{Thread: native.Thread{ID: id, Created: now, Updated: now, Metadata: meta, Internal: internalThreadID(c, id)}, owner: owner}
	return th, &newThread{s: s, c: c, th: th, source: source}, nil
}

// newThread is a thread a request is about to create, counted against its
// owner's Config.MaxThreads until made or dropped. A chat turn's new
// thread is made beside its run's record (submit), so that an embedded
// store commits the two in one transaction.
type newThread struct {
	s      *Server
	c      caller
	th     apiThread
	source string
}

// make creates the thread; created is false when a concurrent request (or
// a run) made it first, and th is then that thread.
func (n *newThread) make(ctx context.Context) (th apiThread, created bool, err error) {
	s := n.s
	// Not made here when not created: a concurrent request (or a run)
	// made it, or the creation failed.
	defer func() { s.counts.commit(n.th.owner, created) }()
	if s.features.threads == nil {
		th, created = s.threads.add(n.c, n.th.ID, n.th.Metadata, n.th.Created)
		return th, created, nil
	}
	created, err = s.features.threads.CreateThread(ctx, n.th.Internal, s.turnMetadata(n.c, n.source, n.th.ID, n.th.Metadata))
	if err != nil {
		created = false
		return apiThread{}, false, err
	}
	if !created {
		// Made by another request — or held by one that died before it
		// made it (a replica killed mid-way; its lease runs out): say so
		// only when the thread is there.
		if th, found, err := s.findThread(ctx, n.c, n.th.ID); err != nil || found {
			return th, false, err
		}
		return apiThread{}, false, &apierror.RequestError{Kind: apierror.ErrRunInProgress, Param: "id",
			Message: "the thread is being created by another request (or a server that stopped, whose hold on it ends within the lease TTL); try again shortly"}
	}
	return n.th, true, nil
}

// drop ends the count of a thread that was not made.
func (n *newThread) drop() { n.s.counts.commit(n.th.owner, false) }

// listThreads returns a page of c's threads, newest first, and the cursor
// of the next page ("" after the last).
func (s *Server) listThreads(ctx context.Context, c caller, p page) ([]apiThread, string, error) {
	var out []apiThread
	if p.cursor == "" {
		out = s.threads.list(c) // never run, no creator: only the first page has them
	}
	if s.features.threads == nil {
		off := 0
		if p.cursor != "" {
			n, err := strconv.Atoi(strings.TrimPrefix(p.cursor, "o"))
			if err != nil || n < 0 || !strings.HasPrefix(p.cursor, "o") {
				return nil, "", badRequest("cursor", "is not a cursor this server gave")
			}
			off, out = n, s.threads.list(c)
		}
		if off > len(out) {
			off = len(out)
		}
		out = out[off:]
		if len(out) > p.limit {
			return out[:p.limit], "o" + strconv.Itoa(off+p.limit), nil
		}
		return out, "", nil
	}
	f := agent.ThreadFilter{Metadata: ownerFilter(c), Limit: p.limit}
	if p.cursor != "" {
		id, err := uuid.Parse(p.cursor)
		if err != nil {
			return nil, "", badRequest("cursor", "is not a cursor this server gave")
		}
		f.Before = id
	}
	infos, err := s.features.threads.Threads(ctx, f)
	if err != nil {
		return nil, "", err
	}
	for _, info := range infos {
		if th, ok := threadFromInfo(c, info); ok {
			out = append(out, th)
		}
	}
	next := ""
	if len(infos) == p.limit {
		next = infos[len(infos)-1].Latest.String()
	}
	return out, next, nil
}

// callerName names c in approvals and audit records: the principal, and
// the end user a trusted frontend forwarded.
func callerName(c caller) string {
	if c.User != "" {
		return c.Principal.Name + "/" + c.User
	}
	return c.Principal.Name
}

// metaTitle is the client metadata key of a thread's title (the page
// shows it; PATCH /api/threads/{id} renames).
const metaTitle = "title"

// titleRunes bounds a title made from a question.
const titleRunes = 80

// titleFromQuestion titles an untitled thread with its first question,
// whatever API started it (a /v1 or AG-UI conversation included), so no
// thread is listed as "Conversation chat-7b6". A title the client set (at
// creation, or by renaming) is kept.
func (s *Server) titleFromQuestion(ctx context.Context, sp runSpec, t *agent.TurnRequest) {
	if sp.kind != kindTurn || t.Metadata[metaClientPrefix+metaTitle] != "" || sp.clientThread == "" {
		return
	}
	if !sp.fresh { // a thread this request made has neither: no reads
		if th, found, err := s.findThread(ctx, sp.c, sp.clientThread); err != nil || found && th.Metadata[metaTitle] != "" {
			return
		}
		if st, _, err := s.cfg.Runner.State(ctx, sp.thread); err == nil && (st.Metadata[metaClientPrefix+metaTitle] != "" || len(st.Messages) > 0) {
			return // titled, or not the first question
		}
	}
	if title := questionTitle(t.Input); title != "" {
		t.Metadata[metaClientPrefix+metaTitle] = title
	}
}

// questionTitle is a question on one line, cut at a word near titleRunes;
// control characters (NUL, which the store refuses in metadata) and
// invalid UTF-8 are left out.
func questionTitle(q string) string {
	q = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(q, ""))
	q = strings.Join(strings.Fields(q), " ")
	r := []rune(q)
	if len(r) <= titleRunes {
		return q
	}
	cut := string(r[:titleRunes])
	if i := strings.LastIndexByte(cut, ' '); i > titleRunes/2 {
		cut = cut[:i]
	}
	return cut + "…"
}
