package memory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// A pruned turn leaves its thread holding what it keeps, not the blocks
// its steps filled, and the thread goes on with a next turn as before.
func TestPrunedThreadKeepsOnlyWhatItKeeps(t *testing.T) {
	s := New()
	ctx := checkpoint.WithPruning(context.Background(), 0)
	run := func(turn int) uuid.UUID {
		runID := uuid.Must(uuid.NewV7())
		var last uuid.UUID
		for step := range 20 {
			cp := checkpoint.Checkpoint{ThreadID: "t", ID: uuid.Must(uuid.NewV7()), ParentID: last, RunID: runID, Step: step,
				State: []byte(fmt.Sprintf(`{"turn":%d,"step":%d}`, turn, step)), Next: []string{"node"},
				Metadata: map[string]string{"owner": "alice", "turn": fmt.Sprint(turn)}, Created: time.Now()}
			if step == 19 {
				cp.Next = nil // the turn's end: its intermediate checkpoints go
			}
			if err := s.Put(ctx, cp); err != nil {
				t.Fatal(err)
			}
			last = cp.ID
		}
		return last
	}
	for turn := range 3 {
		last := run(turn)
		th := s.threads["t"]
		if len(th.cps) != turn+1 || cap(th.cps) > len(th.cps)+1 || cap(th.mem.entries) != 0 || cap(th.mem.bytes) != 0 || cap(th.mem.names) != 0 {
			t.Fatalf("after turn %d the thread holds %d checkpoints in room for %d, and blocks of %d entries, %d bytes, %d names; want the %d turns' last checkpoints alone",
				turn, len(th.cps), cap(th.cps), cap(th.mem.entries), cap(th.mem.bytes), cap(th.mem.names), turn+1)
		}
		got, err := s.Get(context.Background(), "t", uuid.Nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.Checkpoint.ID != last || string(got.Checkpoint.State) != fmt.Sprintf(`{"turn":%d,"step":19}`, turn) || got.Checkpoint.Metadata["turn"] != fmt.Sprint(turn) {
			t.Fatalf("latest after turn %d: %s %q %v", turn, got.Checkpoint.ID, got.Checkpoint.State, got.Checkpoint.Metadata)
		}
	}
}
