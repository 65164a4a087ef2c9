package graph_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/graph/graphtest"
)

// retryState is the state of a graph with a retry policy in the shape the
// agent uses: a failed attempt is data (its count and time), and the route
// turns it into a NotBefore, so the delay is in the checkpoint.
type retryState struct {
	Failures int       `json:"failures"`
	FailedAt time.Time `json:"failed_at"`
	Done     bool      `json:"done"`
}

type retryUpdate struct {
	Failed bool      `json:"failed,omitempty"`
	At     time.Time `json:"at"`
	Done   bool      `json:"done,omitempty"`
}

func applyRetry(s retryState, u retryUpdate) (retryState, error) {
	if u.Failed {
		s.Failures++
		s.FailedAt = u.At
	}
	s.Done = s.Done || u.Done
	return s, nil
}

// retryAttempts and backoff are the policy under test: 3 attempts, 1 s
// before the second, 2 s before the third.
const retryAttempts = 3

func backoff(failures int) time.Duration { return time.Second << (failures - 1) }

// retryGraph: one node, "call", that calls a service failing `fail` times,
// routed back to itself under the policy. now is the application's clock
// (what it stamps failures with); cfg carries the engine's.
func retryGraph(t *testing.T, cfg graph.Config[retryState, retryUpdate], now func() time.Time, fail int) (*graph.Compiled[retryState, retryUpdate], *int) {
	t.Helper()
	calls := 0
	cfg.Apply = applyRetry
	g := graph.New(cfg)
	g.AddNode("call", func(ctx context.Context, s retryState) (retryUpdate, error) {
		calls++
		if calls <= fail {
			return retryUpdate{Failed: true, At: now()}, nil
		}
		return retryUpdate{Done: true, At: now()}, nil
	})
	g.AddConditionalEdges("call", func(s retryState) graph.Route {
		if s.Done || s.Failures == 0 || s.Failures >= retryAttempts {
			return graph.Route{To: []string{graph.End}}
		}
		return graph.Route{To: []string{"call"}, NotBefore: s.FailedAt.Add(backoff(s.Failures))}
	}, "call")
	c, err := g.SetEntry("call").Compile()
	if err != nil {
		t.Fatal(err)
	}
	return c, &calls
}

// starts returns the times and attempts of the node_start events of node.
func starts(trace []graph.Event, node string) ([]time.Time, []int) {
	var (
		ts       []time.Time
		attempts []int
	)
	for _, e := range trace {
		if e.Kind == graph.EventNodeStart && e.Node == node {
			ts = append(ts, e.Time)
			attempts = append(attempts, e.Attempt)
		}
	}
	return ts, attempts
}

func sameTimes(a, b []time.Time) bool {
	return slices.EqualFunc(a, b, func(x, y time.Time) bool { return x.Equal(y) })
}

var t0 = time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)

// A 3-attempt retry schedule on a compiled graph with a virtual clock: the
// waits move the clock instead of sleeping, so the run takes microseconds,
// and every time is exact.
func TestRetryScheduleWithVirtualClock(t *testing.T) {
	clock := graphtest.NewClock(t0)
	store := memory.New()
	c, calls := retryGraph(t, graph.Config[retryState, retryUpdate]{Store: store, Clock: clock}, clock.Now, 2)
	res, err := c.Run(context.Background(), "t", retryState{})
	if err != nil || res.Status != graph.StatusDone || !res.State.Done || *calls != 3 {
		t.Fatalf("run: %v, %+v after %d calls", err, res, *calls)
	}
	want := []time.Time{t0, t0.Add(time.Second), t0.Add(3 * time.Second)}
	got, attempts := starts(res.Trace.Events(), "call")
	if !sameTimes(got, want) || !slices.Equal(attempts, []int{1, 2, 3}) {
		t.Errorf("attempts started at %v (attempts %v), want %v (1, 2, 3)", got, attempts, want)
	}
	var waits []time.Time
	for _, e := range eventsOf(res.Trace.Events(), graph.EventWait) {
		waits = append(waits, e.NotBefore)
	}
	if !sameTimes(waits, want[1:]) || !sameTimes(clock.Waits(), want[1:]) {
		t.Errorf("wait events %v, clock waits %v, want %v", waits, clock.Waits(), want[1:])
	}
	if !clock.Now().Equal(want[2]) {
		t.Errorf("clock at %v after the run, want %v", clock.Now(), want[2])
	}
	// The delays are in the checkpoints, stamped with the clock's time.
	cps, err := store.List(context.Background(), "t", checkpoint.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var notBefore []time.Time
	for _, cp := range slices.Backward(cps) {
		if !cp.NotBefore.IsZero() {
			notBefore = append(notBefore, cp.NotBefore)
		}
	}
	if !sameTimes(notBefore, want[1:]) || !cps[0].Created.Equal(want[2]) {
		t.Errorf("checkpoints: NotBefore %v, last created %v; want %v and %v", notBefore, cps[0].Created, want[1:], want[2])
	}

	// A policy that gives up: three failures, two waits, no fourth attempt.
	clock2 := graphtest.NewClock(t0)
	c2, calls2 := retryGraph(t, graph.Config[retryState, retryUpdate]{Clock: clock2}, clock2.Now, 5)
	res, err = c2.Run(context.Background(), "t", retryState{})
	if err != nil || res.State.Done || res.State.Failures != 3 || *calls2 != 3 || len(clock2.Waits()) != 2 {
		t.Errorf("exhausted policy: %v, %+v after %d calls and waits %v", err, res.State, *calls2, clock2.Waits())
	}
}

// A wait honours cancellation with any clock, and a resumed run waits on
// the clock for what is left.
func TestVirtualClockWaitCanceledThenResumed(t *testing.T) {
	clock := graphtest.NewClock(t0)
	store := memory.New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	cfg := graph.Config[retryState, retryUpdate]{Store: store, Clock: clock, Apply: applyRetry}
	g := graph.New(cfg)
	g.AddNode("call", func(context.Context, retryState) (retryUpdate, error) {
		calls++
		if calls == 1 {
			cancel() // the caller goes away while the first attempt fails
			return retryUpdate{Failed: true, At: clock.Now()}, nil
		}
		return retryUpdate{Done: true, At: clock.Now()}, nil
	})
	g.AddConditionalEdges("call", func(s retryState) graph.Route {
		if s.Done {
			return graph.Route{To: []string{graph.End}}
		}
		return graph.Route{To: []string{"call"}, NotBefore: s.FailedAt.Add(time.Minute)}
	}, "call")
	c, err := g.SetEntry("call").Compile()
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(ctx, "t", retryState{})
	if !errors.Is(err, context.Canceled) || res.Status != graph.StatusCanceled || calls != 1 {
		t.Fatalf("run: %v, %s after %d calls", err, res.Status, calls)
	}
	if len(clock.Waits()) != 0 || !clock.Now().Equal(t0) {
		t.Fatalf("a canceled wait moved the clock: waits %v, now %v", clock.Waits(), clock.Now())
	}
	clock.Advance(20 * time.Second) // the process was down for a while
	res, err = c.Resume(context.Background(), "t", nil)
	if err != nil || res.Status != graph.StatusDone || calls != 2 {
		t.Fatalf("resume: %v, %s after %d calls", err, res.Status, calls)
	}
	if !sameTimes(clock.Waits(), []time.Time{t0.Add(time.Minute)}) || !clock.Now().Equal(t0.Add(time.Minute)) {
		t.Errorf("resumed wait: waits %v, now %v; want one wait until %v", clock.Waits(), clock.Now(), t0.Add(time.Minute))
	}
}

// How an application tests its retry policy without a Clock: inside a
// testing/synctest bubble time.Now and timers are virtual, so the default
// clock runs the schedule at once, and the elapsed virtual time is exact.
func TestRetryScheduleInSynctestBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		c, calls := retryGraph(t, graph.Config[retryState, retryUpdate]{}, time.Now, 2)
		res, err := c.Run(context.Background(), "t", retryState{})
		if err != nil || !res.State.Done || *calls != 3 {
			t.Fatalf("run: %v, %+v after %d calls", err, res.State, *calls)
		}
		if el := time.Since(start); el != 3*time.Second {
			t.Errorf("the schedule took %v of virtual time, want 3s (1s + 2s)", el)
		}
		got, _ := starts(res.Trace.Events(), "call")
		want := []time.Time{start, start.Add(time.Second), start.Add(3 * time.Second)}
		if !sameTimes(got, want) {
			t.Errorf("attempts started at %v, want %v", got, want)
		}
	})
}

// Config.Clock wins over Config.Now; Config.Now alone still drives the
// engine's times.
func TestClockAndNow(t *testing.T) {
	other := t0.Add(-time.Hour)
	clock := graphtest.NewClock(t0)
	c, _ := retryGraph(t, graph.Config[retryState, retryUpdate]{Clock: clock, Now: func() time.Time { return other }}, clock.Now, 0)
	res, err := c.Run(context.Background(), "t", retryState{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Trace.All() {
		if !e.Time.Equal(t0) {
			t.Fatalf("%s event at %v, want the Clock's %v", e.Kind, e.Time, t0)
		}
	}
	c, _ = retryGraph(t, graph.Config[retryState, retryUpdate]{Now: func() time.Time { return other }}, time.Now, 0)
	res, err = c.Run(context.Background(), "t", retryState{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Trace.All() {
		if !e.Time.Equal(other) {
			t.Fatalf("%s event at %v, want Config.Now's %v", e.Kind, e.Time, other)
		}
	}
}

// brokenClock fails its waits.
type brokenClock struct{ graphtest.Clock }

var errClockBroken = errors.New("clock source unavailable")

func (*brokenClock) WaitUntil(context.Context, time.Time) error { return errClockBroken }

// A Clock whose wait fails for another reason than ctx fails the run
// instead of running the next step early.
func TestClockWaitFailure(t *testing.T) {
	clock := &brokenClock{}
	clock.Set(t0)
	c, calls := retryGraph(t, graph.Config[retryState, retryUpdate]{Clock: clock}, clock.Now, 1)
	res, err := c.Run(context.Background(), "t", retryState{})
	if !errors.Is(err, errClockBroken) || res.Status != graph.StatusFailed || *calls != 1 {
		t.Fatalf("run: %v, %s after %d calls; want failed with the clock's error after 1", err, res.Status, *calls)
	}
}
