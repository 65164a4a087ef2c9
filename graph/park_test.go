package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/graphtest"
)

// A wait longer than WithParkAfter is not waited: the run ends waiting,
// its checkpoint holding the NotBefore, and Resume at that time continues
// with the same schedule as a run that waited in place.
func TestParkedWaitResumesOnSchedule(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := graphtest.NewClock(t0)
	g, calls := retryGraph(t, graph.Config[retryState, retryUpdate]{Clock: clk}, clk.Now, 2)
	ctx := graph.WithParkAfter(context.Background(), 1500*time.Millisecond)

	// First attempt fails at t0; the 1 s wait is under the threshold and
	// is waited in place; the second fails at t0+1s; the 2 s wait parks.
	res, err := g.Run(ctx, "th", retryState{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != graph.StatusWaiting {
		t.Fatalf("status = %s, want waiting", res.Status)
	}
	wantNB := t0.Add(time.Second).Add(2 * time.Second)
	if !res.NotBefore.Equal(wantNB) || *calls != 2 {
		t.Fatalf("NotBefore = %s after %d calls, want %s after 2", res.NotBefore, *calls, wantNB)
	}
	if w := clk.Waits(); len(w) != 1 || !w[0].Equal(t0.Add(time.Second)) {
		t.Fatalf("waits = %v, want only the 1 s wait in place", w)
	}
	events := res.Trace.Events()
	end := events[len(events)-1]
	if end.Kind != graph.EventRunEnd || !end.NotBefore.Equal(wantNB) || end.Err != nil {
		t.Fatalf("last event = %+v, want a run_end carrying NotBefore", end)
	}
	_, tup, err := g.State(context.Background(), "th")
	if err != nil || !tup.Checkpoint.NotBefore.Equal(wantNB) {
		t.Fatalf("checkpoint NotBefore = %s (%v), want %s", tup.Checkpoint.NotBefore, err, wantNB)
	}

	// Resumed early, it parks again for what is left, running nothing.
	clk.Advance(200 * time.Millisecond)
	res, err = g.Resume(ctx, "th", nil)
	if err != nil || res.Status != graph.StatusWaiting || *calls != 2 {
		t.Fatalf("early resume: %s %v after %d calls, want waiting after 2", res.Status, err, *calls)
	}
	// Resumed when due, the third attempt runs at the scheduled time.
	clk.Set(wantNB)
	res, err = g.Resume(ctx, "th", nil)
	if err != nil || res.Status != graph.StatusDone || *calls != 3 || !res.State.Done {
		t.Fatalf("resume when due: %s %v after %d calls, want done after 3", res.Status, err, *calls)
	}
	ts, _ := starts(res.Trace.Events(), "call")
	if len(ts) != 1 || !ts[0].Equal(wantNB) {
		t.Fatalf("third attempt started at %v, want %s", ts, wantNB)
	}
}

// Without WithParkAfter (or with a wait under it) nothing changes: the
// run waits in place.
func TestNoParkWithoutThreshold(t *testing.T) {
	clk := graphtest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	g, calls := retryGraph(t, graph.Config[retryState, retryUpdate]{Clock: clk}, clk.Now, 2)
	res, err := g.Run(graph.WithParkAfter(context.Background(), time.Hour), "th", retryState{})
	if err != nil || res.Status != graph.StatusDone || *calls != 3 || len(clk.Waits()) != 2 {
		t.Fatalf("%s %v calls %d waits %v, want done after 3 calls and 2 waits", res.Status, err, *calls, clk.Waits())
	}
}
