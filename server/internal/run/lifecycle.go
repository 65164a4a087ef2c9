package run

import "fmt"

// State is where a run of this process stands (see the package doc).
type State uint8

const (
	// None: not made yet (the zero Machine).
	None State = iota
	// Accepted: admitted (limits counted, the thread taken), its record
	// being written; it has not started.
	Accepted
	// Running: its agent call goes on in this process.
	Running
	// Fenced: running, but another replica took its lease: it stops at
	// its next checkpoint and writes nothing more (neither events nor
	// its record).
	Fenced
	// Parked: a retry waits longer than ParkAfter; no goroutine waits
	// with it. One process only: a timer takes it over when due.
	Parked
	// Following: another replica runs it (or the queue holds it until
	// one does): this process follows its events in the store.
	Following
	// Finished: it has ended, once; its log stays for reconnecting
	// clients.
	Finished
	// Forgotten: dropped from this process (evicted after its end, or
	// abandoned before it started).
	Forgotten
	numStates
)

var stateNames = [numStates]string{"none", "accepted", "running", "fenced", "parked", "following", "finished", "forgotten"}

func (s State) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Ended reports whether the run has ended (finished or forgotten).
func (s State) Ended() bool { return s == Finished || s == Forgotten }

// Trigger is what moves a run from one state to the next.
type Trigger uint8

const (
	// Accept admits a run of this process (None → Accepted).
	Accept Trigger = iota
	// Mirror makes a run that follows another replica's (None →
	// Following).
	Mirror
	// Abandon drops an accepted run that will not start: its record
	// could not be written, or a repeat of the request found the first
	// one's (Accepted → Forgotten).
	Abandon
	// Launch starts its agent call (Accepted → Running).
	Launch
	// LoseLease: a lease renewal was refused (Running → Fenced).
	LoseLease
	// Park: its call ended waiting for a retry, in one process
	// (Running → Parked).
	Park
	// Requeue: its call ended waiting for a retry, with replicas: its
	// record went back to the queue, due then (Running → Following).
	Requeue
	// HandBack: a recovered run found its thread held by another
	// replica, so nothing ran: its record went back to the queue
	// (Running → Following).
	HandBack
	// Resume: the parked run was taken over when due (Parked → Running).
	Resume
	// End: it ended, once (Running, Fenced, Parked, Following →
	// Finished).
	End
	// Forget evicts an ended run (Finished → Forgotten).
	Forget
	numTriggers
)

var triggerNames = [numTriggers]string{"accept", "mirror", "abandon", "launch", "lose lease", "park", "requeue", "hand back", "resume", "end", "forget"}

func (t Trigger) String() string {
	if t < numTriggers {
		return triggerNames[t]
	}
	return fmt.Sprintf("Trigger(%d)", uint8(t))
}

// transitions is the lifecycle, every move in one place: the state a
// trigger leads to from each state it may fire in. A pair not listed is
// refused (*TransitionError) and changes nothing.
var transitions = [...]struct {
	from []State
	on   Trigger
	to   State
}{
	{[]State{None}, Accept, Accepted},
	{[]State{None}, Mirror, Following},
	{[]State{Accepted}, Abandon, Forgotten},
	{[]State{Accepted}, Launch, Running},
	{[]State{Running}, LoseLease, Fenced},
	{[]State{Running}, Park, Parked},
	{[]State{Running}, Requeue, Following},
	{[]State{Running}, HandBack, Following},
	{[]State{Parked}, Resume, Running},
	{[]State{Running, Fenced, Parked, Following}, End, Finished},
	{[]State{Finished}, Forget, Forgotten},
}

// table is transitions indexed: table[from][on] is the state reached,
// None when the move is refused.
var table = func() (t [numStates][numTriggers]State) {
	for _, tr := range transitions {
		for _, from := range tr.from {
			t[from][tr.on] = tr.to
		}
	}
	return t
}()

// Next is the state t leads to from s; ok is false when the lifecycle
// has no such move.
func Next(s State, t Trigger) (State, bool) {
	if s >= numStates || t >= numTriggers {
		return s, false
	}
	to := table[s][t]
	return to, to != None
}

// TransitionError is a move the lifecycle does not have: a bug of the
// caller, reported instead of corrupting the run.
type TransitionError struct {
	From State
	On   Trigger
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("run lifecycle: no move %q from %s", e.On, e.From)
}

// Machine is one run's lifecycle: its state and the triggers it has seen.
// The zero Machine is in None. It is not safe for concurrent use: the run
// that holds it guards it with its own lock.
type Machine struct {
	state State
	seen  uint16 // a bit per Trigger
}

// State is where the run stands.
func (m *Machine) State() State { return m.state }

// Fire moves the run by t, or returns a *TransitionError and changes
// nothing.
func (m *Machine) Fire(t Trigger) error {
	to, ok := Next(m.state, t)
	if !ok {
		return &TransitionError{From: m.state, On: t}
	}
	m.state = to
	m.seen |= 1 << t
	return nil
}

// Saw reports whether t has moved the run before.
func (m *Machine) Saw(t Trigger) bool { return m.seen&(1<<t) != 0 }
