package graph_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// delayed builds first → (NotBefore: +10s) → second → End, the shape of a
// durable retry delay.
func delayed(cnt *counter, store *memory.Store) *graph.Compiled[tstate, tupd] {
	g := newGraph(store)
	g.AddNode("first", logNode(cnt, "first"))
	g.AddConditionalEdges("first", func(s tstate) graph.Route {
		// A pure function of the state: the deadline is derived from data
		// the state holds (here a fixed epoch plus 10 s, as a retry policy
		// would store "not before" in the state).
		return graph.Route{To: []string{"second"}, NotBefore: epoch.Add(10 * time.Second)}
	}, "second")
	g.AddNode("second", logNode(cnt, "second")).AddEdge("second", graph.End)
	c, err := g.SetEntry("first").Compile()
	if err != nil {
		panic(err)
	}
	return c
}

// epoch is the start of synctest's fake clock.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func TestNotBeforeWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if !time.Now().Equal(epoch) {
			t.Fatalf("synctest epoch moved: %v", time.Now())
		}
		cnt := newCounter()
		c := delayed(cnt, memory.New())
		res, err := c.Run(context.Background(), "t", tstate{})
		if err != nil || res.Status != graph.StatusDone {
			t.Fatalf("run: %v, %+v", err, res)
		}
		if got := time.Since(epoch); got != 10*time.Second {
			t.Fatalf("run took %v, want 10s", got)
		}
		waits := eventsOf(res.Trace.Events(), graph.EventWait)
		if len(waits) != 1 || !waits[0].NotBefore.Equal(epoch.Add(10*time.Second)) || !slices.Equal(waits[0].To, []string{"second"}) {
			t.Fatalf("wait events %+v", waits)
		}
		// The node after the wait started at the deadline, not before.
		for _, e := range eventsOf(res.Trace.Events(), graph.EventNodeStart) {
			if e.Node == "second" && e.Time.Before(epoch.Add(10*time.Second)) {
				t.Fatalf("second started at %v", e.Time)
			}
		}
	})
}

func TestNotBeforeCanceledThenResumedWaitsTheRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cnt := newCounter()
		store := memory.New()
		c := delayed(cnt, store)
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		defer cancel()
		res, err := c.Run(ctx, "t", tstate{})
		if !errors.Is(err, context.DeadlineExceeded) || res.Status != graph.StatusCanceled {
			t.Fatalf("run: %v, %+v", err, res)
		}
		if got := time.Since(epoch); got != 4*time.Second {
			t.Fatalf("the canceled wait returned after %v, want 4s", got)
		}
		if cnt.get("second") != 0 {
			t.Fatal("second ran before its time")
		}
		time.Sleep(3 * time.Second) // the process is down for a while

		// A new engine on the same store waits only what is left: 3 s.
		c2 := delayed(cnt, store)
		t0 := time.Now()
		res, err = c2.Resume(context.Background(), "t", nil)
		if err != nil || res.Status != graph.StatusDone {
			t.Fatalf("resume: %v, %+v", err, res)
		}
		if got := time.Since(t0); got != 3*time.Second {
			t.Fatalf("resumed run waited %v, want 3s", got)
		}
		if cnt.get("first") != 1 || cnt.get("second") != 1 {
			t.Fatalf("executions %v", cnt.n)
		}

		// Past the deadline, a resume does not wait at all.
		res, err = delayed(cnt, store).Run(context.Background(), "late", tstate{})
		if err != nil || len(eventsOf(res.Trace.Events(), graph.EventWait)) != 0 {
			t.Fatalf("run past the deadline: %v, waits %v", err, kinds(res.Trace.Events()))
		}
	})
}
