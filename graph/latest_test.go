package graph_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// readCounter is a store that counts its reads of a thread's latest
// checkpoint.
type readCounter struct {
	*memory.Store
	latestReads atomic.Int32
}

func (r *readCounter) Get(ctx context.Context, thread string, id uuid.UUID) (checkpoint.Tuple, error) {
	if id == uuid.Nil {
		r.latestReads.Add(1)
	}
	return r.Store.Get(ctx, thread, id)
}

// A run started under WithLatest takes its parent from the caller's read:
// it does not read the store, its input checkpoint's parent is the
// checkpoint read, and the thread's first run takes the Init checkpoint's
// run id as when it reads it. A read of another thread is not used.
func TestWithLatestSavesTheRunsRead(t *testing.T) {
	for _, tc := range []struct {
		name      string
		hintOther bool
		wantReads int32
	}{{"the thread's read", false, 0}, {"another thread's read", true, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			store := &readCounter{Store: memory.New()}
			c := linear(t, store, graph.DurabilitySync, logNode(newCounter(), "a"))
			ctx := context.Background()
			if _, err := c.Init(ctx, "t", tstate{}); err != nil {
				t.Fatal(err)
			}
			initial, err := store.Store.Get(ctx, "t", uuid.Nil)
			if err != nil {
				t.Fatal(err)
			}
			hinted := "t"
			if tc.hintOther {
				hinted = "other"
			}
			store.latestReads.Store(0)
			res, err := c.Run(graph.WithLatest(ctx, hinted, initial.Checkpoint, true), "t", tstate{})
			if err != nil || res.Status != graph.StatusDone {
				t.Fatalf("Run: %v, %v", res.Status, err)
			}
			if n := store.latestReads.Load(); n != tc.wantReads {
				t.Errorf("the run read the thread's latest checkpoint %d times, want %d", n, tc.wantReads)
			}
			cps, err := store.List(ctx, "t", checkpoint.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var input *checkpoint.Checkpoint
			for i := range cps {
				if cps[i].Step == 0 && len(cps[i].Next) > 0 {
					input = &cps[i]
				}
			}
			if input == nil || input.ParentID != initial.Checkpoint.ID || input.RunID != initial.Checkpoint.RunID {
				t.Fatalf("the run's input checkpoint %+v: want parent %s and the Init checkpoint's run id %s", input, initial.Checkpoint.ID, initial.Checkpoint.RunID)
			}
		})
	}
}
