package runs

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capgraph/capgraph/agent"
	lifecycle "github.com/capgraph/capgraph/server/internal/run"
)

// Run is one execution of a turn (or a resume) on a thread. It runs in its
// own goroutine, detached from the request that started it, and keeps a
// bounded log of its events so streams can follow it and reconnect. Where
// it stands is its lifecycle (life, package server/internal/run, which
// says what each state means and how a run moves between them). Ext is the
// server's part of the run (who owns it, how its protocol renders it).
type Run[D any] struct {
	ID           string
	Thread       string // internal id
	ClientThread string
	// Started is when the run was asked for; SetStarted changes it after
	// the run is registered (StartTime reads it then).
	Started time.Time
	// Origin is how the run came to this process.
	Origin Origin
	Ext    D

	cancel context.CancelFunc
	ctx    context.Context

	// kept: counted among the ended runs kept (Manager.keep), with
	// keptEvents events; guarded by the manager's mu.
	kept       bool
	keptEvents int
	// ownerKey is who may see the run (Manager.Get).
	ownerKey string
	// logAttrs name the run's owner in the log line of its end.
	logAttrs []any
	// countedAs is the owner key whose run limits count the run while it
	// runs here; "" when none do (a recovered run, or one resumed after
	// it parked: each was admitted once).
	countedAs string
	// parkUntil is set when the run's agent call ended parked (a retry
	// wait longer than Deps.ParkAfter): it goes on then (Hooks.Park).
	parkUntil time.Time
	// consumed is closed when the run has made its last event: its lease
	// is no longer renewed (its record is written next).
	consumed chan struct{}
	// settling is closed once the record of a run whose followers saw it
	// end before it was written is written, and its thread freed (set,
	// under the manager's mu and mu, just before that end; see
	// Manager.execute); nil for every other run.
	settling chan struct{}

	mu sync.Mutex
	// life is where the run stands; every move is one of the lifecycle's
	// (Manager.Fire).
	life    lifecycle.Machine
	events  []logEntry // ascending by Seq (eventlog.go)
	lastSeq int
	// sizeHint is the length of the last finished run's log, shared by
	// the manager's runs (regrow).
	sizeHint *atomic.Int64
	notify   chan struct{} // closed on the next change; nil until a follower asks (Since)
	status   agent.RunStatus
	err      error
	// cause says why the run ended (valid once it has).
	cause Cause
	max   int
	// followers counts the requests answering with this run that cancel
	// it when they leave (the one that started it, repeats that joined),
	// and one more, for good, once a request on another replica follows
	// it (KeepForRemote).
	followers int
	// begun is closed at the run's first event or its end.
	begun chan struct{}
	// detach cancels the run DetachGrace after its last follower left.
	detach      *time.Timer
	detachGrace time.Duration
}

// Origin is how a run came to this process.
type Origin uint8

const (
	// FromRequest: a client's request; its record is written when it is
	// accepted, and it counts against its owner's run limits.
	FromRequest Origin = iota
	// FromRecord: a recorded run taken over (recovered, claimed from the
	// queue, resumed when its retry was due, started after the run it
	// was queued behind).
	FromRecord
	// FromClaim: a run cut between two steps that the agent claimed
	// (agent.ClaimUnfinished), recorded when it is accepted.
	FromClaim
	// FromStore: a run of another replica, followed in the store.
	FromStore
)

// Recovered reports whether the run was not asked for by a request.
func (o Origin) Recovered() bool { return o == FromRecord || o == FromClaim }

// Cause is why a run ended.
type Cause uint8

const (
	// EndedHere: its agent call ended (answered, interrupted, failed or
	// canceled on request), or it was canceled while parked.
	EndedHere Cause = iota
	// EndedByShutdown: the server's shutdown stopped it; its record
	// stays unfinished, for the next start (or replica) to resume.
	EndedByShutdown
	// EndedInStore: the run it followed in the store ended.
	EndedInStore
	// EndedFollowing: this process stopped following it (its followers
	// left, or its record is gone).
	EndedFollowing
)

// Context is the run's context: it lives as long as the run, across the
// agent calls of a parked run.
func (r *Run[D]) Context() context.Context { return r.ctx }

// Cancel cancels the run: it stops at its next checkpoint.
func (r *Run[D]) Cancel() { r.cancel() }

// Consumed is closed when the run has made its last event (nil for a run
// of a process without replicas).
func (r *Run[D]) Consumed() <-chan struct{} { return r.consumed }

// SetStarted sets when the run started (its record's time).
func (r *Run[D]) SetStarted(t time.Time) {
	r.mu.Lock()
	r.Started = t
	r.mu.Unlock()
}

// StartTime reads Started under the run's lock: SetStarted sets it after
// the run is registered, where a repeated request may already have found
// it.
func (r *Run[D]) StartTime() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Started
}

// State is where the run stands.
func (r *Run[D]) State() lifecycle.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.life.State()
}

// Following reports whether another replica runs it (or the queue holds
// it): this process follows its events in the store.
func (r *Run[D]) Following() bool { return r.State() == lifecycle.Following }

// markBegun closes begun once (r.mu held).
func (r *Run[D]) markBegun() {
	if r.begun == nil {
		return
	}
	select {
	case <-r.begun:
	default:
		close(r.begun)
	}
}

// Began waits until the run has sent its first event or ended, and
// reports whether it got going: false when it ended because another
// process holds its thread.
func (r *Run[D]) Began(ctx context.Context) bool {
	select {
	case <-r.begun:
	case <-ctx.Done():
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return !(r.life.Saw(lifecycle.HandBack) || r.life.State().Ended() && len(r.events) == 0 && errors.Is(r.err, agent.ErrThreadBusy))
}

// Join counts a request that cancels the run when it leaves (Leave).
func (r *Run[D]) Join() {
	r.mu.Lock()
	r.followers++
	if r.detach != nil {
		r.detach.Stop() // a repeat of the request came back in time
		r.detach = nil
	}
	r.mu.Unlock()
}

// KeepForRemote is SignalFollowed for a run of this process: a request
// on another replica follows it, so it is not canceled when its followers
// here have gone (that follower never leaves).
func (r *Run[D]) KeepForRemote() { r.Join() }

// Followers counts the requests that cancel the run when they leave.
func (r *Run[D]) Followers() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.followers
}

// Leave is a joined request going away. When the last one has gone, the
// run is canceled: at once (a person pressed stop, closed the page), or,
// when the request that left can be repeated (repeatable), after
// Deps.DetachGrace unless a repeat of it (an SDK retrying after its
// timeout) joins the run meanwhile.
func (r *Run[D]) Leave(repeatable bool) {
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

// Append adds ev (numbering it), wakes followers, and returns it numbered.
func (r *Run[D]) Append(ev agent.Event) agent.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev.Seq = r.lastSeq + 1
	ev.RunID = r.ID
	r.logLocked(ev)
	return ev
}

// AppendAt adds an event of a run followed in the store with the number
// it has.
func (r *Run[D]) AppendAt(ev agent.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ev.Seq <= r.lastSeq {
		return
	}
	r.logLocked(ev)
}

// NumberFrom makes the run number its next events above seq (a run
// resumed on another replica numbers on from further up).
func (r *Run[D]) NumberFrom(seq int) {
	r.mu.Lock()
	r.lastSeq = max(r.lastSeq, seq)
	r.mu.Unlock()
}

// LastSeq is the number of the run's last event.
func (r *Run[D]) LastSeq() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastSeq
}

// logLocked adds a numbered event to the bounded log (r.mu held), dropping
// the oldest beyond r.max, and wakes the followers.
func (r *Run[D]) logLocked(ev agent.Event) {
	r.lastSeq = ev.Seq
	if len(r.events) == cap(r.events) {
		r.events = r.regrow()
	}
	r.events = append(r.events, entryOf(ev, r.ID, r.Thread))
	if drop := len(r.events) - r.max; drop > 0 {
		r.events = r.events[drop:] // the array goes with the next regrow
	}
	if ev.Type == agent.EventDone {
		r.status = ev.Status
	}
	r.markBegun()
	r.wake()
}

// wake tells the followers the run changed (r.mu held). The next channel
// is made when a follower asks for it: a run's events come in bursts, and
// a follower woken by the first asks again only after the burst.
func (r *Run[D]) wake() {
	if r.notify != nil {
		close(r.notify)
		r.notify = nil
	}
}

// regrow returns the log in a new array with room for more (r.mu held). The
// first array is as long as the last run's log (sizeHint): grown by
// doubling, an event log was a tenth of a turn's garbage. A full log moves
// into an array twice its bound, so the oldest event is dropped by slicing
// and the log is copied once per r.max events, not at every event.
func (r *Run[D]) regrow() []logEntry {
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
	next := make([]logEntry, len(keep), max(size, len(keep)+1))
	copy(next, keep)
	return next
}

// Since returns the events after seq after, a channel closed on the next
// change, and whether the run has ended (then the events are the last).
// Events dropped from the bounded log are skipped. The events are
// appended to buf[:0] (nil: a new slice).
func (r *Run[D]) Since(after int, buf []agent.Event) ([]agent.Event, <-chan struct{}, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Numbers may have gaps (a run resumed on another replica numbers on
	// from further up): search, do not index.
	start := sort.Search(len(r.events), func(i int) bool { return r.events[i].seq > after })
	evs := slices.Grow(buf[:0], len(r.events)-start)
	for i := start; i < len(r.events); i++ {
		evs = append(evs, r.events[i].event(r.ID, r.Thread))
	}
	if r.notify == nil {
		r.notify = make(chan struct{})
	}
	return evs, r.notify, r.life.State().Ended()
}

// IsFinished reports whether the run has ended.
func (r *Run[D]) IsFinished() bool { return r.State().Ended() }

// Result returns how the run ended (valid once finished): its status, its
// error, and whether the server's shutdown stopped it.
func (r *Run[D]) Result() (agent.RunStatus, error, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, r.err, r.cause == EndedByShutdown
}

// Snapshot is where a run stands, read at once.
type Snapshot struct {
	Started  time.Time
	Finished bool
	Status   agent.RunStatus
	Err      error
	LastSeq  int
}

// Snapshot reads where the run stands.
func (r *Run[D]) Snapshot() Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Snapshot{Started: r.Started, Finished: r.life.State().Ended(), Status: r.status, Err: r.err, LastSeq: r.lastSeq}
}

// NoEvents reports whether r has emitted nothing yet in this process
// (a run recovered from the queue numbers on from its earlier attempts'
// events, so its sequence number does not say).
func (r *Run[D]) NoEvents() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events) == 0
}

// EndedInStore reports whether the run, followed in the store, ended
// there (rather than this process ceasing to follow it).
func (r *Run[D]) EndedInStore() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.life.State().Ended() && r.cause == EndedInStore
}

// Settled returns a channel closed once the run's record says how it
// ended and its thread is free, when its followers were told before (on
// one process: see Manager.endThenSettle); nil when the record was
// written before they were, or the run has not ended.
func (r *Run[D]) Settled() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.settling
}
