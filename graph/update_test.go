package graph_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
)

// UpdateState writes a new latest checkpoint with the changed state and
// keeps the run where it was: an interrupted run still waits for its answer
// and, answered, finishes with the changed state; its metadata follows the
// state. On every kind of store.
func TestUpdateStateKeepsTheRun(t *testing.T) {
	stores := map[string]func(t *testing.T) checkpoint.Store{
		"memory":      func(*testing.T) checkpoint.Store { return memory.New() },
		"latest-only": func(*testing.T) checkpoint.Store { return memory.NewLatestOnly() },
		"sqlite": func(t *testing.T) checkpoint.Store {
			s, err := sqlite.New(sqlite.Config{Path: filepath.Join(t.TempDir(), "g.db")})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
	}
	for name, mk := range stores {
		t.Run(name, func(t *testing.T) {
			cnt := newCounter()
			g := graph.New(graph.Config[tstate, tupd]{Apply: tapply, Store: mk(t),
				Metadata: func(s tstate) map[string]string { return map[string]string{"answer": s.Answer} }})
			g.AddNode("a", logNode(cnt, "a")).AddEdge("a", "b")
			g.AddNode("b", asker(cnt, "b", "proceed?")).AddEdge("b", "c")
			g.AddNode("c", logNode(cnt, "c")).SetTerminal("c")
			c := compile(t, g.SetEntry("a"))
			ctx := context.Background()
			if res, err := c.Run(ctx, "t", tstate{}); err != nil || res.Status != graph.StatusInterrupted {
				t.Fatalf("run: %v %+v", err, res)
			}
			before := latest(t, c, "t")

			err := c.UpdateState(ctx, "t", func(s tstate) (tstate, error) {
				s.Answer = "renamed"
				return s, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			after := latest(t, c, "t")
			if after.Checkpoint.ID == before.Checkpoint.ID || after.Checkpoint.ParentID != before.Checkpoint.ID {
				t.Fatalf("the update is no new child checkpoint: %v (parent %v) after %v", after.Checkpoint.ID, after.Checkpoint.ParentID, before.Checkpoint.ID)
			}
			if after.Checkpoint.Metadata["answer"] != "renamed" || !slices.Equal(after.Checkpoint.Next, before.Checkpoint.Next) ||
				after.Checkpoint.RunID != before.Checkpoint.RunID || after.Checkpoint.Step != before.Checkpoint.Step {
				t.Fatalf("checkpoint %+v, was %+v", after.Checkpoint, before.Checkpoint)
			}
			if graph.StatusOf(after) != graph.StatusInterrupted || len(graph.Interrupts(after)) != 1 {
				t.Fatalf("the pending interrupt was lost: %+v", after.Writes)
			}
			infos, err := c.Store().Threads(ctx, checkpoint.ThreadFilter{Metadata: map[string]string{"answer": "renamed"}})
			if err != nil || len(infos) != 1 {
				t.Fatalf("threads by the new metadata: %v %+v", err, infos)
			}

			res, err := c.Resume(ctx, "t", "yes")
			if err != nil || res.Status != graph.StatusDone || !slices.Equal(res.State.Log, []string{"a", "b", "c"}) || res.State.Answer != "yes" {
				t.Fatalf("resume: %v %+v", err, res)
			}
			if cnt.get("a") != 1 || cnt.get("b") != 2 || cnt.get("c") != 1 {
				t.Fatalf("executions %v", cnt.n)
			}

			// A finished thread: changed, still finished.
			if err := c.UpdateState(ctx, "t", func(s tstate) (tstate, error) { s.N = 42; return s, nil }); err != nil {
				t.Fatal(err)
			}
			if s, tu, err := c.State(ctx, "t"); err != nil || s.N != 42 || graph.StatusOf(tu) != graph.StatusDone {
				t.Fatalf("state %+v status %s err %v", s, graph.StatusOf(tu), err)
			}

			// fn's error is returned and nothing is written.
			boom := errors.New("no")
			id := latest(t, c, "t").Checkpoint.ID
			if err := c.UpdateState(ctx, "t", func(s tstate) (tstate, error) { return s, boom }); !errors.Is(err, boom) || latest(t, c, "t").Checkpoint.ID != id {
				t.Fatalf("fn failing: %v", err)
			}
			if err := c.UpdateState(ctx, "nope", func(s tstate) (tstate, error) { return s, nil }); !errors.Is(err, checkpoint.ErrNotFound) {
				t.Fatalf("unknown thread: %v", err)
			}
			if err := c.UpdateState(ctx, "", func(s tstate) (tstate, error) { return s, nil }); !errors.Is(err, graph.ErrNoThread) {
				t.Fatalf("empty thread: %v", err)
			}
		})
	}
}

// A thread that is running or held is not changed under the run.
func TestUpdateStateBusyThread(t *testing.T) {
	cnt := newCounter()
	c := chain(cnt, nil, logNode(cnt, "b"))
	ctx := context.Background()
	if _, err := c.Run(ctx, "t", tstate{}); err != nil {
		t.Fatal(err)
	}
	h, err := c.HoldThread("t")
	if err != nil {
		t.Fatal(err)
	}
	noop := func(s tstate) (tstate, error) { return s, nil }
	if err := c.UpdateState(ctx, "t", noop); !errors.Is(err, graph.ErrThreadBusy) {
		t.Fatalf("held thread: %v", err)
	}
	// The holder itself may.
	if err := c.UpdateState(graph.WithThreadHold(ctx, h), "t", noop); err != nil {
		t.Fatalf("under the hold: %v", err)
	}
	h.Release()
	if err := c.UpdateState(ctx, "t", noop); err != nil {
		t.Fatal(err)
	}
}
