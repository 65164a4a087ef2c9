package agent_test

import (
	"context"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/state"
)

func listCPs(t *testing.T, s checkpoint.Store, thread string) []checkpoint.Checkpoint {
	t.Helper()
	cps, err := s.List(context.Background(), thread, checkpoint.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cps
}

// By default a thread keeps the checkpoint each turn ended with, nothing
// else: the turn's intermediate checkpoints go with its last commit. A run
// waiting for an approval keeps all of its own until it ends, and resumes
// from them; the audit record of the approved write stays; the next turn
// still sees the conversation.
func TestFinishedTurnsArePruned(t *testing.T) {
	store, err := sqlite.New(sqlite.Config{Path: filepath.Join(t.TempDir(), "p.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	w := writeWorld()
	cfg := withOptions(w.config(t), state.Options{WritesEnabled: true, ApprovalMode: state.ApprovalModeSelective})
	cfg.Store = store
	a := mustAgent(t, cfg)

	if _, err := store.AppendRecords(context.Background(), checkpoint.Record{Kind: "audit", Thread: "t", Data: []byte(`{"by":"test"}`)}); err != nil {
		t.Fatal(err)
	}
	ap := approvalOf(t, run(t, a, "t", "raise the voltage"))
	waiting := listCPs(t, store, "t")
	if len(waiting) < 4 {
		t.Fatalf("a run waiting for approval keeps %d checkpoints, want all of its steps", len(waiting))
	}
	o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes"})
	wantAnswer(t, o)
	if len(w.effects()) != 1 {
		t.Fatalf("write_x took effect %d times, want once", len(w.effects()))
	}
	cps := listCPs(t, store, "t")
	if len(cps) != 1 || len(cps[0].Next) != 0 {
		t.Fatalf("after the turn: %d checkpoints (latest next %v), want only the one it ended with", len(cps), cps[0].Next)
	}
	recs, err := store.Records(context.Background(), checkpoint.RecordFilter{Thread: "t"})
	if err != nil || len(recs) != 1 {
		t.Fatalf("records after pruning: %d, %v; want the one appended", len(recs), err)
	}
	// The next turn waits for its approval too: the first turn's last
	// checkpoint and all of the waiting run are kept; once it ends, each
	// turn's last, and the conversation is whole.
	ap = approvalOf(t, run(t, a, "t", "raise it again"))
	if cps := listCPs(t, store, "t"); len(cps) != 1+len(waiting) {
		t.Fatalf("second turn waiting: %d checkpoints, want the first turn's last and the %d of the waiting run", len(cps), len(waiting))
	}
	wantAnswer(t, resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes"}))
	s, status, err := a.State(context.Background(), "t")
	if err != nil || status != agent.RunAnswered || len(s.Messages) != 4 {
		t.Fatalf("second turn: %v, %s, %d messages; want the whole conversation", err, status, len(s.Messages))
	}
	if cps := listCPs(t, store, "t"); len(cps) != 2 || len(cps[0].Next)+len(cps[1].Next) != 0 {
		t.Fatalf("after two turns: %d checkpoints, want each turn's last", len(cps))
	}
}

// A negative KeepIntermediate keeps every checkpoint; a positive one keeps
// a finished turn's for that long: the thread's next turn ending later
// prunes them, and a sweep started by turns ending prunes those of threads
// no turn comes back to.
func TestKeepIntermediate(t *testing.T) {
	t.Run("forever", func(t *testing.T) {
		store := memory.New()
		cfg := newWorld("read_a").config(t)
		cfg.Store, cfg.KeepIntermediate = store, -1
		a := mustAgent(t, cfg)
		wantAnswer(t, run(t, a, "t", "x"))
		wantAnswer(t, run(t, a, "t", "y"))
		if n := len(listCPs(t, store, "t")); n < 10 {
			t.Fatalf("%d checkpoints kept, want every step of both turns", n)
		}
		if res, err := a.Prune(context.Background()); err != nil || res != (checkpoint.PruneResult{}) {
			t.Fatalf("Prune with KeepIntermediate < 0 = %+v, %v; want nothing", res, err)
		}
	})
	t.Run("an hour", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			store := memory.New()
			cfg := newWorld("read_a").config(t)
			cfg.Store, cfg.KeepIntermediate, cfg.Application = store, time.Hour, "app"
			a := mustAgent(t, cfg)
			wantAnswer(t, run(t, a, "old", "x"))
			synctest.Wait() // the first turn's sweep finds nothing to do
			wantAnswer(t, run(t, a, "t", "x"))
			synctest.Wait()
			whole := len(listCPs(t, store, "t"))
			if whole < 5 || len(listCPs(t, store, "old")) != whole {
				t.Fatalf("just after the turns: %d checkpoints, want every step kept", whole)
			}
			time.Sleep(30 * time.Minute)
			wantAnswer(t, run(t, a, "t", "y"))
			synctest.Wait()
			if n := len(listCPs(t, store, "t")); n != 2*whole {
				t.Fatalf("after 30 minutes: %d checkpoints, want both turns whole (%d)", n, 2*whole)
			}
			time.Sleep(45 * time.Minute)
			// The first turn of t ended 75 minutes ago, the second 45.
			wantAnswer(t, run(t, a, "t", "z"))
			synctest.Wait()
			if n := len(listCPs(t, store, "t")); n != 1+2*whole {
				t.Fatalf("75 minutes after the first turn: %d checkpoints, want its last and the two later turns whole (%d)", n, 1+2*whole)
			}
			// "old" had no turn since; the sweep the last turn started
			// (15 minutes, a quarter of the hour, after the one before)
			// pruned it.
			if n := len(listCPs(t, store, "old")); n != 1 {
				t.Fatalf("thread old keeps %d checkpoints, want its turn's last: the sweep missed it", n)
			}
		})
	})
}

// A thread made before its first turn (CreateThread, as the server makes
// every thread before its 201) keeps one checkpoint once that turn has
// ended, as a thread its first turn made: the creation checkpoint is the
// first run's own and is pruned with its intermediate ones. The thread
// keeps its metadata, its creation time and its place in the list.
func TestCreatedThreadKeepsOneCheckpointPerTurn(t *testing.T) {
	stores := map[string]func(t *testing.T) checkpoint.Store{
		"memory": func(*testing.T) checkpoint.Store { return memory.New() },
		"sqlite": func(t *testing.T) checkpoint.Store {
			s, err := sqlite.New(sqlite.Config{Path: filepath.Join(t.TempDir(), "c.db")})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			cfg := newWorld("read_a").config(t)
			cfg.Store = store
			a := mustAgent(t, cfg)
			ctx := context.Background()
			if created, err := a.CreateThread(ctx, "t", map[string]string{"owner": "alice", "title": "beam"}); err != nil || !created {
				t.Fatalf("CreateThread = %v, %v", created, err)
			}
			before, err := store.Threads(ctx, checkpoint.ThreadFilter{ThreadID: "t"})
			if err != nil || len(before) != 1 {
				t.Fatalf("Threads after CreateThread: %v, %v", before, err)
			}
			wantAnswer(t, run(t, a, "t", "What is the beam current?"))
			cps := listCPs(t, store, "t")
			if len(cps) != 1 || len(cps[0].Next) != 0 {
				t.Fatalf("after the first turn: %d checkpoints, want only the one it ended with", len(cps))
			}
			after, err := store.Threads(ctx, checkpoint.ThreadFilter{ThreadID: "t", Metadata: map[string]string{"owner": "alice"}})
			if err != nil || len(after) != 1 || after[0].Metadata["title"] != "beam" || !after[0].Created.Equal(before[0].Created) {
				t.Fatalf("Threads after the turn: %+v, %v; want the thread with its metadata, created at %v", after, err, before[0].Created)
			}
			wantAnswer(t, run(t, a, "t", "and now?"))
			if cps := listCPs(t, store, "t"); len(cps) != 2 {
				t.Fatalf("after two turns: %d checkpoints, want each turn's last", len(cps))
			}
			s, status, err := a.State(ctx, "t")
			if err != nil || status != agent.RunAnswered || len(s.Messages) != 4 || s.Metadata["title"] != "beam" {
				t.Fatalf("State: %v, %s, %d messages, metadata %v", err, status, len(s.Messages), s.Metadata)
			}
		})
	}
}
