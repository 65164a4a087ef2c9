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
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/state"
)

// run is one execution of a turn (or a resume) on a thread. It runs in its
// own goroutine, detached from the request that started it, and keeps a
// bounded log of its events so streams can follow it and reconnect.
type run struct {
	ID           string
	Thread       string // internal id
	ClientThread string
	Owner        caller
	Started      time.Time

	cancel context.CancelFunc
	ctx    context.Context
	// limited: counted against the owner's and the server's run limits.
	limited bool
	// recovering: a run RecoverRuns started.
	recovering bool
	// recorded: the run's record existed before it started here (a
	// recovered or claimed run); remote: a mirror of a run another replica
	// runs (replicas.go); fenced: this replica lost the run's lease.
	recorded bool
	remote   atomic.Bool
	fenced   atomic.Bool
	// ended: the run's record ended (a mirror saw it terminal), so
	// canceling the mirror stops nothing elsewhere.
	ended atomic.Bool
	// parkUntil is set when the run's agent call ended parked (a retry
	// wait longer than Config.ParkAfter): it goes on then (park.go).
	parkUntil time.Time
	// dropped: the manager forgot the run (guarded by runManager.mu).
	dropped bool
	// consumed is closed when the run has made its last event: its lease
	// is no longer renewed (its record is written next).
	consumed chan struct{}
	// pub stores the events for other replicas (nil without a cluster).
	pub *publisher
	// chat renders the events as the Chat Completions answer the run's
	// record keeps for repeated requests (nil for other protocols).
	chat *chatRenderer

	mu      sync.Mutex
	events  []agent.Event // ascending by Seq
	lastSeq int
	// sizeHint is the length of the last finished run's log, shared by
	// the manager's runs (regrow).
	sizeHint *atomic.Int64
	notify   chan struct{} // closed and replaced on every change
	finished bool
	status   agent.RunStatus
	err      error
	max      int
	// shutdown is set when the run was stopped by a server shutdown.
	shutdown bool
	// followers counts the requests answering with this run that cancel
	// it when they leave (the one that started it, repeats that joined).
	followers int
	// begun is closed at the run's first event or its end.
	begun chan struct{}
	// handedBack: a recovered run whose thread stayed held went back to
	// the queue; its followers here follow it from the store (began says
	// it did not get going here).
	handedBack bool
	// detach cancels the run DetachGrace after its last follower left.
	detach *time.Timer
	// followedElsewhere: a request on another replica follows the run
	// (SignalFollowed), so it goes on when the followers here leave.
	followedElsewhere bool
	detachGrace       time.Duration
	// key is the run's record key when it was derived from the request
	// (a repeat is a retry only until an answer was delivered), and
	// recStatus the status finishRecord wrote.
	implicitKey string
	recStatus   checkpoint.RunStatus
	// answering is the approval an answer's run carries out, beside the
	// approvals pending with it (storedAnswer.Beside), for an answer to
	// one of them that arrives before the run's record is read.
	answering string
	beside    []string
}

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
	return !(r.handedBack || r.finished && len(r.events) == 0 && isThreadBusy(r.err))
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

// keepForRemote is SignalFollowed for a run of this process: it is not
// canceled when its followers here have gone.
func (r *run) keepForRemote() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.followedElsewhere = true
	if r.detach != nil {
		r.detach.Stop()
		r.detach = nil
	}
}

// leave is a joined request going away. When the last one has gone, the
// run is canceled after Config.DetachGrace unless a repeat of the request
// (an SDK retrying after its timeout) joins it meanwhile.
func (r *run) leave() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.followers--
	if r.followers > 0 || r.detach != nil || r.followedElsewhere {
		return
	}
	if r.detachGrace <= 0 {
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

func (r *run) finish(err error, shutdown bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finished, r.err, r.shutdown = true, err, shutdown
	if r.sizeHint != nil {
		r.sizeHint.Store(int64(len(r.events)))
	}
	if err != nil && r.status == "" {
		r.status = agent.RunFailed
	}
	r.markBegun()
	close(r.notify)
	r.notify = make(chan struct{})
}

// since returns the events after seq after, a channel closed on the next
// change, and whether the run has finished (then the events are the last).
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
	return r.events[start:n:n], r.notify, r.finished
}

// isFinished reports whether the run has ended.
func (r *run) isFinished() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.finished
}

// result returns how the run ended (valid once finished).
func (r *run) result() (agent.RunStatus, error, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, r.err, r.shutdown
}

// retained reports whether the run has finished and how many events it
// keeps.
func (r *run) retained() (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.finished, len(r.events)
}

// result is what the run's record keeps for a repeated Chat Completions
// request: the answer as the first request got it, or its failure when
// the server was at fault. msg is the client's message of runErr.
func (r *run) recordResult(s *Server, status agent.RunStatus, runErr error, msg string, shutdown bool) *runResult {
	if r.chat == nil {
		return nil
	}
	if runErr != nil && !answerable(runErr) {
		st, _, code, _ := errorStatus(runErr)
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

// runInfo is the JSON view of a run.
type runInfo struct {
	ID       string          `json:"id"`
	Thread   string          `json:"thread_id"`
	Started  time.Time       `json:"started_at"`
	Finished bool            `json:"finished"`
	Status   agent.RunStatus `json:"status,omitempty"`
	Error    string          `json:"error,omitempty"`
	LastSeq  int             `json:"last_seq"`
}

func (r *run) info() runInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	ri := runInfo{ID: r.ID, Thread: r.ClientThread, Started: r.Started, Finished: r.finished, Status: r.status, LastSeq: r.lastSeq}
	if r.err != nil {
		ri.Error = r.err.Error()
	}
	return ri
}

// runManager starts runs, enforces per-principal concurrency and one active
// run per thread, and keeps recent runs for reconnection.
type runManager struct {
	s *Server

	base     context.Context
	stopBase context.CancelFunc
	wg       sync.WaitGroup

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
	return &runManager{s: s, base: base, stopBase: stop, runs: map[string]*run{}, active: map[string]int{}, byThread: map[string]*run{}}
}

// reserve registers a run of sp (limits and one run per thread checked)
// without starting it; launch starts it, unreserve drops it.
func (m *runManager) reserve(sp runSpec) (*run, error) {
	c := sp.c
	limited := !sp.recovering
	limit := c.Principal.MaxConcurrentRuns
	if limit == 0 {
		limit = m.s.cfg.MaxConcurrentRuns
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, &RequestError{Kind: ErrShuttingDown, Message: "the server is shutting down"}
	}
	if r, busy := m.byThread[sp.thread]; busy {
		return nil, &RequestError{Kind: ErrRunInProgress, Message: "run " + r.ID + " is still running on this thread"}
	}
	if limited && m.active[c.key()] >= limit {
		return nil, &RequestError{Kind: ErrTooManyRuns, Message: "too many concurrent runs for this API key; try again later"}
	}
	if limited && m.s.cfg.MaxTotalRuns > 0 && len(m.byThread) >= m.s.cfg.MaxTotalRuns {
		return nil, &RequestError{Kind: ErrTooManyRuns, Message: "the server runs as many runs as it may; try again later"}
	}
	// The run's context lives as long as the run, across the agent calls
	// of a parked run; each call has the turn's time limit (execute).
	ctx, cancel := context.WithCancel(agent.WithTraceContext(m.base, c.Trace))
	r := &run{ID: sp.id, Thread: sp.thread, ClientThread: sp.clientThread, Owner: c, limited: limited, recovering: sp.recovering, recorded: sp.recorded,
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
		m.active[c.key()]++
	}
	m.byThread[sp.thread] = r
	m.runs[r.ID] = r
	m.order = append(m.order, r)
	m.wg.Add(1)
	return r, nil
}

// unreserve drops a reserved run that did not start.
func (m *runManager) unreserve(r *run) {
	m.mu.Lock()
	m.release(r)
	m.drop(r)
	m.mu.Unlock()
	r.cancel()
	m.wg.Done()
}

// release frees r's place in the limits and on its thread (m.mu held).
func (m *runManager) release(r *run) {
	if r.limited {
		m.active[r.Owner.key()]--
		if m.active[r.Owner.key()] <= 0 {
			delete(m.active, r.Owner.key())
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

// drop forgets r (m.mu held); evict then takes it out of m.order.
func (m *runManager) drop(r *run) {
	if m.runs[r.ID] == r {
		delete(m.runs, r.ID)
	}
	r.dropped = true
}

// evict drops the oldest finished runs beyond the retention (m.mu held).
// It compacts m.order in place, newest first from the end, and holds the
// runs themselves: it runs at every end, over every run kept, and a new
// slice or a map lookup per run each time was a tenth of a turn's garbage
// and 4 % of its CPU.
func (m *runManager) evict() {
	events, finished := 0, 0
	w := len(m.order) // m.order[w:] holds the runs kept, oldest first
	for i := len(m.order) - 1; i >= 0; i-- {
		r := m.order[i]
		if r.dropped {
			continue
		}
		if done, n := r.retained(); done {
			finished++
			events += n
			if finished > keepRuns || events > keepEvents {
				m.drop(r)
				continue
			}
		}
		w--
		m.order[w] = r
	}
	clear(m.order[:w]) // no stale runs pinned
	m.order = m.order[w:]
}

// noEvents reports whether r has emitted nothing yet in this process
// (a run recovered from the queue numbers on from its earlier attempts'
// events, so its sequence number does not say).
func (r *run) noEvents() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events) == 0
}

// launch starts a reserved run.
func (m *runManager) launch(r *run, fn func(ctx context.Context) iter.Seq2[agent.Event, error]) {
	go m.execute(r.ctx, r, fn)
}

func (m *runManager) execute(rctx context.Context, r *run, fn func(ctx context.Context) iter.Seq2[agent.Event, error]) {
	defer m.wg.Done()
	ctx, cancelCall := context.WithTimeout(rctx, m.s.cfg.TurnTimeout)
	defer cancelCall()
	parked := false
	defer func() {
		if !parked {
			r.cancel()
		}
	}()
	r.parkUntil = time.Time{}
	if m.s.cluster != nil {
		if r.recorded {
			if last := m.s.lastEventSeq(ctx, r.ID); last > 0 {
				// Events the replica that ran it before sent to its
				// clients but did not store yet are skipped over, so a
				// client reconnecting with the last id it saw gets this
				// attempt's events.
				r.lastSeq = last + resumeSeqGap
			}
		}
		r.consumed = make(chan struct{})
		go m.s.holdLease(r)
		r.pub = m.s.newPublisher(r)
	}
	aud := newAuditor(m.s, r)
	cctx := agent.WithRunID(ctx, r.ID)
	if m.s.cfg.ParkAfter > 0 {
		cctx = graph.WithParkAfter(cctx, m.s.cfg.ParkAfter)
	}
	runErr := m.consume(cctx, r, aud, fn)
	var waited time.Duration
	for backoff := 50 * time.Millisecond; m.s.cluster != nil && r.noEvents() && ctx.Err() == nil; backoff *= 2 {
		// Another replica's lease holds the thread (it runs a turn there,
		// died during one, or checks the thread for recovery a moment):
		// nothing ran, so the run starts again once the thread is free
		// instead of failing — looking again soon (a live holder releases
		// it when its turn ends), at the latest when the holder's lease
		// expires. A recovered run looks for a third of a TTL, then goes
		// back to the queue (finishRecord), holding no goroutine longer.
		lh := (*checkpoint.LeaseHeldError)(nil)
		if !errors.As(runErr, &lh) {
			break
		}
		wait := min(backoff, lh.RetryAfter(m.s.cfg.Now())+10*time.Millisecond)
		if r.recovering {
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
	if r.consumed != nil {
		close(r.consumed)
	}
	if !r.parkUntil.IsZero() && runErr == nil && ctx.Err() == nil {
		aud.finish(ctx, agent.RunWaiting, m.s.cfg.Now())
		parked = true
		m.s.park(r)
		return
	}
	shutdown := m.base.Err() != nil
	switch {
	case runErr != nil && errors.Is(runErr, context.Canceled) && ctx.Err() != nil:
		// Canceled by a client, a cancel request or the shutdown: the run
		// stopped at a checkpoint and can be resumed; that is no failure.
		runErr = nil
		ev := r.append(agent.Event{Type: agent.EventDone, Status: agent.RunCanceled, Thread: r.Thread, Time: m.s.cfg.Now()})
		if r.pub != nil && !shutdown && !r.fenced.Load() {
			r.pub.add(ev)
		}
	case runErr != nil && errors.Is(runErr, context.DeadlineExceeded) && ctx.Err() != nil:
		runErr = &TurnTimeoutError{Limit: m.s.cfg.TurnTimeout, Err: runErr}
	}
	// Audit before the run shows as finished, so a client that saw it end
	// finds every attempt in the log.
	endStatus, _, _ := r.result()
	aud.finish(ctx, endStatus, m.s.cfg.Now())
	// The same status r.finish gives the run.
	status := endStatus
	if status == "" && runErr != nil {
		status = agent.RunFailed
	}
	if status == "" {
		status = agent.RunCanceled
	}
	// The record says how the run ended before anyone sees it end, so a
	// repeated request finds the result; with replicas, after its events
	// are stored, and then the replicas following it are told.
	if r.pub != nil {
		r.pub.close()
	}
	m.s.finishRecord(r, status, runErr, shutdown)
	if m.s.cluster != nil {
		m.s.signal(checkpoint.SignalEvents, r.ID)
	}
	// The thread is free before the run shows as finished: a client that
	// saw it end may start the next run at once.
	noEvents := r.noEvents()
	neverRan := r.recovering && isThreadBusy(runErr) && noEvents
	handBack := neverRan && m.s.cluster != nil && !shutdown
	m.mu.Lock()
	m.release(r)
	if neverRan && !handBack {
		// Another process holds the thread: this was never a run here.
		m.drop(r)
	}
	m.mu.Unlock()
	if m.s.cluster == nil && !shutdown {
		m.s.afterRun(r.Thread) // a queued answer goes on (answers.go)
	}
	if handBack {
		// Back in the queue (finishRecord): whoever runs it next, the
		// requests following it here follow it from the store, as a
		// parked run's do, instead of seeing it fail.
		r.mu.Lock()
		r.handedBack = true
		r.markBegun()
		r.mu.Unlock()
		r.remote.Store(true)
		parked = true // r.ctx stays for the tail, which ends it
		go m.s.tail(r)
		m.s.cfg.Logger.Info("recovered run gave its held thread back to the queue", "run", r.ID, "thread", r.Thread)
		return
	}
	r.finish(runErr, shutdown)
	m.evictAfterEnd()
	log := m.s.cfg.Logger.With("run", r.ID, "thread", r.Thread, "principal", r.Owner.Principal.Name, "tenant", r.Owner.Principal.Tenant)
	if runErr != nil {
		log.Error("run failed", "error", runErr)
	} else {
		log.Info("run finished", "status", status, "shutdown", shutdown)
	}
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
// next checkpoint); wait for them with wait.
func (m *runManager) close() {
	m.refuse()
	m.stopBase()
}

func (m *runManager) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// auditor turns step events into audit records (agent.AuditRecord, event
// agent.AuditStep): one per attempt of a capability (retries and fallbacks
// included), written when the attempt ends, or when the run ends with the
// attempt still open (the run was canceled, stopped, or the capability
// asked for approval mid-way). It also copies the agent's own records of
// side-effecting attempts to the log, and gives a step record the outcome
// its attempt's ended record says.
type auditor struct {
	s    *Server
	r    *run
	plan *state.Plan
	open map[int]agent.Event // step index → its step_start
	// outcomes are the outcomes the agent recorded, by attempt.
	outcomes map[attemptKey]capabilities.Outcome
}

type attemptKey struct {
	step       int
	capability string
	attempt    int
}

func newAuditor(s *Server, r *run) *auditor {
	return &auditor{s: s, r: r, open: map[int]agent.Event{}, outcomes: map[attemptKey]capabilities.Outcome{}}
}

func (a *auditor) observe(ctx context.Context, ev agent.Event) {
	switch ev.Type {
	case agent.EventPlan:
		a.plan = ev.Plan
	case agent.EventStepStart:
		a.open[ev.Step] = ev
	case agent.EventDenied:
		// Not an execution: the capability was refused before it ran (the
		// principal may not use it, or the gate refused the change).
		// Audited so refusals can be reviewed.
		rec := a.record(ctx, ev)
		rec.Outcome, rec.Message = capabilities.OutcomeRefused, ev.Text
		a.write(ctx, rec)
	case agent.EventStepEnd:
		rec := a.record(ctx, ev)
		rec.Duration = ev.Duration
		if st, ok := a.open[ev.Step]; ok && rec.Duration == 0 {
			rec.Duration = ev.Time.Sub(st.Time)
		}
		delete(a.open, ev.Step)
		if ev.Err != "" {
			rec.Outcome, rec.Message = capabilities.OutcomeFailed, ev.Err
		}
		if o, ok := a.outcomes[attemptKey{ev.Step, ev.Capability, ev.Attempt}]; ok {
			rec.Outcome = o // the side-effecting attempt's own outcome
		}
		a.write(ctx, rec)
	}
}

// finish records the attempts still open when the run ended.
func (a *auditor) finish(ctx context.Context, status agent.RunStatus, now time.Time) {
	for _, st := range a.open {
		rec := a.record(ctx, st)
		rec.Time, rec.Duration = now, now.Sub(st.Time)
		rec.Reason, rec.Message = "canceled", "the run was canceled or stopped during this attempt; a resume settles it"
		if status == agent.RunInterrupted {
			rec.Reason, rec.Message = "interrupted", "the capability asked a human before it went on"
		}
		a.write(context.WithoutCancel(ctx), rec)
	}
	clear(a.open)
}

// record fills who, where, what and with which arguments for a step event.
func (a *auditor) record(ctx context.Context, ev agent.Event) agent.AuditRecord {
	rec := agent.AuditRecord{Event: agent.AuditStep, Time: ev.Time, Tenant: a.r.Owner.Principal.Tenant, Principal: a.r.Owner.Principal.Name,
		User: a.r.Owner.User, Thread: a.r.Thread, Run: a.r.ID, Capability: ev.Capability, Step: ev.Step, Attempt: ev.Attempt}
	if a.plan == nil {
		// A resumed run did not see the plan event: take the plan from
		// the checkpointed state.
		if st, _, err := a.s.cfg.Runner.State(context.WithoutCancel(ctx), a.r.Thread); err == nil {
			a.plan = st.Turn.Plan
		}
	}
	var args any
	if a.plan != nil {
		rec.Plan = a.plan.Number
	}
	if a.plan != nil && ev.Step >= 0 && ev.Step < len(a.plan.Steps) {
		st := a.plan.Steps[ev.Step]
		args = map[string]any{"parameters": st.Parameters, "inputs": st.Inputs}
		if rec.Capability == "" {
			rec.Capability = st.Effective()
		}
		if st.Capability != rec.Capability {
			rec.PlannedCapability = st.Capability // a fallback stood in
		}
	}
	rec.Digest = argsDigest(args)
	return rec
}

// action copies an audit record of a side-effecting attempt to the audit
// log, and keeps its outcome for the attempt's step record.
func (a *auditor) action(ctx context.Context, rec *agent.AuditRecord) {
	if rec == nil {
		return
	}
	if rec.Outcome != "" {
		a.outcomes[attemptKey{rec.Step, rec.Capability, rec.Attempt}] = rec.Outcome
	}
	a.write(context.WithoutCancel(ctx), *rec)
}

func (a *auditor) write(ctx context.Context, rec agent.AuditRecord) {
	if err := a.s.cfg.Audit.Record(ctx, rec); err != nil {
		a.s.cfg.Logger.Error("audit log write failed", "error", err, "run", a.r.ID)
	}
}
