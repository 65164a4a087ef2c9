package runs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/capgraph/capgraph/logging"
	"iter"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/crew"
	lifecycle "github.com/capgraph/capgraph/server/internal/run"
)

// Deps is what the manager needs from the server: its limits and clock,
// and the hooks that write a run's record and share it with replicas.
type Deps[D any] struct {
	Hooks  Hooks[D]
	Logger logging.Logger
	Now    func() time.Time
	// MaxConcurrentRuns is a principal's run limit when its Spec gives
	// none; MaxTotalRuns the process's (0: none).
	MaxConcurrentRuns int
	MaxTotalRuns      int
	// EventLogSize bounds a run's event log.
	EventLogSize int
	DetachGrace  time.Duration
	TurnTimeout  time.Duration
	// ParkAfter parks an agent call's retry wait longer than it (0: never).
	ParkAfter time.Duration
	// Replicas is set when the process shares its runs with others
	// through the store, whose leases live LeaseTTL.
	Replicas bool
	LeaseTTL time.Duration
}

// Hooks are the server's parts of a run's agent call: what watches its
// events, and what is done when it parks or ends.
type Hooks[D any] interface {
	// Begin is called as a run's agent call starts (its context ctx): it
	// prepares the run for the replicas and returns what watches the
	// call's events.
	Begin(ctx context.Context, r D) Observer
	// Park: the call ended parked until until; the run goes on then.
	Park(r D, until time.Time)
	// Settle writes how the run ended: before anyone sees it end, or on
	// one process just after (Run.Settled; see endThenSettle).
	Settle(r D, status agent.RunStatus, err error, shutdown bool)
	// ThreadFreed: a run on thread ended (one process, not shutting
	// down); what waits for the thread goes on.
	ThreadFreed(thread string)
	// HandedBack: a recovered run found its thread held elsewhere and
	// went back to the queue; the run follows it in the store.
	HandedBack(r D)
}

// Observer watches one agent call's events.
type Observer interface {
	// Action is an action the agent audited (stored by it already); it
	// returns what the run's clients see of it (nil: nothing).
	Action(ctx context.Context, rec *agent.AuditRecord) *agent.AuditRecord
	// Observe sees every other event before it is logged.
	Observe(ctx context.Context, ev agent.Event)
	// Logged sees each event once logged, numbered.
	Logged(ev agent.Event)
	// Finish: the call ended with status (RunWaiting when it parked).
	Finish(ctx context.Context, status agent.RunStatus, now time.Time)
}

// Spec is a run to register.
type Spec struct {
	ID, Thread, ClientThread string
	Origin                   Origin
	// Started is when the run was asked for (zero: now).
	Started time.Time
	// OwnerKey is who may see the run (Get); LimitKey whose run limits
	// count it, Limit that principal's (0: Deps.MaxConcurrentRuns).
	OwnerKey, LimitKey string
	Limit              int
	Trace              agent.TraceContext
	// Log names the run's owner in the log line of its end.
	Log []any
}

// Call is a run's agent call.
type Call func(ctx context.Context) iter.Seq2[agent.Event, error]

// Manager starts runs, enforces per-principal concurrency and one active
// run per thread, and keeps recent runs for reconnection. Every move of a
// run's lifecycle goes through Fire.
type Manager[D any] struct {
	d Deps[D]

	base     context.Context
	stopBase context.CancelFunc
	// calls owns the goroutines of the runs' agent calls (execute).
	calls *crew.Crew
	// live counts the runs this process has to end: accepted, running,
	// fenced or parked here (Shutdown waits for them).
	live crew.Tally

	mu     sync.Mutex
	closed bool
	runs   map[string]*Run[D]
	// ended holds the finished runs kept, in the order they ended, and
	// endedEvents their events (each as it ended): eviction takes the
	// oldest, whatever the number of live runs.
	ended       []*Run[D]
	endedEvents int
	endedKept   int // the runs of ended still kept (a run forgotten elsewhere stays in it, passed over)
	// logSize is the length of the last finished run's event log, the
	// first size of the next one's (Run.regrow).
	logSize  atomic.Int64
	active   map[string]int
	byThread map[string]*Run[D]
	// room is closed when a run ends (WaitRoom), made again on demand.
	room chan struct{}
}

// New returns a manager of the runs of one process.
func New[D any](d Deps[D]) *Manager[D] {
	base, stop := context.WithCancel(context.Background())
	return &Manager[D]{d: d, base: base, stopBase: stop, calls: crew.New(), runs: map[string]*Run[D]{}, active: map[string]int{}, byThread: map[string]*Run[D]{}}
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
func (m *Manager[D]) fireLocked(r *Run[D], t lifecycle.Trigger) error {
	from := r.life.State()
	if err := r.life.Fire(t); err != nil {
		return err
	}
	switch to := r.life.State(); {
	case !ownedHere(from) && ownedHere(to):
		m.live.Add()
	case ownedHere(from) && !ownedHere(to):
		m.live.Done()
	}
	return nil
}

// Fire moves r by t; a move the lifecycle does not have changes nothing
// and is returned.
func (m *Manager[D]) Fire(r *Run[D], t lifecycle.Trigger) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return m.fireLocked(r, t)
}

// Must is Fire for a move that cannot be refused; a refusal is a bug,
// logged.
func (m *Manager[D]) Must(r *Run[D], t lifecycle.Trigger) {
	if err := m.Fire(r, t); err != nil {
		m.d.Logger.Error("run lifecycle", "run", r.ID, "error", err)
	}
}

// Requeue moves a parked run of a process with replicas back to the
// queue, unless it was fenced (another replica took it): it reports
// whether it did.
func (m *Manager[D]) Requeue(r *Run[D]) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.life.State() == lifecycle.Fenced {
		return false
	}
	_ = m.fireLocked(r, lifecycle.Requeue)
	return true
}

// Reserve registers a run of sp (limits and one run per thread checked)
// without starting it: accepted; Launch starts it, Unreserve abandons it.
// wrap makes the server's part of a new run (Run.Ext).
func (m *Manager[D]) Reserve(sp Spec, wrap func(*Run[D]) D) (D, error) {
	var none D
	limited := sp.Origin == FromRequest // a recovered run was counted when it was asked for
	limit := sp.Limit
	if limit == 0 {
		limit = m.d.MaxConcurrentRuns
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return none, &apierror.RequestError{Kind: apierror.ErrShuttingDown, Message: "the server is shutting down"}
	}
	for {
		r, busy := m.byThread[sp.Thread]
		if !busy {
			break
		}
		if r.settling == nil {
			return none, &apierror.RequestError{Kind: apierror.ErrRunInProgress, Message: "run " + r.ID + " is still running on this thread"}
		}
		// It has ended; its record is being written: the next run on
		// the thread starts once it is (a record write's time at most).
		m.mu.Unlock()
		<-r.settling
		m.mu.Lock()
		if m.closed {
			return none, &apierror.RequestError{Kind: apierror.ErrShuttingDown, Message: "the server is shutting down"}
		}
	}
	if r, ok := m.runs[sp.ID]; ok && r.State() == lifecycle.Parked {
		// Its own record taken over when its retry is due: the parked run
		// goes on (Launch resumes it), admitted before.
		m.byThread[sp.Thread] = r
		return r.Ext, nil
	}
	if limited && m.active[sp.LimitKey] >= limit {
		return none, &apierror.RequestError{Kind: apierror.ErrTooManyRuns, Message: "too many concurrent runs for this API key; try again later"}
	}
	if limited && m.d.MaxTotalRuns > 0 && len(m.byThread) >= m.d.MaxTotalRuns {
		return none, &apierror.RequestError{Kind: apierror.ErrTooManyRuns, Message: "the server runs as many runs as it may; try again later"}
	}
	// The run's context lives as long as the run, across the agent calls
	// of a parked run; each call has the turn's time limit (execute).
	ctx, cancel := context.WithCancel(agent.WithTraceContext(m.base, sp.Trace))
	r := &Run[D]{ID: sp.ID, Thread: sp.Thread, ClientThread: sp.ClientThread, ownerKey: sp.OwnerKey, logAttrs: sp.Log, Origin: sp.Origin,
		Started: cmp.Or(sp.Started, m.d.Now()), ctx: ctx, cancel: cancel, begun: make(chan struct{}), max: m.d.EventLogSize, sizeHint: &m.logSize,
		detachGrace: m.d.DetachGrace}
	r.Ext = wrap(r)
	if limited {
		r.countedAs = sp.LimitKey
		m.active[r.countedAs]++
	}
	m.Must(r, lifecycle.Accept)
	m.byThread[sp.Thread] = r
	m.runs[r.ID] = r
	return r.Ext, nil
}

// Mirror registers a run that follows one another replica runs (or ran),
// fed from the store (fresh), or returns the one there is.
func (m *Manager[D]) Mirror(sp Spec, wrap func(*Run[D]) D) (d D, fresh bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.runs[sp.ID]; ok {
		return r.Ext, false
	}
	ctx, cancel := context.WithTimeout(m.base, m.d.TurnTimeout+m.d.LeaseTTL)
	r := &Run[D]{ID: sp.ID, Thread: sp.Thread, ClientThread: sp.ClientThread, ownerKey: sp.OwnerKey, logAttrs: sp.Log, Started: sp.Started, Origin: FromStore,
		ctx: ctx, cancel: cancel, begun: make(chan struct{}), max: m.d.EventLogSize, sizeHint: &m.logSize}
	r.Ext = wrap(r)
	m.Must(r, lifecycle.Mirror)
	m.runs[r.ID] = r
	return r.Ext, true
}

// Unreserve abandons an accepted run that did not start.
func (m *Manager[D]) Unreserve(r *Run[D]) {
	m.mu.Lock()
	m.release(r)
	if m.runs[r.ID] == r {
		delete(m.runs, r.ID)
	}
	m.Must(r, lifecycle.Abandon)
	m.mu.Unlock()
	r.cancel()
}

// release frees r's place in the limits and on its thread (m.mu held).
func (m *Manager[D]) release(r *Run[D]) {
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

// ReleaseParked frees the place of a run whose agent call ended parked.
// A resumed run is not counted against its principal's limits again: it
// was admitted once (as a recovered run is).
func (m *Manager[D]) ReleaseParked(r *Run[D]) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.release(r)
	r.countedAs = ""
}

// Finished runs are kept for reconnecting clients, the last to end first, up
// to keepRuns runs holding at most keepEvents events together.
const (
	keepRuns   = 256
	keepEvents = 64 * 1024
)

// EvictAfterEnd evicts what a run's end put beyond the retention. Only an
// end changes which runs are kept, so nothing else evicts.
func (m *Manager[D]) EvictAfterEnd() {
	m.mu.Lock()
	m.evict()
	m.mu.Unlock()
}

// forget drops an ended run (m.mu held), and its share of what is kept.
func (m *Manager[D]) forget(r *Run[D]) {
	if m.runs[r.ID] == r {
		delete(m.runs, r.ID)
	}
	if r.kept {
		r.kept = false
		m.endedKept--
		m.endedEvents -= r.keptEvents
	}
	m.Must(r, lifecycle.Forget)
}

// evict forgets the runs that ended first while more than keepRuns, or
// runs holding more than keepEvents events, are kept (m.mu held). It looks
// at the runs it forgets and no other: it runs at every end, and a walk
// over every run (live ones too, thousands with as many conversations)
// was 2 % of a turn's CPU at 200.
func (m *Manager[D]) evict() {
	i := 0
	for ; i < len(m.ended); i++ {
		r := m.ended[i]
		if !r.kept {
			continue // forgotten meanwhile
		}
		if m.endedKept <= keepRuns && m.endedEvents <= keepEvents {
			break
		}
		m.forget(r)
	}
	rest := m.ended[i:]
	if len(rest) > 2*max(m.endedKept, keepRuns/2) {
		// Many runs forgotten elsewhere: drop them, not only those ahead.
		rest = slices.DeleteFunc(rest, func(r *Run[D]) bool { return !r.kept })
	}
	n := copy(m.ended, rest)
	clear(m.ended[n:]) // no stale runs pinned
	m.ended = m.ended[:n]
}

// keep counts r, which has just ended, among the runs kept.
func (m *Manager[D]) keep(r *Run[D], events int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.State() != lifecycle.Finished || r.kept {
		return // forgotten already
	}
	r.kept, r.keptEvents = true, events
	m.ended = append(m.ended, r)
	m.endedKept++
	m.endedEvents += events
}

// Finish ends r, once: how it ended (its error, and why: cause) and
// whatever status its events did not say.
func (m *Manager[D]) Finish(r *Run[D], err error, cause Cause) {
	r.mu.Lock()
	if ferr := m.fireLocked(r, lifecycle.End); ferr != nil {
		r.mu.Unlock()
		m.d.Logger.Error("run lifecycle", "run", r.ID, "error", ferr)
		return
	}
	r.err, r.cause = err, cause
	events := len(r.events)
	if r.sizeHint != nil {
		r.sizeHint.Store(int64(events))
	}
	if err != nil && r.status == "" {
		r.status = agent.RunFailed
	}
	r.markBegun()
	r.wake()
	r.mu.Unlock()
	m.keep(r, events) // after r.mu: m.mu comes first
}

// FinishMirror ends a followed run with the run's status ("" when not
// known) and why following it ended.
func (m *Manager[D]) FinishMirror(r *Run[D], status agent.RunStatus, err error, cause Cause) {
	r.mu.Lock()
	if r.status == "" && status != "" {
		r.status = status
	}
	r.mu.Unlock()
	m.Finish(r, err, cause)
}

// Launch starts an accepted run, or a parked one taken over when due.
func (m *Manager[D]) Launch(r *Run[D], fn Call) {
	t := lifecycle.Launch
	if r.State() == lifecycle.Parked {
		t = lifecycle.Resume
	}
	m.Must(r, t)
	if !m.calls.Go(func(context.Context) { growStack(); m.execute(r.ctx, r, fn) }) {
		// Shut down between the two: it ends as a shutdown would end it.
		m.Finish(r, nil, EndedByShutdown)
	}
}

// execute runs r's agent call on the run crew's goroutine, and ends the
// run as the call ended: parked (its retry wait went back to the
// queue), handed back to the queue (a recovered run whose thread another
// process holds), or finished — its end audited, its record written, its
// thread freed before it shows as finished.
func (m *Manager[D]) execute(rctx context.Context, r *Run[D], fn Call) {
	ctx, cancelCall := context.WithTimeout(rctx, m.d.TurnTimeout)
	defer cancelCall()
	kept := false // the run goes on without this call (parked, handed back)
	defer func() {
		if !kept {
			r.cancel()
		}
	}()
	r.parkUntil = time.Time{}
	if m.d.Replicas {
		r.consumed = make(chan struct{})
	}
	obs := m.d.Hooks.Begin(ctx, r.Ext)
	cctx := agent.WithRunID(ctx, r.ID)
	if m.d.ParkAfter > 0 {
		cctx = agent.WithParkAfter(cctx, m.d.ParkAfter)
	}
	runErr := m.consume(cctx, r, obs, fn)
	runErr = m.waitOutHeldThread(ctx, cctx, r, obs, fn, runErr)
	if r.consumed != nil {
		close(r.consumed)
	}
	if !r.parkUntil.IsZero() && runErr == nil && ctx.Err() == nil {
		obs.Finish(ctx, agent.RunWaiting, m.d.Now())
		kept = true
		m.d.Hooks.Park(r.Ext, r.parkUntil)
		return
	}
	shutdown := m.base.Err() != nil
	runErr = m.endedBy(ctx, r, obs, runErr, shutdown)
	neverRan := r.Origin.Recovered() && errors.Is(runErr, agent.ErrThreadBusy) && r.NoEvents()
	if !m.d.Replicas && !shutdown && !neverRan {
		m.endThenSettle(ctx, r, obs, runErr)
		return
	}
	status := m.settle(ctx, r, obs, runErr, shutdown)
	// The thread is free before the run shows as finished: a client that
	// saw it end may start the next run at once.
	m.mu.Lock()
	m.release(r)
	m.mu.Unlock()
	if !m.d.Replicas && !shutdown {
		m.d.Hooks.ThreadFreed(r.Thread) // a queued answer goes on
	}
	if neverRan && m.d.Replicas && !shutdown {
		kept = true // r.ctx stays for the tail, which ends it
		m.handBack(r)
		return
	}
	cause := EndedHere
	if shutdown {
		cause = EndedByShutdown
	}
	m.Finish(r, runErr, cause)
	if neverRan {
		// Another process holds the thread: this was never a run here,
		// and its record stays for another attempt.
		m.mu.Lock()
		m.forget(r)
		m.mu.Unlock()
	}
	m.EvictAfterEnd()
	m.logEnd(r, runErr, status, shutdown)
}

// logEnd logs how the run ended.
func (m *Manager[D]) logEnd(r *Run[D], runErr error, status agent.RunStatus, shutdown bool) {
	log := m.d.Logger.With("run", r.ID, "thread", r.Thread).With(r.logAttrs...)
	if runErr != nil {
		log.Error("run failed", "error", runErr)
	} else {
		log.Info("run finished", "status", status, "shutdown", shutdown)
	}
}

// waitOutHeldThread calls fn again while another replica's lease holds
// the thread (it runs a turn there, died during one, or checks the thread
// for recovery a moment) and nothing ran: the run starts once the thread
// is free instead of failing — looking again soon (a live holder releases
// it when its turn ends), at the latest when the holder's lease expires.
// A recovered run looks for a third of a TTL, then goes back to the queue
// (Hooks.Settle), holding no goroutine longer. It returns the last call's
// error.
func (m *Manager[D]) waitOutHeldThread(ctx, cctx context.Context, r *Run[D], obs Observer, fn Call, runErr error) error {
	var waited time.Duration
	for backoff := 50 * time.Millisecond; m.d.Replicas && r.NoEvents() && ctx.Err() == nil; backoff *= 2 {
		lh := (*agent.LeaseHeldError)(nil)
		if !errors.As(runErr, &lh) {
			break
		}
		wait := min(backoff, lh.RetryAfter(m.d.Now())+10*time.Millisecond)
		if r.Origin.Recovered() {
			if waited >= m.d.LeaseTTL/3 {
				break
			}
			wait = min(wait, m.d.LeaseTTL/3-waited)
		}
		waited += wait
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		runErr = m.consume(cctx, r, obs, fn)
	}
	return runErr
}

// endedBy is the run's error as its end tells it: none for a run canceled
// by a client, a cancel request or the shutdown (it stopped at a
// checkpoint and can be resumed; its done event is logged here), a
// TurnTimeoutError for one past the turn's time limit.
func (m *Manager[D]) endedBy(ctx context.Context, r *Run[D], obs Observer, runErr error, shutdown bool) error {
	switch {
	case runErr != nil && errors.Is(runErr, context.Canceled) && ctx.Err() != nil:
		ev := r.Append(agent.Event{Type: agent.EventDone, Status: agent.RunCanceled, Thread: r.Thread, Time: m.d.Now()})
		if !shutdown && r.State() != lifecycle.Fenced {
			obs.Logged(ev)
		}
		return nil
	case runErr != nil && errors.Is(runErr, context.DeadlineExceeded) && ctx.Err() != nil:
		return &apierror.TurnTimeoutError{Limit: m.d.TurnTimeout, Err: runErr}
	}
	return runErr
}

// settle audits the run's end and writes its record, before anyone sees
// it end, so a client that saw it end finds every attempt in the log and
// a repeated request finds the result; with replicas, after its events
// are stored, and then the replicas following it are told. It returns the
// status the run ended with (the one Finish gives it).
func (m *Manager[D]) settle(ctx context.Context, r *Run[D], obs Observer, runErr error, shutdown bool) agent.RunStatus {
	status := m.finishAudit(ctx, r, obs, runErr)
	m.d.Hooks.Settle(r.Ext, status, runErr, shutdown)
	return status
}

// finishAudit audits the run's end (Observer.Finish) and returns the
// status it ended with.
func (m *Manager[D]) finishAudit(ctx context.Context, r *Run[D], obs Observer, runErr error) agent.RunStatus {
	endStatus, _, _ := r.Result()
	obs.Finish(ctx, endStatus, m.d.Now())
	status := endStatus
	if status == "" && runErr != nil {
		status = agent.RunFailed
	}
	if status == "" {
		status = agent.RunCanceled
	}
	return status
}

// endThenSettle ends a run on one process: its end audited, its
// followers told, then its record written and its thread freed — so the
// client does not wait for the record's commit. Meanwhile this process
// answers for the record: the run stays in memory (a repeated request
// joins it), its thread's next run waits in Reserve until the record is
// written, and so does a release of its key (Settled). A crash before
// the record is written leaves it running, and recovery writes it from
// the thread's last checkpoint, durable before the end was reported
// (docs/reliability.md). With replicas, whose requests this process does
// not see, the record is written first (execute).
func (m *Manager[D]) endThenSettle(ctx context.Context, r *Run[D], obs Observer, runErr error) {
	status := m.finishAudit(ctx, r, obs, runErr)
	settled := make(chan struct{})
	m.mu.Lock()
	r.mu.Lock()
	r.settling = settled
	r.mu.Unlock()
	m.mu.Unlock()
	m.Finish(r, runErr, EndedHere)
	defer close(settled) // whatever way the hooks return
	m.d.Hooks.Settle(r.Ext, status, runErr, false)
	m.mu.Lock()
	m.release(r)
	m.mu.Unlock()
	m.d.Hooks.ThreadFreed(r.Thread) // a queued answer goes on
	m.EvictAfterEnd()
	m.logEnd(r, runErr, status, false)
}

// handBack puts a recovered run that found its thread held elsewhere back
// in the queue (Hooks.Settle did): whoever runs it next, the requests
// following it here follow it from the store, as a parked run's do,
// instead of seeing it fail.
func (m *Manager[D]) handBack(r *Run[D]) {
	r.mu.Lock()
	_ = m.fireLocked(r, lifecycle.HandBack)
	r.markBegun()
	r.mu.Unlock()
	m.d.Hooks.HandedBack(r.Ext)
	m.d.Logger.Info("recovered run gave its held thread back to the queue", "run", r.ID, "thread", r.Thread)
}

// consume drains the run's events into its log. A panic of the run (the
// agent's code outside its nodes, which the engine recovers itself) ends
// the run as failed instead of the process.
func (m *Manager[D]) consume(ctx context.Context, r *Run[D], obs Observer, fn Call) (runErr error) {
	defer func() {
		if v := recover(); v != nil {
			m.d.Logger.Error("run panicked", "run", r.ID, "thread", r.Thread, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			runErr = fmt.Errorf("internal error: the run stopped (the server logged the details)")
		}
	}()
	for ev, err := range fn(ctx) {
		if err != nil {
			return err
		}
		if ev.Time.IsZero() {
			ev.Time = m.d.Now()
		}
		if ev.Type == agent.EventAudit {
			// Stored durably by the agent already; copied to the
			// server's audit log. Clients see what Action returns.
			if ev.Audit = obs.Action(ctx, ev.Audit); ev.Audit == nil {
				continue
			}
		}
		if ev.Type == agent.EventDone && ev.Status == agent.RunWaiting {
			// Not the run's end: it goes on at NotBefore (Hooks.Park),
			// and its followers keep following.
			r.parkUntil = ev.NotBefore
			continue
		}
		obs.Observe(ctx, ev)
		ev = r.Append(ev)
		obs.Logged(ev)
	}
	return nil
}

// Get returns a run if the owner of ownerKey owns it.
func (m *Manager[D]) Get(ownerKey, id string) (D, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok || r.ownerKey != ownerKey {
		var none D
		return none, false
	}
	return r.Ext, true
}

// Parked reports whether the run of id is parked in this process.
func (m *Manager[D]) Parked(id string) bool {
	m.mu.Lock()
	r, ok := m.runs[id]
	m.mu.Unlock()
	return ok && r.State() == lifecycle.Parked
}

// ByID returns a run of this process, finished or not.
func (m *Manager[D]) ByID(id string) (D, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.runs[id]; ok {
		return r.Ext, true
	}
	var none D
	return none, false
}

// All returns the runs this process keeps, finished or not.
func (m *Manager[D]) All() []D {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]D, 0, len(m.runs))
	for _, r := range m.runs {
		out = append(out, r.Ext)
	}
	return out
}

// signalRoom wakes those waiting for room (m.mu held).
func (m *Manager[D]) signalRoom() {
	if m.room != nil {
		close(m.room)
		m.room = nil
	}
}

// RoomSignal returns a channel closed when a run ends.
func (m *Manager[D]) RoomSignal() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.room == nil {
		m.room = make(chan struct{})
	}
	return m.room
}

// WaitRoom waits until fewer than limit runs go on, or ctx ends.
func (m *Manager[D]) WaitRoom(ctx context.Context, limit int) error {
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

// Running counts the runs in progress on this server.
func (m *Manager[D]) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byThread)
}

// ActiveOn returns the running run of an internal thread (not one that
// has ended and is writing its record: a request for the thread's next
// run waits for that in Reserve).
func (m *Manager[D]) ActiveOn(thread string) (D, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.byThread[thread]; ok && r.settling == nil {
		return r.Ext, true
	}
	var none D // none, or one that has ended and is writing its record
	return none, false
}

// Stopping reports whether the manager is closing (the server shuts
// down).
func (m *Manager[D]) Stopping() bool { return m.base.Err() != nil }

// Refuse makes Reserve refuse new runs.
func (m *Manager[D]) Refuse() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
}

// CallsEnded waits until no agent call runs, or for ctx (the runs still
// going are not canceled: Close does that).
func (m *Manager[D]) CallsEnded(ctx context.Context) error { return m.calls.Running(ctx) }

// Close refuses new runs and cancels the running ones (they stop at their
// next checkpoint) and the parked ones; wait for them with Wait.
func (m *Manager[D]) Close() {
	m.Refuse()
	m.stopBase()
}

// Wait waits until every run this process has to end has ended.
func (m *Manager[D]) Wait(ctx context.Context) error { return m.live.Wait(ctx) }

// Stop waits for the goroutines of the runs' agent calls to return
// (Close and Wait first).
func (m *Manager[D]) Stop(ctx context.Context) error { return m.calls.Stop(ctx) }
