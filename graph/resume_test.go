package graph_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// chain builds a → b → c (terminal); b is given, a and c count and log.
func chain(cnt *counter, store checkpoint.Store, b graph.NodeFunc[tstate, tupd]) *graph.Compiled[tstate, tupd] {
	g := newGraph(store)
	g.AddNode("a", logNode(cnt, "a")).AddEdge("a", "b")
	g.AddNode("b", b).AddEdge("b", "c")
	g.AddNode("c", logNode(cnt, "c")).SetTerminal("c")
	c, err := g.SetEntry("a").Compile()
	if err != nil {
		panic(err)
	}
	return c
}

func TestCancelBetweenNodes(t *testing.T) {
	// a cancels the run and returns normally: its step is saved (work that is
	// done is not thrown away), and the run stops before b.
	cnt := newCounter()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := newGraph(nil)
	g.AddNode("a", func(context.Context, tstate) (tupd, error) {
		cnt.inc("a")
		cancel()
		return tupd{Log: "a", N: 1}, nil
	}).AddEdge("a", "b")
	g.AddNode("b", logNode(cnt, "b")).AddEdge("b", "c")
	g.AddNode("c", logNode(cnt, "c")).SetTerminal("c")
	c := compile(t, g.SetEntry("a"))

	res, err := c.Run(ctx, "t", tstate{})
	if !errors.Is(err, context.Canceled) || res.Status != graph.StatusCanceled {
		t.Fatalf("run: %v, status %s", err, res.Status)
	}
	if res.Steps != 1 || !slices.Equal(res.State.Log, []string{"a"}) || cnt.get("b") != 0 {
		t.Fatalf("result %+v, b ran %d", res, cnt.get("b"))
	}
	if graph.StatusOf(latest(t, c, "t")) != graph.StatusCanceled {
		t.Fatal("stored status is not canceled")
	}
	res, err = c.Resume(context.Background(), "t", nil)
	if err != nil || res.Status != graph.StatusDone || !slices.Equal(res.State.Log, []string{"a", "b", "c"}) {
		t.Fatalf("resume: %v, %+v", err, res)
	}
	if cnt.get("a") != 1 || cnt.get("b") != 1 || cnt.get("c") != 1 {
		t.Fatalf("executions %v", cnt.n)
	}
}

func TestCancelInsideNode(t *testing.T) {
	cnt := newCounter()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := chain(cnt, nil, func(nctx context.Context, s tstate) (tupd, error) {
		cnt.inc("b")
		if cnt.get("b") == 1 {
			cancel()
			<-nctx.Done() // the node sees the run's ctx
			return tupd{}, nctx.Err()
		}
		return tupd{Log: "b", N: 1}, nil
	})
	res, err := c.Run(ctx, "t", tstate{})
	if !errors.Is(err, context.Canceled) || res.Status != graph.StatusCanceled || res.Steps != 1 {
		t.Fatalf("run: %v, %+v", err, res)
	}
	end := eventsOf(res.Trace.Events(), graph.EventNodeEnd)
	if len(end) != 2 || end[1].Node != "b" || !errors.Is(end[1].Err, context.Canceled) {
		t.Fatalf("node_end events %+v", end)
	}
	// A cancellation is not a failure: nothing is recorded as an error.
	if tu := latest(t, c, "t"); graph.StatusOf(tu) != graph.StatusCanceled || len(tu.Writes) != 0 {
		t.Fatalf("stored %+v", tu)
	}
	res, err = c.Resume(context.Background(), "t", nil)
	if err != nil || !slices.Equal(res.State.Log, []string{"a", "b", "c"}) {
		t.Fatalf("resume: %v, %+v", err, res)
	}
	if cnt.get("a") != 1 || cnt.get("b") != 2 || cnt.get("c") != 1 {
		t.Fatalf("executions %v", cnt.n)
	}
}

func TestCanceledBeforeStart(t *testing.T) {
	cnt := newCounter()
	c := chain(cnt, nil, logNode(cnt, "b"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := c.Run(ctx, "t", tstate{})
	if !errors.Is(err, context.Canceled) || res.Status != graph.StatusCanceled || cnt.get("a") != 0 {
		t.Fatalf("run with a canceled ctx: %v, %+v, a ran %d", err, res, cnt.get("a"))
	}
}

// spokes builds hub → (x, y, z) → join (terminal). x and z finish; y is given.
func spokes(cnt *counter, store checkpoint.Store, y graph.NodeFunc[tstate, tupd]) *graph.Compiled[tstate, tupd] {
	g := newGraph(store)
	g.AddNode("hub", logNode(cnt, "hub"))
	g.AddConditionalEdges("hub", func(tstate) graph.Route { return graph.Route{To: []string{"x", "y", "z"}} }, "x", "y", "z")
	g.AddNode("x", logNode(cnt, "x")).AddEdge("x", "join")
	g.AddNode("y", y).AddEdge("y", "join")
	g.AddNode("z", logNode(cnt, "z")).AddEdge("z", "join")
	g.AddNode("join", logNode(cnt, "join")).SetTerminal("join")
	c, err := g.SetEntry("hub").Compile()
	if err != nil {
		panic(err)
	}
	return c
}

func TestResumeAbandonedRunWithNewEngine(t *testing.T) {
	store := memory.New()
	// The first engine: y hangs until its run is abandoned (ctx canceled, as
	// when the process is stopped); x and z finish before that.
	first := newCounter()
	ctx, cancel := context.WithCancel(context.Background())
	c1 := spokes(first, store, func(nctx context.Context, s tstate) (tupd, error) {
		first.inc("y")
		// Wait for the siblings, so the test controls what finished.
		if err := first.waitFor(nctx, "x", "z"); err != nil {
			return tupd{}, err
		}
		cancel()
		<-nctx.Done()
		return tupd{}, nctx.Err()
	})
	res, err := c1.Run(ctx, "t", tstate{})
	if !errors.Is(err, context.Canceled) || res.Status != graph.StatusCanceled || res.Steps != 1 {
		t.Fatalf("first run: %v, %+v", err, res)
	}
	// What the store holds: step 1 with the finished siblings' updates.
	tu, err := store.Get(context.Background(), "t", [16]byte{})
	if err != nil {
		t.Fatal(err)
	}
	var done []string
	for _, w := range tu.Writes {
		if w.Kind == checkpoint.WriteUpdate {
			done = append(done, w.Task)
		}
	}
	slices.Sort(done)
	if tu.Checkpoint.Step != 1 || !slices.Equal(done, []string{"x", "z"}) {
		t.Fatalf("stored step %d, pending updates of %v", tu.Checkpoint.Step, done)
	}

	// A new engine instance on the same store finishes the run, running only
	// the unfinished branch and what follows.
	second := newCounter()
	c2 := spokes(second, store, logNode(second, "y"))
	res, err = c2.Resume(context.Background(), "t", nil)
	if err != nil || res.Status != graph.StatusDone {
		t.Fatalf("resume: %v, %+v", err, res)
	}
	if second.get("hub") != 0 || second.get("x") != 0 || second.get("z") != 0 || second.get("y") != 1 || second.get("join") != 1 {
		t.Fatalf("second engine ran %v", second.n)
	}
	if want := []string{"hub", "x", "y", "z", "join"}; !slices.Equal(res.State.Log, want) || res.State.N != 5 {
		t.Fatalf("state %+v, want log %v", res.State, want)
	}
	if res.RunID != tu.Checkpoint.RunID {
		t.Fatal("the resumed run has another run id")
	}
}

func TestFailedBranchThenResumeRetriesOnlyIt(t *testing.T) {
	cnt := newCounter()
	c := spokes(cnt, nil, func(context.Context, tstate) (tupd, error) {
		cnt.inc("y")
		if cnt.get("y") == 1 {
			return tupd{}, errFlaky
		}
		return tupd{Log: "y", N: 1}, nil
	})
	_, err := c.Run(context.Background(), "t", tstate{})
	var ne *graph.NodeError
	if !errors.As(err, &ne) || ne.Node != "y" || !errors.Is(err, errFlaky) {
		t.Fatalf("run: %v", err)
	}
	if graph.StatusOf(latest(t, c, "t")) != graph.StatusFailed {
		t.Fatal("not failed")
	}
	res, err := c.Resume(context.Background(), "t", nil)
	if err != nil || !slices.Equal(res.State.Log, []string{"hub", "x", "y", "z", "join"}) {
		t.Fatalf("resume: %v, %+v", err, res)
	}
	if cnt.get("x") != 1 || cnt.get("z") != 1 || cnt.get("y") != 2 || cnt.get("hub") != 1 {
		t.Fatalf("executions %v", cnt.n)
	}
}
