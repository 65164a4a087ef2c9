package graph_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// Init makes a thread exist before any run: listed, done, and the start of
// the first run, which sees its state; a second Init changes nothing. So
// over a store that checks and writes the first checkpoint in one step
// (checkpoint.FirstPutter), and over one Init must read first.
func TestInitCreatesAThreadBeforeAnyRun(t *testing.T) {
	t.Run("FirstPutter", func(t *testing.T) { testInit(t, memory.New()) })
	t.Run("read, then put", func(t *testing.T) {
		var s checkpoint.Store = storeOnly{memory.New()}
		if _, ok := s.(checkpoint.FirstPutter); ok {
			t.Fatal("the wrapped store is a FirstPutter")
		}
		testInit(t, s)
	})
}

// storeOnly is a store with the methods of checkpoint.Store only.
type storeOnly struct{ checkpoint.Store }

func testInit(t *testing.T, store checkpoint.Store) {
	ctx := context.Background()
	cnt := newCounter()
	g := compile(t, graph.New(graph.Config[tstate, tupd]{Apply: tapply, Store: store,
		Metadata: func(s tstate) map[string]string { return map[string]string{"answer": s.Answer} }}).
		AddNode("a", logNode(cnt, "a")).AddEdge("a", graph.End).SetEntry("a"))
	created, err := g.Init(ctx, "t1", tstate{Answer: "owner-alice", Log: []string{"created"}})
	if err != nil || !created {
		t.Fatalf("Init = %v, %v", created, err)
	}
	ts, err := store.Threads(ctx, checkpoint.ThreadFilter{Metadata: map[string]string{"answer": "owner-alice"}})
	if err != nil || len(ts) != 1 || ts[0].ThreadID != "t1" {
		t.Fatalf("Threads = %+v, %v", ts, err)
	}
	s, tu, err := g.State(ctx, "t1")
	if err != nil || graph.StatusOf(tu) != graph.StatusDone || !slices.Equal(s.Log, []string{"created"}) || cnt.get("a") != 0 {
		t.Fatalf("state %+v status %s err %v; a ran %d times", s, graph.StatusOf(tu), err, cnt.get("a"))
	}
	if created, err := g.Init(ctx, "t1", tstate{Answer: "someone else"}); err != nil || created {
		t.Fatalf("second Init = %v, %v", created, err)
	}
	if _, err := g.Resume(ctx, "t1", nil); err == nil {
		t.Fatal("Resume of a thread with nothing to run succeeded")
	}
	res, err := g.Run(ctx, "t1", tstate{Log: s.Log, Answer: s.Answer})
	if err != nil || res.Status != graph.StatusDone || !slices.Equal(res.State.Log, []string{"created", "a"}) {
		t.Fatalf("run after Init: %+v, %v", res, err)
	}
	if _, err := g.Init(ctx, "", tstate{}); err == nil {
		t.Fatal("Init of an empty thread id succeeded")
	}
	// The run's first checkpoint follows the initial one.
	list, _ := store.List(ctx, "t1", checkpoint.ListOptions{})
	if len(list) < 2 || list[len(list)-1].Next != nil || list[len(list)-2].ParentID != list[len(list)-1].ID || list[len(list)-1].ParentID != uuid.Nil {
		t.Fatalf("checkpoints %+v", list)
	}
	// The first run takes the initial checkpoint's run id (so pruning its
	// intermediate checkpoints takes the initial one too); the next has
	// its own.
	initial := list[len(list)-1]
	if res.RunID != initial.RunID {
		t.Fatalf("first run's id %s; want the initial checkpoint's %s", res.RunID, initial.RunID)
	}
	next, err := g.Run(ctx, "t1", res.State)
	if err != nil || next.RunID == initial.RunID || next.RunID == uuid.Nil {
		t.Fatalf("second run: id %s, %v; want a new run id", next.RunID, err)
	}
}
