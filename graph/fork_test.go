package graph_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
)

// Fork starts a new thread from a checkpoint of another: the state as fn
// changes it, the same nodes next, only the pending writes kept; a run
// resumed on the fork goes on from there, and the original is unchanged.
func TestForkFromACheckpoint(t *testing.T) {
	s, err := sqlite.New(sqlite.Config{Path: filepath.Join(t.TempDir(), "g.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	cnt := newCounter()
	g := graph.New(graph.Config[tstate, tupd]{Apply: tapply, Store: s,
		Metadata: func(s tstate) map[string]string { return map[string]string{"answer": s.Answer} }})
	g.AddNode("a", logNode(cnt, "a")).AddEdge("a", "b")
	g.AddNode("b", asker(cnt, "b", "proceed?")).AddEdge("b", "c")
	g.AddNode("c", logNode(cnt, "c")).SetTerminal("c")
	c := compile(t, g.SetEntry("a"))
	ctx := context.Background()
	if res, err := c.Run(ctx, "orig", tstate{}); err != nil || res.Status != graph.StatusInterrupted {
		t.Fatalf("run: %v %+v", err, res)
	}
	at := latest(t, c, "orig")
	cp, err := c.Fork(ctx, "orig", at.Checkpoint.ID, "fork", func(s tstate) (tstate, []string, error) {
		s.Answer = "forked"
		return s, nil, nil
	}, func(w checkpoint.Write) bool { return w.Kind == checkpoint.WriteUpdate })
	if err != nil {
		t.Fatal(err)
	}
	if cp.ThreadID != "fork" || cp.ParentID != uuid.Nil || cp.ID == at.Checkpoint.ID || cp.RunID == at.Checkpoint.RunID ||
		!slices.Equal(cp.Next, at.Checkpoint.Next) || cp.Metadata["answer"] != "forked" {
		t.Fatalf("fork checkpoint %+v from %+v", cp, at.Checkpoint)
	}
	f := latest(t, c, "fork")
	if graph.StatusOf(f) != graph.StatusCanceled || len(graph.Interrupts(f)) != 0 {
		t.Fatalf("the fork kept the original's question: %+v", f.Writes)
	}
	// Resumed, the fork asks its own question; the original still waits.
	if res, err := c.Resume(ctx, "fork", nil); err != nil || res.Status != graph.StatusInterrupted {
		t.Fatalf("fork resumed: %v %+v", err, res)
	}
	if res, err := c.Resume(ctx, "fork", "yes"); err != nil || res.Status != graph.StatusDone || !slices.Equal(res.State.Log, []string{"a", "b", "c"}) {
		t.Fatalf("fork answered: %v %+v", err, res)
	}
	if o := latest(t, c, "orig"); o.Checkpoint.ID != at.Checkpoint.ID || graph.StatusOf(o) != graph.StatusInterrupted {
		t.Fatalf("the original changed: %+v", o.Checkpoint)
	}

	// next replaces the nodes to run; errors write nothing.
	if cp, err := c.Fork(ctx, "orig", uuid.Nil, "fork2", func(s tstate) (tstate, []string, error) { return s, []string{"c"}, nil }, nil); err != nil || !slices.Equal(cp.Next, []string{"c"}) {
		t.Fatalf("fork with next: %v %+v", err, cp)
	}
	boom := errors.New("no")
	if _, err := c.Fork(ctx, "orig", uuid.Nil, "fork3", func(s tstate) (tstate, []string, error) { return s, nil, boom }, nil); !errors.Is(err, boom) {
		t.Fatalf("fn failing: %v", err)
	}
	if _, err := c.Store().Get(ctx, "fork3", uuid.Nil); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("a failed fork wrote: %v", err)
	}
	if _, err := c.Fork(ctx, "orig", uuid.Nil, "fork", nil, nil); !errors.Is(err, graph.ErrThreadExists) {
		t.Fatalf("fork onto an existing thread: %v", err)
	}
	if _, err := c.Fork(ctx, "nope", uuid.Nil, "fork4", nil, nil); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("fork of an unknown thread: %v", err)
	}
	if _, err := c.Fork(ctx, "orig", uuid.Nil, "", nil, nil); !errors.Is(err, graph.ErrNoThread) {
		t.Fatalf("fork to no thread: %v", err)
	}
}
