package agent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// A created thread exists in the store before its first turn (listed by
// its metadata, answered with no turn), the first turn keeps the metadata,
// and creating it again changes nothing.
func TestCreateThreadBeforeTheFirstTurn(t *testing.T) {
	ctx := context.Background()
	w := newWorld("read")
	cfg := w.config(t, "read")
	store := memory.New()
	cfg.Store = store
	a := mustAgent(t, cfg)
	created, err := a.CreateThread(ctx, "t1", map[string]string{"owner": "alice", "meta.title": "Beam"})
	if err != nil || !created {
		t.Fatalf("CreateThread = %v, %v", created, err)
	}
	infos, err := a.Threads(ctx, checkpoint.ThreadFilter{Metadata: map[string]string{"owner": "alice"}})
	if err != nil || len(infos) != 1 || infos[0].ThreadID != "t1" || infos[0].Metadata["meta.title"] != "Beam" {
		t.Fatalf("Threads = %+v, %v", infos, err)
	}
	st, status, err := a.State(ctx, "t1")
	if err != nil || status != agent.RunAnswered || st.Turn.Number != 0 || len(st.Messages) != 0 {
		t.Fatalf("State = %+v %s %v", st.Turn, status, err)
	}
	if created, err := a.CreateThread(ctx, "t1", map[string]string{"owner": "mallory"}); err != nil || created {
		t.Fatalf("second CreateThread = %v, %v", created, err)
	}
	if u, _ := a.Unfinished(ctx); len(u) != 0 {
		t.Fatalf("a created thread counts as unfinished: %v", u)
	}
	o := run(t, a, "t1", "read it")
	if o.err != nil || o.last().Status != agent.RunAnswered {
		t.Fatalf("first turn: %v %+v", o.err, o.last())
	}
	st, _, _ = a.State(ctx, "t1")
	if st.Turn.Number != 1 || st.Metadata["owner"] != "alice" || st.Metadata["meta.title"] != "Beam" {
		t.Fatalf("after the first turn: turn %d metadata %v", st.Turn.Number, st.Metadata)
	}
	if _, err := a.CreateThread(ctx, " ", nil); err == nil {
		t.Fatal("CreateThread with a blank id succeeded")
	}
	if a.RunStore() == nil {
		t.Fatal("the memory store keeps run records, but RunStore is nil")
	}
}

// A thread held by a run that has not written its first checkpoint does
// not exist yet: CreateThread says busy, not "exists"; once a checkpoint
// is there, a busy thread exists.
func TestCreateThreadOnAHeldThread(t *testing.T) {
	ctx := context.Background()
	w := newWorld("read")
	a := mustAgent(t, w.config(t, "read"))
	h, err := a.Graph().HoldThread("t1")
	if err != nil {
		t.Fatal(err)
	}
	if created, err := a.CreateThread(ctx, "t1", nil); created || !errors.Is(err, graph.ErrThreadBusy) {
		t.Fatalf("CreateThread on a held thread without checkpoints = %v, %v; want ErrThreadBusy", created, err)
	}
	h.Release()
	if created, err := a.CreateThread(ctx, "t1", nil); !created || err != nil {
		t.Fatalf("CreateThread after the hold = %v, %v", created, err)
	}
	if h, err = a.Graph().HoldThread("t1"); err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	if created, err := a.CreateThread(ctx, "t1", nil); created || err != nil {
		t.Fatalf("CreateThread on a held thread that exists = %v, %v; want false, nil", created, err)
	}
}
