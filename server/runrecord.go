package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/mcphttp"
	"github.com/capgraph/capgraph/server/internal/native"
	lifecycle "github.com/capgraph/capgraph/server/internal/run"
	"github.com/capgraph/capgraph/server/internal/runs"
	"github.com/capgraph/capgraph/server/internal/turns"
	"github.com/capgraph/capgraph/state"
	"github.com/google/uuid"
)

// Acknowledged work is durable: before the server answers 2xx to a request
// that starts a run, or sends the first byte of its stream, it writes the
// run's record (runstore.Record) to the store the agent keeps its
// checkpoints in — with everything needed to start the run again (the
// user's input or answer, the options, who asked). A run carries its
// record's id into the turn's metadata (metaRun), so after a crash the
// store says whether the run's input reached the checkpoints: RecoverRuns
// starts the runs that never did, resumes those cut between two steps, and
// marks the records of runs that ended meanwhile. A client reads the
// record (GET /api/threads/{id}/runs/{run}) after a restart too.
//
// The record's key makes repeated requests idempotent: a request with an
// Idempotency-Key header, or a Chat Completions request repeating the same
// conversation (as SDKs retry), finds the first run's record instead of
// starting a second run — it joins the run while it goes on, or gets its
// result (the record's Result) once it has ended.

// metaRun is the metadata key of the server run whose turn wrote a thread's
// latest checkpoints.
const metaRun = "run"

// Labels of run records.
const (
	labelOwner  = "owner"
	labelTenant = "tenant"
	labelUser   = "user"
	labelSource = "source"
	labelThread = "thread" // the client's id of the thread
	// labelRequest is a digest of what the request asked (runSpec.request):
	// an Idempotency-Key sent again with another request is refused.
	labelRequest = "request"
)

// runKind says how a recorded run starts.
type runKind string

const (
	kindTurn   runKind = "turn"   // agent.Run with a new message
	kindAnswer runKind = "answer" // agent.Resume with an approval's answer
	kindResume runKind = "resume" // agent.Resume of a cut run (recovery)
	kindReplay runKind = "replay" // TimeTraveler.Replay of a fork (POST /api/threads/{id}/replay)
)

// runInput is a run record's Input: everything needed to start it again.
type runInput struct {
	Kind   runKind       `json:"kind"`
	Turn   *storedTurn   `json:"turn,omitempty"`
	Answer *storedAnswer `json:"answer,omitempty"`
}

type storedTurn struct {
	Input               string             `json:"input"`
	Options             *agent.TurnOptions `json:"options,omitempty"`
	MayRaise            []string           `json:"may_raise,omitempty"`
	By                  string             `json:"by,omitempty"`
	Metadata            map[string]string  `json:"metadata,omitempty"`
	AllowedCapabilities []string           `json:"allowed_capabilities,omitempty"`
}

type storedAnswer struct {
	ApprovalID string      `json:"approval_id"`
	Text       string      `json:"text,omitempty"`
	Approved   *bool       `json:"approved,omitempty"`
	Plan       *state.Plan `json:"plan,omitempty"`
	By         string      `json:"by,omitempty"`
	// Beside lists the other approvals the thread waited for when this
	// answer was accepted (concurrent steps each ask): an answer to one of
	// them that arrives while this one is carried out is queued behind it
	// (queueAnswer) rather than refused.
	Beside []string `json:"beside,omitempty"`
	// Token is the chat approval token the answer named (agent.Answer.Token).
	Token string `json:"token,omitempty"`
}

// runResult is a record's Result: what a repeated request is answered.
type runResult struct {
	// Content and Reasoning are a Chat Completions answer.
	Content   string       `json:"content,omitempty"`
	Reasoning string       `json:"reasoning,omitempty"`
	Usage     *agent.Usage `json:"usage,omitempty"`
	// Failure is the error a failed run's request got (a server fault).
	Failure *runFailure `json:"failure,omitempty"`
	// MCP is the ask tool's answer, for a call with a request_id.
	MCP *mcphttp.Result `json:"mcp,omitempty"`
}

type runFailure struct {
	Status  int    `json:"status"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// runSpec is a run to start.
type runSpec struct {
	c            caller
	source       string // openai, native, agui, recovery
	clientThread string
	thread       string // internal id
	// fresh: this request creates the thread, so it has no messages and
	// no metadata but what the turn carries; newThread, when set, is that
	// creation, made beside the run's record (submit).
	fresh     bool
	newThread *newThread
	kind      runKind
	turn      *agent.TurnRequest
	answer    *agent.Answer
	// origin is how the run comes: a request's, or a recovery's.
	origin runs.Origin
	// claimed is a cut run the agent claimed (origin runs.FromClaim).
	claimed *agent.ClaimedRun
	// key makes the run idempotent ("" none); see idempotencyKey.
	key string
	// id reuses a record's id (recovery); "" makes a new one.
	id string
	// started is when the record was created (recovery); the zero time
	// takes the record's once submit has created it.
	started time.Time
	// chat renders the run as a Chat Completions answer for its record.
	chat bool
	// request digests what the client asked (requestDigest, chatTurn.digest);
	// "" derives it from the spec.
	request string
	// beside: for an answer, the other approvals pending beside it
	// (storedAnswer.Beside).
	beside []string
}

// fn is the agent call that runs the spec, held to what the caller's key
// may use now (agent.WithAllowedCapabilities): the configuration may have
// narrowed it since the turn began (an answer, a recovery, a replay).
func (sp runSpec) fn(s *Server) func(ctx context.Context) iter.Seq2[agent.Event, error] {
	call, allowed := sp.call(s), allowedCapabilities(sp.c)
	return func(ctx context.Context) iter.Seq2[agent.Event, error] {
		return call(agent.WithAllowedCapabilities(ctx, allowed))
	}
}

// call is the agent call of the spec.
func (sp runSpec) call(s *Server) func(ctx context.Context) iter.Seq2[agent.Event, error] {
	switch {
	case sp.claimed != nil:
		return func(ctx context.Context) iter.Seq2[agent.Event, error] { return sp.claimed.Resume(ctx) }
	case sp.kind == kindTurn:
		// The run's record holds the turn (submit wrote it, or recovery
		// read it) and recovery runs it again if its input never reached
		// the store (recoveredWork).
		req := *sp.turn
		return func(ctx context.Context) iter.Seq2[agent.Event, error] {
			return s.cfg.Runner.Run(agent.WithInputKept(ctx), req)
		}
	case sp.kind == kindAnswer:
		ans := *sp.answer
		return func(ctx context.Context) iter.Seq2[agent.Event, error] {
			return s.carryOut(ctx, sp.thread, ans)
		}
	case sp.kind == kindReplay:
		if tt := s.timeTraveler(); tt != nil {
			by := callerName(sp.c)
			return func(ctx context.Context) iter.Seq2[agent.Event, error] { return tt.Replay(ctx, sp.thread, by) }
		}
	}
	return func(ctx context.Context) iter.Seq2[agent.Event, error] {
		return s.cfg.Runner.Resume(ctx, sp.thread, agent.Answer{})
	}
}

// input encodes the spec's record input.
func (sp runSpec) input() (json.RawMessage, error) {
	in := runInput{Kind: sp.kind}
	if t := sp.turn; t != nil {
		in.Turn = &storedTurn{Input: t.Input, Options: t.Options, MayRaise: t.MayRaise, By: t.By, Metadata: t.Metadata, AllowedCapabilities: t.AllowedCapabilities}
	}
	if a := sp.answer; a != nil {
		in.Answer = &storedAnswer{ApprovalID: a.ApprovalID, Text: a.Text, Approved: a.Approved, Plan: a.Plan, By: a.By, Beside: sp.beside, Token: a.Token}
	}
	return json.Marshal(in)
}

// labels are the record's labels: who asked, from where, on which thread.
func (sp runSpec) labels() map[string]string {
	l := map[string]string{labelOwner: sp.c.Principal.Name, labelTenant: sp.c.Principal.Tenant, labelUser: sp.c.User,
		labelSource: sp.source, labelThread: sp.clientThread}
	if sp.key != "" {
		l[labelRequest] = sp.requestDigest()
	}
	return l
}

// requestDigest is sp.request, else a digest of what the spec asks: the
// message and options of a turn, the answer to an approval (not the
// metadata, which names the run).
func (sp runSpec) requestDigest() string {
	if sp.request != "" {
		return sp.request
	}
	parts := []string{string(sp.kind)}
	if t := sp.turn; t != nil {
		opts, _ := json.Marshal(t.Options)
		parts = append(parts, t.Input, string(opts))
	}
	if a := sp.answer; a != nil {
		ans, _ := json.Marshal(storedAnswer{ApprovalID: a.ApprovalID, Text: a.Text, Approved: a.Approved, Plan: a.Plan})
		parts = append(parts, string(ans))
	}
	return digestHex(parts...)
}

// sameRequest refuses to answer request from rec, the run its key started,
// when rec was started by a different request. Records without the label
// (written before it existed) are taken as the same request.
func sameRequest(rec runstore.Record, request string) error {
	if got := rec.Labels[labelRequest]; got == "" || got == request {
		return nil
	}
	return &apierror.RequestError{Kind: apierror.ErrKeyReused, Param: "Idempotency-Key", Message: "this key was first sent with a different request (run " + rec.ID + "); use a new key for a new request"}
}

// submit records the run and starts it. A spec whose key a record holds
// already starts nothing: dup is that record (the caller joins or replays
// it). The record is durable when submit returns a run.
func (s *Server) submit(ctx context.Context, sp runSpec) (r *run, dup *runstore.Record, err error) {
	nt := sp.newThread // made with the record below; dropped on every other way out
	defer func() {
		if nt != nil {
			nt.drop()
		}
	}()
	if err := s.releases.wait(ctx, sp.key); err != nil {
		return nil, nil, err
	}
	if sp.id == "" {
		sp.id = "run-" + uuid.NewString()
	}
	if sp.turn != nil {
		t := *sp.turn
		t.Metadata = maps.Clone(t.Metadata)
		if t.Metadata == nil {
			t.Metadata = map[string]string{}
		}
		t.Metadata[metaRun] = sp.id
		s.titleFromQuestion(ctx, sp, &t)
		sp.turn = &t
	}
	if err := s.clusterLimit(ctx, sp); err != nil {
		return nil, nil, err
	}
	r, err = s.reserve(sp)
	if err != nil {
		// A repeat of a request whose run still holds the thread.
		if sp.key != "" {
			if rec, kerr := s.records.GetRunByKey(ctx, sp.key); kerr == nil {
				return nil, &rec, nil
			}
		}
		return nil, nil, err
	}
	if sp.origin != runs.FromRecord { // a taken-over record exists; the others are written now
		in, err := sp.input()
		if err != nil {
			s.runs.Unreserve(r.Run)
			return nil, nil, fmt.Errorf("encode the run's input: %w", err)
		}
		rec := runstore.Record{ID: sp.id, Thread: sp.thread, Status: runstore.Running, Key: sp.key, Input: in,
			Labels: sp.labels(), Owner: s.cfg.Instance, Attempt: 1}
		made := s.makeThreadBeside(ctx, nt)
		rctx := ctx
		if nt != nil {
			// The thread's write follows at once: the record waits for it
			// (runstore.Deferrable), so that an embedded store commits the
			// two together, with one fsync instead of one after the other.
			rctx = runstore.Deferrable(ctx)
		}
		nt = nil
		got, created, err := s.records.CreateRun(rctx, rec)
		made()
		if err != nil {
			s.runs.Unreserve(r.Run)
			return nil, nil, fmt.Errorf("record the run: %w", err)
		}
		if !created {
			s.runs.Unreserve(r.Run)
			return nil, &got, nil
		}
		// The record's time is the run's start for every replica and
		// every later request (a replayed answer's "created" included).
		r.SetStarted(got.Created)
	}
	s.runs.Launch(r.Run, sp.fn(s))
	return r, nil, nil
}

// makeThreadBeside starts making nt (nil: nothing to make) while the
// caller writes the run's record: on an embedded store both wait for one
// commit. The function it returns waits for the thread. A store in memory
// (agent.InMemory) has no commit to share: the thread is made in
// place. A thread that could not be made is no error: the record holds
// the turn, whose input checkpoint makes the thread (a held one fails the
// run, as it would have failed the request).
func (s *Server) makeThreadBeside(ctx context.Context, nt *newThread) (wait func()) {
	if nt == nil {
		return func() {}
	}
	makeIt := func() {
		if _, _, err := nt.make(ctx); err != nil {
			s.cfg.Logger.Warn("a new thread was not made before its first run; the run makes it", "thread", nt.th.Internal, "error", err)
		}
	}
	if agent.IsInMemory(s.records) {
		makeIt()
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		makeIt()
	}()
	return func() { <-done }
}

// finishRecord writes how the run ended into its record. A run stopped by
// the server's shutdown keeps its record running: the next start resumes
// it. A recovered run that found its thread held elsewhere leaves the
// record to the holder.
func (s *Server) finishRecord(r *run, status agent.RunStatus, runErr error, shutdown bool) {
	u := runstore.Update{From: []runstore.Status{runstore.Queued, runstore.Running}}
	msg := ""
	if runErr != nil {
		msg = s.publicMessage(runErr)
	}
	if s.cluster != nil {
		// Only the lease holder writes the record (a replica that lost the
		// lease is fenced out); a run stopped by the shutdown, or one whose
		// thread another replica still holds, goes back to the queue.
		u.IfOwner = s.cfg.Instance
		requeue := time.Time{}
		switch {
		case r.State() == lifecycle.Fenced:
			return
		case shutdown && status == agent.RunCanceled:
		case r.Origin.Recovered() && isThreadBusy(runErr), errors.Is(runErr, agent.ErrLeaseLost):
			// The thread's lease is still the dead owner's, or was lost
			// (a renewal late under load): another attempt, a bit later.
			requeue = s.cfg.Now().Add(s.cluster.ttl / 3)
		default:
			goto write
		}
		ctx, cancel := context.WithTimeout(context.Background(), recordWriteTimeout)
		defer cancel()
		if err := s.cluster.q.RequeueRun(ctx, r.ID, s.cfg.Instance, requeue); err != nil && !errors.Is(err, runstore.ErrConflict) {
			s.cfg.Logger.Error("giving a run back to the queue", "run", r.ID, "error", err)
		}
		return
	}
write:
	switch {
	case shutdown && status == agent.RunCanceled:
		return
	case r.Origin.Recovered() && isThreadBusy(runErr):
		return
	case status == agent.RunAnswered:
		u.Status = runstore.Done
	case status == agent.RunInterrupted:
		u.Status = runstore.Interrupted
	case status == agent.RunCanceled && runErr == nil:
		// Not done: a repetition of the request may do it.
		u.Status, u.ReleaseKey = runstore.Canceled, true
	default:
		u.Status = runstore.Failed
		u.Error = msg
		if runErr == nil {
			u.Error = "the run ended without an answer"
		}
	}
	if res := r.recordResult(s, status, runErr, msg, shutdown); res != nil {
		if b, err := json.Marshal(res); err == nil {
			u.Result = b
		}
	}
	// The client may be gone: the record is written regardless. Nobody
	// waits on it (the end was told), so it may wait for another commit.
	ctx, cancel := context.WithTimeout(runstore.Deferrable(context.Background()), recordWriteTimeout)
	defer cancel()
	if _, err := s.records.UpdateRun(ctx, r.ID, u); err != nil && !errors.Is(err, runstore.ErrConflict) && !errors.Is(err, runstore.ErrNotFound) {
		s.cfg.Logger.Error("run record update failed", "run", r.ID, "error", err)
	}
	r.mu.Lock()
	r.recStatus = u.Status
	r.mu.Unlock()
}

// delivered is called when a request got its run's answer (the last byte
// handed to the connection): a later identical request is then a new
// question, not a retry, so a key derived from the request is released.
// An Idempotency-Key stays with its run.
func (s *Server) delivered(r *run) {
	r.mu.Lock()
	key := r.implicitKey
	r.implicitKey = ""
	r.mu.Unlock()
	if key == "" {
		return
	}
	// Written after the response has ended, so that the client does not
	// wait for the commit, and after the run's record is (the client may
	// have seen the run end before: Run.Settled); a request with this key
	// meanwhile waits for it (releases.wait), so it is a new question on
	// this replica as before.
	done := s.releases.start(key)
	release := func() {
		defer s.releases.end(key, done)
		if settled := r.Settled(); settled != nil {
			<-settled
		}
		r.mu.Lock()
		st := r.recStatus
		r.mu.Unlock()
		if st != "" {
			s.releaseKey(r.ID, st)
		}
	}
	if !s.background.Go(func(context.Context) { release() }) {
		release() // shutting down: as the request's own
	}
}

// keyReleases are the keys whose release (Server.delivered) is being
// written; a request carrying one waits until it is.
type keyReleases struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

func (k *keyReleases) start(key string) chan struct{} {
	done := make(chan struct{})
	k.mu.Lock()
	if k.m == nil {
		k.m = make(map[string]chan struct{})
	}
	k.m[key] = done
	k.mu.Unlock()
	return done
}

func (k *keyReleases) end(key string, done chan struct{}) {
	k.mu.Lock()
	if k.m[key] == done {
		delete(k.m, key)
	}
	k.mu.Unlock()
	close(done)
}

// wait returns once no release of key is being written, or ctx ends.
func (k *keyReleases) wait(ctx context.Context, key string) error {
	if key == "" {
		return nil
	}
	k.mu.Lock()
	done := k.m[key]
	k.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// releaseKey frees a record's key (the record stays).
func (s *Server) releaseKey(id string, st runstore.Status) {
	ctx, cancel := context.WithTimeout(runstore.Deferrable(context.Background()), recordWriteTimeout)
	defer cancel()
	_, err := s.records.UpdateRun(ctx, id, runstore.Update{From: []runstore.Status{st}, Status: st, ReleaseKey: true})
	if err != nil && !errors.Is(err, runstore.ErrConflict) {
		s.cfg.Logger.Warn("releasing a run key", "run", id, "error", err)
	}
}

// implicitKeyPrefix marks keys derived from a request (idempotencyKey).
const implicitKeyPrefix = "same:"

// recordWriteTimeout bounds a record update that no request waits for.
const recordWriteTimeout = 30 * time.Second

func isThreadBusy(err error) bool { return errors.Is(err, agent.ErrThreadBusy) }

// idempotencyKey is the record key of a request's run: from its
// Idempotency-Key header, else (implicit) the digest the caller passes
// (a Chat Completions conversation); scoped to the caller so keys never
// meet across principals.
func idempotencyKey(r *http.Request, c caller, scope string, implicit string) (key string, explicit bool) {
	if h := r.Header.Get("Idempotency-Key"); h != "" {
		return explicitKey(c, scope, h), true
	}
	if implicit == "" {
		return "", false
	}
	return implicitKeyPrefix + digestHex(ownerKey(c), scope, implicit), false
}

// explicitKey is the run key of a key the client named (the
// Idempotency-Key header, an MCP call's request_id): c's own, in scope.
func explicitKey(c caller, scope, key string) string {
	return "idem:" + digestHex(ownerKey(c), scope, key)
}

func digestHex(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(fmt.Sprintf("%d:", len(p))))
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// checkIdempotencyKey refuses a header no client should send.
func checkIdempotencyKey(r *http.Request) error {
	h := r.Header.Get("Idempotency-Key")
	if len(h) > turns.MaxKeyLen {
		return badRequest("Idempotency-Key", "is %d characters; at most %d", len(h), turns.MaxKeyLen)
	}
	return nil
}

// recordStatus is the agent status a record's status stands for ("" while
// it has not ended).
func recordStatus(st runstore.Status) agent.RunStatus {
	switch st {
	case runstore.Done:
		return agent.RunAnswered
	case runstore.Interrupted:
		return agent.RunInterrupted
	case runstore.Failed:
		return agent.RunFailed
	case runstore.Canceled:
		return agent.RunCanceled
	}
	return ""
}

// recordInfo is a record as the native API shows a run.
func recordInfo(rec runstore.Record) native.RunInfo {
	return native.RunInfo{ID: rec.ID, Thread: rec.Labels[labelThread], Started: rec.Created, Finished: rec.Status.Terminal(),
		Status: recordStatus(rec.Status), Error: rec.Error}
}

// pruneLoop removes the records of runs that ended more than
// Config.RunRetention ago and, with Config.ThreadRetention, the threads
// last updated longer ago than that: at start and then every tenth of the
// shorter retention (at most hourly), until ctx ends.
func (s *Server) pruneLoop(ctx context.Context) {
	every := min(s.cfg.RunRetention/10, time.Hour)
	if s.cfg.ThreadRetention > 0 {
		every = min(every, s.cfg.ThreadRetention/10)
	}
	t := time.NewTicker(max(every, time.Second))
	defer t.Stop()
	for {
		if n, err := s.records.PruneRuns(ctx, s.cfg.Now().Add(-s.cfg.RunRetention)); err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("pruning run records", "error", err)
		} else if n > 0 {
			s.cfg.Logger.Info("pruned run records", "records", n)
		}
		if s.cfg.ThreadRetention > 0 {
			if n, err := s.expireThreads(ctx, s.cfg.Now().Add(-s.cfg.ThreadRetention)); err != nil && ctx.Err() == nil {
				s.cfg.Logger.Warn("deleting expired threads", "error", err, "deleted", n)
			} else if n > 0 {
				s.cfg.Logger.Info("deleted expired threads", "threads", n, "retention", s.cfg.ThreadRetention)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// expireThreads deletes the threads of the store last updated before
// cutoff, as DELETE /api/threads/{id} does (checkpoints, run records, the
// owner's count), except those with a run in progress or otherwise kept
// (keptPastRetention), and returns how many it deleted. Threads never run
// and kept only in this process's index (a runner that cannot list its
// threads) are not expired.
func (s *Server) expireThreads(ctx context.Context, cutoff time.Time) (int, error) {
	if s.features.threads == nil {
		return 0, nil
	}
	const batch = 500
	var old []agent.ThreadInfo
	f := agent.ThreadFilter{Limit: batch}
	for {
		infos, err := s.features.threads.Threads(ctx, f)
		if err != nil {
			return 0, err
		}
		for _, info := range infos {
			if info.Updated.Before(cutoff) {
				old = append(old, info)
			}
		}
		if len(infos) < batch {
			break
		}
		f.Before = infos[len(infos)-1].Latest
	}
	deleted := 0
	for _, info := range old {
		if _, busy := s.runs.ActiveOn(info.ThreadID); busy {
			continue
		}
		if kept, err := s.keptPastRetention(ctx, info.ThreadID); err != nil {
			return deleted, err
		} else if kept {
			continue
		}
		if err := s.cfg.Runner.DeleteThread(ctx, info.ThreadID); errors.Is(err, agent.ErrForeignThread) {
			continue // another application's thread in a shared store: its own server expires it
		} else if err != nil && !errors.Is(err, agent.ErrUnknownThread) {
			return deleted, err
		}
		if err := s.records.DeleteRuns(ctx, info.ThreadID); err != nil {
			return deleted, err
		}
		owner := caller{Principal: Principal{Tenant: info.Metadata[metaTenant], Name: info.Metadata[metaOwner]}, User: info.Metadata[metaUser]}
		s.counts.release(ownerKey(owner))
		s.transcripts.Forget(info.ThreadID)
		deleted++
	}
	return deleted, nil
}

// keptPastRetention reports whether a thread past the retention is kept
// all the same, because it is not idle: a run of it is still owed an
// outcome (a record queued or running — parked in the queue, or left for
// recovery to finish), or it waits for an approval a human can still give
// (until the approval's expiry; one without expiry until it is answered
// or the thread deleted). Deleting it would lose the run or the
// operator's decision, not an idle conversation. Only the store's failure
// to list records is an error.
func (s *Server) keptPastRetention(ctx context.Context, thread string) (bool, error) {
	open, err := s.records.ListRuns(ctx, runstore.Filter{Thread: thread, Status: []runstore.Status{runstore.Queued, runstore.Running}, Limit: 1})
	if err != nil {
		return false, err
	}
	if len(open) > 0 {
		return true, nil
	}
	pending, err := s.pendingApprovals(ctx, thread)
	switch {
	case errors.Is(err, agent.ErrForeignThread):
		return false, nil // another application's: DeleteThread leaves it to that one
	case err != nil:
		// What cannot be read is not deleted unread: the next pass tries
		// again, and one thread does not hold up the others.
		s.cfg.Logger.Warn("a thread past its retention is kept: its state could not be read", "thread", thread, "error", err)
		return true, nil
	}
	now := s.cfg.Now()
	for _, ap := range pending {
		if ap.Expires.IsZero() || now.Before(ap.Expires) {
			return true, nil
		}
	}
	return false, nil
}
