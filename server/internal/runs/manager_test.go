package runs

import (
	"context"
	"fmt"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/logging"
	lifecycle "github.com/capgraph/capgraph/server/internal/run"
)

// testRun is a run of no server.
type testRun struct{ *Run[*testRun] }

// nopHooks are the hooks of no server: nothing is recorded or shared.
type nopHooks struct{}

func (nopHooks) Begin(context.Context, *testRun) Observer      { return nopObserver{} }
func (nopHooks) Park(*testRun, time.Time)                      {}
func (nopHooks) Settle(*testRun, agent.RunStatus, error, bool) {}
func (nopHooks) ThreadFreed(string)                            {}
func (nopHooks) HandedBack(*testRun)                           {}

type nopObserver struct{}

func (nopObserver) Action(_ context.Context, rec *agent.AuditRecord) *agent.AuditRecord { return rec }
func (nopObserver) Observe(context.Context, agent.Event)                                {}
func (nopObserver) Logged(agent.Event)                                                  {}
func (nopObserver) Finish(context.Context, agent.RunStatus, time.Time)                  {}

// newTestManager is a manager with the server's default limits.
func newTestManager() *Manager[*testRun] {
	return New(Deps[*testRun]{Hooks: nopHooks{}, Logger: logging.Nop(), Now: time.Now, MaxConcurrentRuns: 4,
		EventLogSize: 4096, DetachGrace: 10 * time.Second, TurnTimeout: 5 * time.Minute})
}

// startFn starts a run of fn on m.
func startFn(m *Manager[*testRun], clientThread, thread string, fn func(ctx context.Context) iter.Seq2[agent.Event, error]) (*Run[*testRun], error) {
	r, err := m.Reserve(Spec{ID: "run-" + clientThread, Thread: thread, ClientThread: clientThread, OwnerKey: "alice", LimitKey: "alice"},
		func(core *Run[*testRun]) *testRun { return &testRun{core} })
	if err != nil {
		return nil, err
	}
	m.Launch(r.Run, fn)
	return r.Run, nil
}

// startHeld starts a run on thread "internal-"+name that sends ev once
// release is closed.
func startHeld(t *testing.T, m *Manager[*testRun], name string, release <-chan struct{}, ev agent.Event) *Run[*testRun] {
	t.Helper()
	r, err := startFn(m, name, "internal-"+name, func(ctx context.Context) iter.Seq2[agent.Event, error] {
		return func(yield func(agent.Event, error) bool) {
			<-release
			yield(ev, nil)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// logRuns is a manager of no runs, to move the runs of the event log's
// tests through their lifecycle.
var logRuns = newTestManager()

// started returns r, a run made for a test, running.
func started(r *Run[*testRun]) *Run[*testRun] {
	logRuns.Must(r, lifecycle.Accept)
	logRuns.Must(r, lifecycle.Launch)
	return r
}

func TestRunEventLogIsBounded(t *testing.T) {
	r := started(&Run[*testRun]{ID: "r", notify: make(chan struct{}), max: 3})
	for range 5 {
		r.Append(agent.Event{Type: agent.EventToken, Text: "x"})
	}
	tests := []struct {
		after int
		want  []int
	}{
		{0, []int{3, 4, 5}}, // 1 and 2 were dropped
		{3, []int{4, 5}},
		{5, nil},
		{9, nil},
	}
	for _, tc := range tests {
		evs, _, finished := r.Since(tc.after, nil)
		var got []int
		for _, e := range evs {
			got = append(got, e.Seq)
		}
		if finished || len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
			t.Fatalf("after %d: %v, finished %v; want %v", tc.after, got, finished, tc.want)
		}
	}
	logRuns.Finish(r, nil, EndedHere)
	if _, _, finished := r.Since(5, nil); !finished {
		t.Fatal("not finished")
	}
}

// A run past its bound keeps its last events at a constant cost per event
// (the log was copied whole at every event beyond the bound, quadratic in a
// long streamed answer), and what a follower was handed stays as it was.
func TestRunEventLogPastItsBound(t *testing.T) {
	const bound = 64
	r := &Run[*testRun]{ID: "r", notify: make(chan struct{}), max: bound}
	for range 3 * bound {
		r.Append(agent.Event{Type: agent.EventToken, Text: "x"})
	}
	held, _, _ := r.Since(0, nil)
	heldSeqs := func() []int {
		var s []int
		for _, e := range held {
			s = append(s, e.Seq)
		}
		return s
	}
	before := heldSeqs()
	allocs := testing.AllocsPerRun(10*bound, func() {
		r.Append(agent.Event{Type: agent.EventToken, Text: "x"})
	})
	// One allocation is the follower's wake-up channel; the array's copy
	// comes once per bound events.
	if allocs > 1.1 {
		t.Errorf("%.2f allocations per event past the bound; want the wake-up channel's and a share of one copy per %d events", allocs, bound)
	}
	if got := heldSeqs(); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("events handed out changed under later appends: %v, were %v", got, before)
	}
	evs, _, _ := r.Since(0, nil)
	last := r.lastSeq
	if len(evs) != bound || evs[0].Seq != last-bound+1 || evs[bound-1].Seq != last {
		t.Fatalf("kept %d events from %d to %d; want the last %d, %d to %d", len(evs), evs[0].Seq, evs[len(evs)-1].Seq, bound, last-bound+1, last)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq != evs[i-1].Seq+1 {
			t.Fatalf("gap in the kept log at %d: %d then %d", i, evs[i-1].Seq, evs[i].Seq)
		}
	}
}

// A run's log starts as long as the last finished run's, so a turn's log
// is not grown by doubling.
func TestRunEventLogStartsAtTheLastRunsSize(t *testing.T) {
	var hint atomic.Int64
	first := started(&Run[*testRun]{ID: "a", notify: make(chan struct{}), max: 4096, sizeHint: &hint})
	for range 50 {
		first.Append(agent.Event{Type: agent.EventToken})
	}
	logRuns.Finish(first, nil, EndedHere)
	next := &Run[*testRun]{ID: "b", notify: make(chan struct{}), max: 4096, sizeHint: &hint}
	next.Append(agent.Event{Type: agent.EventToken})
	if c := cap(next.events); c < 50 || c > 64 {
		t.Fatalf("the next run's log starts with room for %d events; want the last run's 50 and a little more", c)
	}
}

// A client that saw a run end can start the next run on the thread at
// once: the thread is free before the run shows as finished. The test holds
// the run manager's lock while the run ends, so a run that showed as
// finished before giving the thread up is caught in between.
func TestThreadIsFreeWhenTheRunShowsFinished(t *testing.T) {
	m := newTestManager()
	release := make(chan struct{})
	r := startHeld(t, m, "quick", release, agent.Event{Type: agent.EventDone, Status: agent.RunAnswered})
	m.mu.Lock()
	close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	sawEnd := r.Follow(ctx, 0, time.Second, nil, func(agent.Event) {}, nil)
	cancel()
	_, busy := m.byThread["internal-quick"]
	m.mu.Unlock()
	if sawEnd && busy {
		t.Fatal("the run shows finished but still holds the thread")
	}
	if !r.Follow(context.Background(), 0, time.Second, nil, func(agent.Event) {}, nil) {
		t.Fatal("follow did not see the end")
	}
	if _, busy := m.ActiveOn("internal-quick"); busy {
		t.Fatal("a finished run still holds the thread")
	}
}

// Finished runs kept for reconnection are bounded in number and events.
func TestFinishedRunsAreBounded(t *testing.T) {
	m := newTestManager()
	chatty := func(ctx context.Context) iter.Seq2[agent.Event, error] {
		return func(yield func(agent.Event, error) bool) {
			for range 2000 {
				if !yield(agent.Event{Type: agent.EventToken, Text: "x"}, nil) {
					return
				}
			}
		}
	}
	for i := range 100 {
		r, err := startFn(m, fmt.Sprintf("b%d", i), fmt.Sprintf("internal-b%d", i), chatty)
		if err != nil {
			t.Fatal(err)
		}
		r.Follow(context.Background(), 0, time.Second, nil, func(agent.Event) {}, nil)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	events := 0
	for _, r := range m.runs {
		r.mu.Lock()
		events += len(r.events)
		r.mu.Unlock()
	}
	if len(m.runs) > keepRuns || events > keepEvents+m.d.EventLogSize {
		t.Fatalf("kept %d runs with %d events; bounds %d runs, %d events", len(m.runs), events, keepRuns, keepEvents)
	}
}

// Beyond keepRuns, the runs that ended first are forgotten, one by one as
// later ones end; a live run is never, however long it has run, and a run
// forgotten on its own path (a run that never ran here) frees its place.
func TestEvictionForgetsTheRunsThatEndedFirst(t *testing.T) {
	m := newTestManager()
	release := make(chan struct{})
	live := startHeld(t, m, "live", release, agent.Event{Type: agent.EventToken, Text: "x"})
	quick := func(ctx context.Context) iter.Seq2[agent.Event, error] {
		return func(yield func(agent.Event, error) bool) { yield(agent.Event{Type: agent.EventToken, Text: "x"}, nil) }
	}
	const extra = 10
	var ended []*Run[*testRun]
	for i := range keepRuns + extra {
		r, err := startFn(m, fmt.Sprintf("q%d", i), fmt.Sprintf("internal-q%d", i), quick)
		if err != nil {
			t.Fatal(err)
		}
		r.Follow(context.Background(), 0, time.Second, nil, func(agent.Event) {}, nil)
		waitFor(t, func() bool { m.mu.Lock(); defer m.mu.Unlock(); return r.kept })
		ended = append(ended, r)
		if i == 0 {
			// Forgotten on its own path: its place is free, and eviction
			// passes over it.
			m.mu.Lock()
			m.forget(r)
			m.mu.Unlock()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, r := range ended {
		// Run 0 was forgotten by hand, runs 1 to extra-1 by eviction: run
		// 0's place was free, so one fewer had to go.
		_, found := m.runs[r.ID]
		if want := i >= extra; found != want {
			t.Errorf("run %d (of %d ended in order): kept %v, want %v", i, len(ended), found, want)
		}
	}
	if _, ok := m.runs[live.ID]; !ok {
		t.Error("the live run was forgotten")
	}
	if len(m.ended) != keepRuns || m.endedKept != keepRuns || m.endedEvents != keepRuns*len(ended[len(ended)-1].events) {
		t.Errorf("%d ended runs (%d counted) kept with %d events, want %d runs", len(m.ended), m.endedKept, m.endedEvents, keepRuns)
	}
	close(release)
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// Runs forgotten on their own paths after a kept one do not pile up in
// the queue while nothing needs evicting.
func TestEvictionDropsRunsForgottenElsewhere(t *testing.T) {
	m := newTestManager()
	finish := func(id string) *Run[*testRun] {
		r := started(&Run[*testRun]{ID: id, notify: make(chan struct{}), max: 8})
		m.Finish(r, nil, EndedHere)
		return r
	}
	kept := finish("kept")
	for i := range 3 * keepRuns {
		r := finish(fmt.Sprint("gone", i))
		m.mu.Lock()
		m.forget(r)
		m.mu.Unlock()
	}
	m.EvictAfterEnd()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.ended) != 1 || m.ended[0] != kept || m.endedKept != 1 {
		t.Fatalf("%d runs queued (%d counted), want the one kept", len(m.ended), m.endedKept)
	}
}
