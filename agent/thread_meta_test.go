package agent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/state"
)

// A thread renamed while it waits for an approval keeps waiting: the
// approval is still pending, answering it carries out the write once, and
// the new title is listed and carried into later turns. The agent's own
// keys cannot be set; an unknown thread is reported as such.
func TestSetThreadMetadata(t *testing.T) {
	w := writeWorld()
	a := mustAgent(t, withOptions(w.config(t), writesOn))
	ctx := context.Background()
	o := a.Run(ctx, agent.TurnRequest{Thread: "t", Input: "raise the voltage", Metadata: map[string]string{"owner": "alice", "meta.title": "voltage"}})
	var ap *state.Approval
	for ev, err := range o {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == agent.EventApprovalRequired {
			ap = ev.Approval
		}
	}
	if ap == nil {
		t.Fatal("no approval asked")
	}

	if err := a.SetThreadMetadata(ctx, "t", map[string]string{"meta.title": "RF voltage raise", "meta.pinned": "yes"}); err != nil {
		t.Fatal(err)
	}
	s, status, err := a.State(ctx, "t")
	if err != nil || status != agent.RunInterrupted || s.Turn.PendingApproval == nil || s.Turn.PendingApproval.ID != ap.ID {
		t.Fatalf("after the rename: %v %s %+v", err, status, s.Turn.PendingApproval)
	}
	if s.Metadata["meta.title"] != "RF voltage raise" || s.Metadata["owner"] != "alice" || s.Metadata["meta.pinned"] != "yes" {
		t.Fatalf("metadata %v", s.Metadata)
	}
	infos, err := a.Threads(ctx, checkpoint.ThreadFilter{Metadata: map[string]string{"owner": "alice", "meta.title": "RF voltage raise"}})
	if err != nil || len(infos) != 1 {
		t.Fatalf("listed by the new title: %v %+v", err, infos)
	}

	// A key set to "" is removed.
	if err := a.SetThreadMetadata(ctx, "t", map[string]string{"meta.pinned": ""}); err != nil {
		t.Fatal(err)
	}
	if s, _, _ := a.State(ctx, "t"); s.Metadata["meta.pinned"] != "" || s.Metadata["meta.title"] != "RF voltage raise" {
		t.Fatalf("metadata %v", s.Metadata)
	}

	if o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Approved: yes()}); o.err != nil || o.last().Status != agent.RunAnswered {
		t.Fatalf("resume: %v %+v", o.err, o.last())
	}
	if n := w.caps["write_x"].count(); n != 1 {
		t.Fatalf("write_x ran %d times, want once", n)
	}
	if o := run(t, a, "t", "read it again"); o.err != nil {
		t.Fatal(o.err)
	}
	if s, _, _ := a.State(ctx, "t"); s.Metadata["meta.title"] != "RF voltage raise" {
		t.Fatalf("a later turn lost the title: %v", s.Metadata)
	}

	for _, k := range []string{"owner", "tenant", "user", "application", "graph_version", "allowed_capabilities"} {
		if err := a.SetThreadMetadata(ctx, "t", map[string]string{k: "mallory"}); !errors.Is(err, agent.ErrBadRequest) {
			t.Errorf("setting %q: %v, want ErrBadRequest", k, err)
		}
	}
	if s, _, _ := a.State(ctx, "t"); s.Metadata["owner"] != "alice" {
		t.Fatalf("owner changed: %v", s.Metadata)
	}
	if err := a.SetThreadMetadata(ctx, "nope", map[string]string{"meta.title": "x"}); !errors.Is(err, agent.ErrUnknownThread) {
		t.Fatalf("unknown thread: %v", err)
	}
}

// While a run holds the thread, its metadata is not changed under it.
func TestSetThreadMetadataWhileRunning(t *testing.T) {
	w := newWorld("read_a")
	w.caps["read_a"].errs = []error{errHang}
	a := mustAgent(t, w.config(t))
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range a.Run(ctx, agent.TurnRequest{Thread: "t", Input: "read"}) {
			if ev.Type == agent.EventStepStart {
				close(started)
			}
		}
	}()
	<-started
	if err := a.SetThreadMetadata(context.Background(), "t", map[string]string{"meta.title": "x"}); !errors.Is(err, graph.ErrThreadBusy) {
		t.Errorf("while running: %v, want ErrThreadBusy", err)
	}
	cancel()
	<-done
	if err := a.SetThreadMetadata(context.Background(), "t", map[string]string{"meta.title": "x"}); err != nil {
		t.Fatalf("after the run: %v", err)
	}
}
