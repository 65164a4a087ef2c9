package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/native"
	lifecycle "github.com/capgraph/capgraph/server/internal/run"
)

// run is one execution of a turn (or a resume) on a thread. It runs in its
// own goroutine, detached from the request that started it, and keeps a
// bounded log of its events so streams can follow it and reconnect. Where
// it stands is its lifecycle (life, package server/internal/run, which
// says what each state means and how a run moves between them).
type run struct {
	ID           string
	Thread       string // internal id
	ClientThread string
	Owner        caller
	Started      time.Time

	cancel context.CancelFunc
	ctx    context.Context
	// origin is how the run came to this process.
	origin origin
	// countedAs is the owner key whose run limits count the run while it
	// runs here; "" when none do (a recovered run, or one resumed after
	// it parked: each was admitted once).
	countedAs string
	// parkUntil is set when the run's agent call ended parked (a retry
	// wait longer than Config.ParkAfter): it goes on then (park.go).
	parkUntil time.Time
	// consumed is closed when the run has made its last event: its lease
	// is no longer renewed (its record is written next).
	consumed chan struct{}
	// pub stores the events for other replicas (nil without a cluster).
	pub *publisher
	// chat renders the events as the Chat Completions answer the run's
	// record keeps for repeated requests (nil for other protocols).
	chat *chatRenderer

	mu sync.Mutex
	// life is where the run stands; every move is one of the lifecycle's
	// (runManager.fire).
	life    lifecycle.Machine
	events  []agent.Event // ascending by Seq
	lastSeq int
	// sizeHint is the length of the last finished run's log, shared by
	// the manager's runs (regrow).
	sizeHint *atomic.Int64
	notify   chan struct{} // closed and replaced on every change
	status   agent.RunStatus
	err      error
	// cause says why the run ended (valid once it has).
	cause endCause
	max   int
	// followers counts the requests answering with this run that cancel
	// it when they leave (the one that started it, repeats that joined),
	// and one more, for good, once a request on another replica follows
	// it (keepForRemote).
	followers int
	// begun is closed at the run's first event or its end.
	begun chan struct{}
	// detach cancels the run DetachGrace after its last follower left.
	detach      *time.Timer
	detachGrace time.Duration
	// key is the run's record key when it was derived from the request
	// (a repeat is a retry only until an answer was delivered), and
	// recStatus the status finishRecord wrote.
	implicitKey string
	recStatus   runstore.Status
	// answering is the approval an answer's run carries out, beside the
	// approvals pending with it (storedAnswer.Beside), for an answer to
	// one of them that arrives before the run's record is read.
	answering string
	beside    []string
}

// origin is how a run came to this process.
type origin uint8

const (
	// fromRequest: a client's request; its record is written when it is
	// accepted, and it counts against its owner's run limits.
	fromRequest origin = iota
	// fromRecord: a recorded run taken over (recovered, claimed from the
	// queue, resumed when its retry was due, started after the run it
	// was queued behind).
	fromRecord
	// fromClaim: a run cut between two steps that the agent claimed
	// (agent.ClaimUnfinished), recorded when it is accepted.
	fromClaim
	// fromStore: a run of another replica, followed in the store.
	fromStore
)

// recovered reports whether the run was not asked for by a request.
func (o origin) recovered() bool { return o == fromRecord || o == fromClaim }

// endCause is why a run ended.
type endCause uint8

const (
	// endedHere: its agent call ended (answered, interrupted, failed or
	// canceled on request), or it was canceled while parked.
	endedHere endCause = iota
	// endedByShutdown: the server's shutdown stopped it; its record
	// stays unfinished, for the next start (or replica) to resume.
	endedByShutdown
	// endedInStore: the run it followed in the store ended.
	endedInStore
	// endedFollowing: this process stopped following it (its followers
	// left, or its record is gone).
	endedFollowing
)

// state is where the run stands.
func (r *run) state() lifecycle.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.life.State()
}

// following reports whether another replica runs it (or the queue holds
// it): this process follows its events in the store.
func (r *run) following() bool { return r.state() == lifecycle.Following }

// markBegun closes begun once (r.mu held).
func (r *run) markBegun() {
	if r.begun == nil {
		return
	}
	select {
	case <-r.begun:
	default:
		close(r.begun)
	}
}

// began waits until the run has sent its first event or ended, and
// reports whether it got going: false when it ended because another
// process holds its thread.
func (r *run) began(ctx context.Context) bool {
	select {
	case <-r.begun:
	case <-ctx.Done():
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return !(r.life.Saw(lifecycle.HandBack) || r.life.State().Ended() && len(r.events) == 0 && isThreadBusy(r.err))
}

// join counts a request that cancels the run when it leaves (leave).
func (r *run) join() {
	r.mu.Lock()
	r.followers++
	if r.detach != nil {
		r.detach.Stop() // a repeat of the request came back in time
		r.detach = nil
	}
	r.mu.Unlock()
}

// keepForRemote is SignalFollowed for a run of this process: a request
// on another replica follows it, so it is not canceled when its followers
// here have gone (that follower never leaves).
func (r *run) keepForRemote() { r.join() }

// leave is a joined request going away. When the last one has gone, the
// run is canceled: at once (a person pressed stop, closed the page), or,
// when the request that left can be repeated (repeatable), after
// Config.DetachGrace unless a repeat of it (an SDK retrying after its
// timeout) joins the run meanwhile.
func (r *run) leave(repeatable bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.followers--
	if r.followers > 0 || r.detach != nil {
		return
	}
	if r.detachGrace <= 0 || !repeatable {
		r.cancel()
		return
	}
	r.detach = time.AfterFunc(r.detachGrace, func() {
		r.mu.Lock()
		gone := r.followers <= 0
		r.detach = nil
		r.mu.Unlock()
		if gone {
			r.cancel()
		}
	})
}

// append adds ev (numbering it), wakes followers, and returns it numbered.
func (r *run) append(ev agent.Event) agent.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev.Seq = r.lastSeq + 1
	ev.RunID = r.ID
	r.logLocked(ev)
	return ev
}

// logLocked adds a numbered event to the bounded log (r.mu held), dropping
// the oldest beyond r.max, and wakes the followers.
func (r *run) logLocked(ev agent.Event) {
	r.lastSeq = ev.Seq
	if len(r.events) == cap(r.events) {
		r.events = r.regrow()
	}
	r.events = append(r.events, ev)
	if drop := len(r.events) - r.max; drop > 0 {
		r.events = r.events[drop:] // the array goes with the next regrow
	}
	if ev.Type == agent.EventDone {
		r.status = ev.Status
	}
	r.markBegun()
	r.wake()
}

// wake tells the followers the run changed (r.mu held).
func (r *run) wake() {
	close(r.notify)
	r.notify = make(chan struct{})
}

// regrow returns the log in a new array with room for more (r.mu held). The
// first array is as long as the last run's log (sizeHint): grown by
// doubling, an event log was a tenth of a turn's garbage. A full log moves
// into an array twice its bound, so the oldest event is dropped by slicing
// and the log is copied once per r.max events, not at every event.
func (r *run) regrow() []agent.Event {
	n := len(r.events)
	size := 2 * n
	switch {
	case n == 0 && r.sizeHint != nil:
		hint := int(r.sizeHint.Load())
		size = hint + hint/8
	case n >= r.max:
		size = 2 * r.max
	}
	size = min(max(size, 8), 2*r.max)
	keep := r.events[max(0, n-r.max+1):]
	next := make([]agent.Event, len(keep), max(size, len(keep)+1))
	copy(next, keep)
	return next
}

// since returns the events after seq after, a channel closed on the next
// change, and whether the run has ended (then the events are the last).
// Events dropped from the bounded log are skipped.
func (r *run) since(after int) ([]agent.Event, <-chan struct{}, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Numbers may have gaps (a run resumed on another replica numbers on
	// from further up): search, do not index.
	start := sort.Search(len(r.events), func(i int) bool { return r.events[i].Seq > after })
	// No copy: an event is never changed once in the log, and an append
	// writes past the end (the capacity is clipped, so not into the result).
	n := len(r.events)
	return r.events[start:n:n], r.notify, r.life.State().Ended()
}

// isFinished reports whether the run has ended.
func (r *run) isFinished() bool { return r.state().Ended() }

// result returns how the run ended (valid once finished): its status, its
// error, and whether the server's shutdown stopped it.
func (r *run) result() (agent.RunStatus, error, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, r.err, r.cause == endedByShutdown
}

// retained reports whether the run has finished and how many events it
// keeps.
func (r *run) retained() (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.life.State() == lifecycle.Finished, len(r.events)
}

// noEvents reports whether r has emitted nothing yet in this process
// (a run recovered from the queue numbers on from its earlier attempts'
// events, so its sequence number does not say).
func (r *run) noEvents() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events) == 0
}

// result is what the run's record keeps for a repeated Chat Completions
// request: the answer as the first request got it, or its failure when
// the server was at fault. msg is the client's message of runErr.
func (r *run) recordResult(s *Server, status agent.RunStatus, runErr error, msg string, shutdown bool) *runResult {
	if r.chat == nil {
		return nil
	}
	if runErr != nil && !answerable(runErr) {
		st, _, code, _ := apierror.Status(runErr)
		return &runResult{Failure: &runFailure{Status: st, Code: code, Message: msg}}
	}
	rd := r.chat
	content := rd.content.String()
	if runErr != nil {
		content = joinAnswer(content, msg)
	}
	if rd.approval != nil && status == agent.RunInterrupted {
		content += approvalText(rd.approval, approvalToken(ownerKey(r.Owner), r.Thread, *rd.approval), rd.content.Len() > 0)
	}
	content += endNote(status, shutdown)
	u := rd.usage
	return &runResult{Content: content, Reasoning: rd.reasoning.String(), Usage: &u}
}

// joinAnswer appends a closing sentence to an answer's text.
func joinAnswer(content, sentence string) string {
	if content == "" {
		return sentence
	}
	return content + "\n\n" + sentence
}

func (r *run) info() native.RunInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	ri := native.RunInfo{ID: r.ID, Thread: r.ClientThread, Started: r.Started, Finished: r.life.State().Ended(), Status: r.status, LastSeq: r.lastSeq}
	if r.err != nil {
		ri.Error = r.err.Error()
	}
	return ri
}

// runManager starts runs, enforces per-principal concurrency and one active
// run per thread, and keeps recent runs for reconnection. Every move of a
// run's lifecycle goes through fire.
type runManager struct {
	s *Server

	base     context.Context
	stopBase context.CancelFunc
	// calls owns the goroutines of the runs' agent calls (execute).
	calls *crew
	// live counts the runs this process has to end: accepted, running,
	// fenced or parked here (Shutdown waits for them).
	live tally

	mu     sync.Mutex
	closed bool
	runs   map[string]*run
	order  []*run // runs, oldest first, for eviction
	// logSize is the length of the last finished run's event log, the
	// first size of the next one's (run.regrow).
	logSize  atomic.Int64
	active   map[string]int
	byThread map[string]*run
	// room is closed when a run ends (waitRoom), made again on demand.
	room chan struct{}
}

func newRunManager(s *Server) *runManager {
	base, stop := context.WithCancel(context.Background())
	return &runManager{s: s, base: base, stopBase: stop, calls: newCrew(), runs: map[string]*run{}, active: map[string]int{}, byThread: map[string]*run{}}
}

// ownedHere reports whether a run in state st is this process's to end.
func ownedHere(st lifecycle.State) bool {
	switch st {
	case lifecycle.Accepted, lifecycle.Running, lifecycle.Fenced, lifecycle.Parked:
		return true
	}
	return false
}

// fireLocked moves r by t (r.mu held), counting the runs this process has
// to end. A move the lifecycle does not have changes nothing and is
// returned: for two events racing to move a run (a parked run's timer and
// its cancellation), the one that loses.
func (m *runManager) fireLocked(r *run, t lifecycle.Trigger) error {
	from := r.life.State()
	if err := r.life.Fire(t); err != nil {
		return err
	}
	switch to := r.life.State(); {
	case !ownedHere(from) && ownedHere(to):
		m.live.add()
	case ownedHere(from) && !ownedHere(to):
		m.live.done()
	}
	return nil
}

// fire is fireLocked taking r.mu.
func (m *runManager) fire(r *run, t lifecycle.Trigger) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return m.fireLocked(r, t)
}

// must is fire for a move that cannot be refused; a refusal is a bug,
// logged.
func (m *runManager) must(r *run, t lifecycle.Trigger) {
	if err := m.fire(r, t); err != nil {
		m.s.cfg.Logger.Error("run lifecycle", "run", r.ID, "error", err)
	}
}

// reserve registers a run of sp (limits and one run per thread checked)
// without starting it: accepted; launch starts it, unreserve abandons it.
func (m *runManager) reserve(sp runSpec) (*run, error) {
	c := sp.c
	limited := sp.origin == fromRequest // a recovered run was counted when it was asked for
	limit := c.Principal.MaxConcurrentRuns
	if limit == 0 {
		limit = m.s.cfg.MaxConcurrentRuns
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, &apierror.RequestError{Kind: apierror.ErrShuttingDown, Message: "the server is shutting down"}
	}
	if r, busy := m.byThread[sp.thread]; busy {
		return nil, &apierror.RequestError{Kind: apierror.ErrRunInProgress, Message: "run " + r.ID + " is still running on this thread"}
	}
	if r, ok := m.runs[sp.id]; ok && r.state() == lifecycle.Parked {
		// Its own record taken over when its retry is due: the parked run
		// goes on (launch resumes it), admitted before.
		m.byThread[sp.thread] = r
		return r, nil
	}
	if limited && m.active[c.key()] >= limit {
		return nil, &apierror.RequestError{Kind: apierror.ErrTooManyRuns, Message: "too many concurrent runs for this API key; try again later"}
	}
	if limited && m.s.cfg.MaxTotalRuns > 0 && len(m.byThread) >= m.s.cfg.MaxTotalRuns {
		return nil, &apierror.RequestError{Kind: apierror.ErrTooManyRuns, Message: "the server runs as many runs as it may; try again later"}
	}
	// The run's context lives as long as the run, across the agent calls
	// of a parked run; each call has the turn's time limit (execute).
	ctx, cancel := context.WithCancel(agent.WithTraceContext(m.base, c.Trace))
	r := &run{ID: sp.id, Thread: sp.thread, ClientThread: sp.clientThread, Owner: c, origin: sp.origin,
		Started: cmp.Or(sp.started, m.s.cfg.Now()), ctx: ctx, cancel: cancel, notify: make(chan struct{}), begun: make(chan struct{}), max: m.s.cfg.EventLogSize, sizeHint: &m.logSize,
		detachGrace: m.s.cfg.DetachGrace}
	if sp.chat {
		r.chat = &chatRenderer{}
	}
	if strings.HasPrefix(sp.key, implicitKeyPrefix) {
		r.implicitKey = sp.key
	}
	if sp.kind == kindAnswer && sp.answer != nil {
		r.answering, r.beside = sp.answer.ApprovalID, sp.beside
	}
	if limited {
		r.countedAs = c.key()
		m.active[r.countedAs]++
	}
	m.must(r, lifecycle.Accept)
	m.byThread[sp.thread] = r
	m.runs[r.ID] = r
	m.order = append(m.order, r)
	return r, nil
}

// unreserve abandons an accepted run that did not start.
func (m *runManager) unreserve(r *run) {
	m.mu.Lock()
	m.release(r)
	if m.runs[r.ID] == r {
		delete(m.runs, r.ID)
	}
	m.must(r, lifecycle.Abandon)
	m.mu.Unlock()
	r.cancel()
}

// release frees r's place in the limits and on its thread (m.mu held).
func (m *runManager) release(r *run) {
	if r.countedAs != "" {
		m.active[r.countedAs]--
		if m.active[r.countedAs] <= 0 {
			delete(m.active, r.countedAs)
		}
	}
	if m.byThread[r.Thread] == r {
		delete(m.byThread, r.Thread)
	}
	m.signalRoom()
}

// Finished runs are kept for reconnecting clients, the newest first, up to
// keepRuns runs holding at most keepEvents events together.
const (
	keepRuns   = 256
	keepEvents = 64 * 1024
)

// evictAfterEnd evicts what a run's end put beyond the retention. Only an
// end changes which runs are kept, so nothing else evicts.
func (m *runManager) evictAfterEnd() {
	m.mu.Lock()
	m.evict()
	m.mu.Unlock()
}

// forget drops an ended run (m.mu held); evict then takes it out of
// m.order.
func (m *runManager) forget(r *run) {
	if m.runs[r.ID] == r {
		delete(m.runs, r.ID)
	}
	m.must(r, lifecycle.Forget)
}

// evict forgets the oldest finished runs beyond the retention (m.mu
// held). It compacts m.order in place, newest first from the end, and
// holds the runs themselves: it runs at every end, over every run kept,
// and a new slice or a map lookup per run each time was a tenth of a
// turn's garbage and 4 % of its CPU.
func (m *runManager) evict() {
	events, finished := 0, 0
	w := len(m.order) // m.order[w:] holds the runs kept, oldest first
	for i := len(m.order) - 1; i >= 0; i-- {
		r := m.order[i]
		done, n := r.retained()
		if done {
			finished++
			events += n
			if finished > keepRuns || events > keepEvents {
				m.forget(r)
				continue
			}
		} else if r.state() == lifecycle.Forgotten {
			continue
		}
		w--
		m.order[w] = r
	}
	clear(m.order[:w]) // no stale runs pinned
	m.order = m.order[w:]
}

// finish ends r, once: how it ended (its error, and why: cause) and
// whatever status its events did not say.
func (m *runManager) finish(r *run, err error, cause endCause) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ferr := m.fireLocked(r, lifecycle.End); ferr != nil {
		m.s.cfg.Logger.Error("run lifecycle", "run", r.ID, "error", ferr)
		return
	}
	r.err, r.cause = err, cause
	if r.sizeHint != nil {
		r.sizeHint.Store(int64(len(r.events)))
	}
	if err != nil && r.status == "" {
		r.status = agent.RunFailed
	}
	r.markBegun()
	r.wake()
}

// launch starts an accepted run, or a parked one taken over when due.
func (m *runManager) launch(r *run, fn func(ctx context.Context) iter.Seq2[agent.Event, error]) {
	t := lifecycle.Launch
	if r.state() == lifecycle.Parked {
		t = lifecycle.Resume
	}
	m.must(r, t)
	if !m.calls.Go(func(context.Context) { m.execute(r.ctx, r, fn) }) {
		// Shut down between the two: it ends as a shutdown would end it.
		m.finish(r, nil, endedByShutdown)
	}
}

// execute runs r's agent call on the run crew's goroutine, and ends the
// run as the call ended: parked (its retry wait went back to the
// queue), handed back to the queue (a recovered run whose thread another
// process holds), or finished — its end audited, its record written, its
// thread freed before it shows as finished.
func (m *runManager) execute(rctx context.Context, r *run, fn func(ctx context.Context) iter.Seq2[agent.Event, error]) {
	ctx, cancelCall := context.WithTimeout(rctx, m.s.cfg.TurnTimeout)
	defer cancelCall()
	kept := false // the run goes on without this call (parked, handed back)
	defer func() {
		if !kept {
			r.cancel()
		}
	}()
	r.parkUntil = time.Time{}
	m.shareWithReplicas(ctx, r)
	aud := newAuditor(m.s, r)
	cctx := agent.WithRunID(ctx, r.ID)
	if m.s.cfg.ParkAfter > 0 {
		cctx = agent.WithParkAfter(cctx, m.s.cfg.ParkAfter)
	}
	runErr := m.consume(cctx, r, aud, fn)
	runErr = m.waitOutHeldThread(ctx, cctx, r, aud, fn, runErr)
	if r.consumed != nil {
		close(r.consumed)
	}
	if !r.parkUntil.IsZero() && runErr == nil && ctx.Err() == nil {
		aud.finish(ctx, agent.RunWaiting, m.s.cfg.Now())
		kept = true
		m.s.park(r)
		return
	}
	shutdown := m.base.Err() != nil
	runErr = m.endedBy(ctx, r, runErr, shutdown)
	status := m.settle(ctx, r, aud, runErr, shutdown)
	// The thread is free before the run shows as finished: a client that
	// saw it end may start the next run at once.
	neverRan := r.origin.recovered() && isThreadBusy(runErr) && r.noEvents()
	m.mu.Lock()
	m.release(r)
	m.mu.Unlock()
	if m.s.cluster == nil && !shutdown {
		m.s.afterRun(r.Thread) // a queued answer goes on (answers.go)
	}
	if neverRan && m.s.cluster != nil && !shutdown {
		kept = true // r.ctx stays for the tail, which ends it
		m.handBack(r)
		return
	}
	cause := endedHere
	if shutdown {
		cause = endedByShutdown
	}
	m.finish(r, runErr, cause)
	if neverRan {
		// Another process holds the thread: this was never a run here,
		// and its record stays for another attempt.
		m.mu.Lock()
		m.forget(r)
		m.mu.Unlock()
	}
	m.evictAfterEnd()
	log := m.s.cfg.Logger.With("run", r.ID, "thread", r.Thread, "principal", r.Owner.Principal.Name, "tenant", r.Owner.Principal.Tenant)
	if runErr != nil {
		log.Error("run failed", "error", runErr)
	} else {
		log.Info("run finished", "status", status, "shutdown", shutdown)
	}
}

// shareWithReplicas makes a run of a process with replicas theirs to
// follow: its lease held, its events published, numbered on from those
// the replica that ran it before stored.
func (m *runManager) shareWithReplicas(ctx context.Context, r *run) {
	if m.s.cluster == nil {
		return
	}
	if r.origin == fromRecord {
		if last := m.s.lastEventSeq(ctx, r.ID); last > 0 {
			// Events the replica that ran it before sent to its clients
			// but did not store yet are skipped over, so a client
			// reconnecting with the last id it saw gets this attempt's
			// events.
			r.mu.Lock()
			r.lastSeq = max(r.lastSeq, last+resumeSeqGap)
			r.mu.Unlock()
		}
	}
	r.consumed = make(chan struct{})
	m.s.background.Go(func(context.Context) { m.s.holdLease(r) })
	r.pub = m.s.newPublisher(r)
}

// waitOutHeldThread calls fn again while another replica's lease holds
// the thread (it runs a turn there, died during one, or checks the thread
// for recovery a moment) and nothing ran: the run starts once the thread
// is free instead of failing — looking again soon (a live holder releases
// it when its turn ends), at the latest when the holder's lease expires.
// A recovered run looks for a third of a TTL, then goes back to the queue
// (finishRecord), holding no goroutine longer. It returns the last call's
// error.
func (m *runManager) waitOutHeldThread(ctx, cctx context.Context, r *run, aud *auditor, fn func(ctx context.Context) iter.Seq2[agent.Event, error], runErr error) error {
	var waited time.Duration
	for backoff := 50 * time.Millisecond; m.s.cluster != nil && r.noEvents() && ctx.Err() == nil; backoff *= 2 {
		lh := (*agent.LeaseHeldError)(nil)
		if !errors.As(runErr, &lh) {
			break
		}
		wait := min(backoff, lh.RetryAfter(m.s.cfg.Now())+10*time.Millisecond)
		if r.origin.recovered() {
			if waited >= m.s.cluster.ttl/3 {
				break
			}
			wait = min(wait, m.s.cluster.ttl/3-waited)
		}
		waited += wait
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		runErr = m.consume(cctx, r, aud, fn)
	}
	return runErr
}

// endedBy is the run's error as its end tells it: none for a run canceled
// by a client, a cancel request or the shutdown (it stopped at a
// checkpoint and can be resumed; its done event is logged here), a
// TurnTimeoutError for one past the turn's time limit.
func (m *runManager) endedBy(ctx context.Context, r *run, runErr error, shutdown bool) error {
	switch {
	case runErr != nil && errors.Is(runErr, context.Canceled) && ctx.Err() != nil:
		ev := r.append(agent.Event{Type: agent.EventDone, Status: agent.RunCanceled, Thread: r.Thread, Time: m.s.cfg.Now()})
		if r.pub != nil && !shutdown && r.state() != lifecycle.Fenced {
			r.pub.add(ev)
		}
		return nil
	case runErr != nil && errors.Is(runErr, context.DeadlineExceeded) && ctx.Err() != nil:
		return &apierror.TurnTimeoutError{Limit: m.s.cfg.TurnTimeout, Err: runErr}
	}
	return runErr
}

// settle audits the run's end and writes its record, before anyone sees
// it end, so a client that saw it end finds every attempt in the log and
// a repeated request finds the result; with replicas, after its events
// are stored, and then the replicas following it are told. It returns the
// status the run ended with (the one finish gives it).
func (m *runManager) settle(ctx context.Context, r *run, aud *auditor, runErr error, shutdown bool) agent.RunStatus {
	endStatus, _, _ := r.result()
	aud.finish(ctx, endStatus, m.s.cfg.Now())
	status := endStatus
	if status == "" && runErr != nil {
		status = agent.RunFailed
	}
	if status == "" {
		status = agent.RunCanceled
	}
	if r.pub != nil {
		r.pub.close()
	}
	m.s.finishRecord(r, status, runErr, shutdown)
	if m.s.cluster != nil {
		m.s.signal(runstore.SignalEvents, r.ID)
	}
	return status
}

// handBack puts a recovered run that found its thread held elsewhere back
// in the queue (finishRecord did): whoever runs it next, the requests
// following it here follow it from the store, as a parked run's do,
// instead of seeing it fail.
func (m *runManager) handBack(r *run) {
	r.mu.Lock()
	_ = m.fireLocked(r, lifecycle.HandBack)
	r.markBegun()
	r.mu.Unlock()
	m.s.startTail(r)
	m.s.cfg.Logger.Info("recovered run gave its held thread back to the queue", "run", r.ID, "thread", r.Thread)
}

// consume drains the run's events into its log. A panic of the run (the
// agent's code outside its nodes, which the engine recovers itself) ends
// the run as failed instead of the process.
func (m *runManager) consume(ctx context.Context, r *run, aud *auditor, fn func(ctx context.Context) iter.Seq2[agent.Event, error]) (runErr error) {
	defer func() {
		if v := recover(); v != nil {
			m.s.cfg.Logger.Error("run panicked", "run", r.ID, "thread", r.Thread, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			runErr = fmt.Errorf("internal error: the run stopped (the server logged the details)")
		}
	}()
	for ev, err := range fn(ctx) {
		if err != nil {
			return err
		}
		if ev.Time.IsZero() {
			ev.Time = m.s.cfg.Now()
		}
		if ev.Type == agent.EventAudit {
			// Stored durably by the agent already; copied to the
			// server's audit log. Clients see the outcomes only, without
			// who or the approval id (outcomes.go).
			aud.action(ctx, ev.Audit)
			if ev.Audit = publicOutcome(ev.Audit); ev.Audit == nil {
				continue
			}
		}
		if ev.Type == agent.EventDone && ev.Status == agent.RunWaiting {
			// Not the run's end: it goes on at NotBefore (park.go), and
			// its followers keep following.
			r.parkUntil = ev.NotBefore
			continue
		}
		aud.observe(ctx, ev)
		if r.chat != nil {
			r.chat.render(ev)
		}
		ev = r.append(ev)
		if r.pub != nil {
			r.pub.add(ev)
		}
	}
	return nil
}

// get returns a run if c owns it.
func (m *runManager) get(c caller, id string) (*run, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok || ownerKey(r.Owner) != ownerKey(c) {
		return nil, false
	}
	return r, true
}

// parked reports whether the run of id is parked in this process.
func (m *runManager) parked(id string) bool {
	r, ok := m.byID(id)
	return ok && r.state() == lifecycle.Parked
}

// byID returns a run of this process, finished or not.
func (m *runManager) byID(id string) (*run, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	return r, ok
}

// signalRoom wakes those waiting for room (m.mu held).
func (m *runManager) signalRoom() {
	if m.room != nil {
		close(m.room)
		m.room = nil
	}
}

// roomSignal returns a channel closed when a run ends.
func (m *runManager) roomSignal() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.room == nil {
		m.room = make(chan struct{})
	}
	return m.room
}

// resumeSeqGap is how far a run resumed on another replica numbers its
// events beyond the last stored one (see execute).
const resumeSeqGap = 1000

// waitRoom waits until fewer than limit runs go on, or ctx ends.
func (m *runManager) waitRoom(ctx context.Context, limit int) error {
	for {
		m.mu.Lock()
		if len(m.byThread) < limit {
			m.mu.Unlock()
			return nil
		}
		if m.room == nil {
			m.room = make(chan struct{})
		}
		ch := m.room
		m.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// activeOn returns the running run of an internal thread.
func (m *runManager) activeOn(thread string) (*run, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.byThread[thread]
	return r, ok
}

// refuse makes start refuse new runs.
func (m *runManager) refuse() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
}

// close refuses new runs and cancels the running ones (they stop at their
// next checkpoint) and the parked ones; wait for them with wait.
func (m *runManager) close() {
	m.refuse()
	m.stopBase()
}

// wait waits until every run this process has to end has ended.
func (m *runManager) wait(ctx context.Context) error { return m.live.wait(ctx) }

// stop waits for the goroutines of the runs' agent calls to return
// (close and wait first).
func (m *runManager) stop(ctx context.Context) error { return m.calls.stop(ctx) }
