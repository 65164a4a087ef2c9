package checkpointtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// Cases for a store that is a checkpoint.TuplePutter: a checkpoint and its
// pending writes are stored together or not at all, and no reader sees the
// checkpoint without its writes. The engine stores a human's answer to an
// interrupt so.
var tupleCases = []struct {
	name string
	fn   func(t *testing.T, s checkpoint.Store, tp checkpoint.TuplePutter)
}{
	{"PutTuple", testPutTuple},
	{"PutTupleInvalidWritesNothing", testPutTupleInvalid},
	{"PutTupleFenced", testPutTupleFenced},
	{"PutTupleReadersSeeWhole", testPutTupleReadersSeeWhole},
}

func testPutTuple(t *testing.T, s checkpoint.Store, tp checkpoint.TuplePutter) {
	g := newGen(t)
	ctx := context.Background()
	first := g.cp("t1", uuid.Nil, map[string]string{"owner": "alice"})
	put(t, s, first)
	answer := g.cp("t1", first.ID, map[string]string{"owner": "alice"})
	ws := []checkpoint.Write{
		{Task: "a", Kind: checkpoint.WriteUpdate, Value: json.RawMessage(`{"a":1}`)},
		{Task: "b", Kind: checkpoint.WriteResume, Value: json.RawMessage(`"first"`)},
		{Task: "b", Kind: checkpoint.WriteResume, Value: json.RawMessage(`"yes"`)}, // a repeated key: the last value wins
	}
	if err := tp.PutTuple(ctx, checkpoint.Tuple{Checkpoint: answer, Writes: ws}); err != nil {
		t.Fatalf("PutTuple: %v", err)
	}
	got := get(t, s, "t1", uuid.Nil)
	if d := diff(answer, got.Checkpoint); d != "" {
		t.Errorf("latest after PutTuple: %s", d)
	}
	if len(got.Writes) != 2 || got.Writes[0].Task != "a" || string(got.Writes[0].Value) != `{"a":1}` ||
		got.Writes[1].Task != "b" || got.Writes[1].Kind != checkpoint.WriteResume || string(got.Writes[1].Value) != `"yes"` {
		t.Errorf("writes after PutTuple: %+v", got.Writes)
	}
	if ts, err := s.Threads(ctx, checkpoint.ThreadFilter{}); err != nil || len(ts) != 1 || ts[0].Latest != answer.ID {
		t.Errorf("Threads after PutTuple = %+v, %v; want latest %s", ts, err, answer.ID)
	}
	// Without writes it is a Put; the writes of other checkpoints stay theirs.
	bare := g.cp("t1", answer.ID, nil)
	if err := tp.PutTuple(ctx, checkpoint.Tuple{Checkpoint: bare}); err != nil {
		t.Fatalf("PutTuple without writes: %v", err)
	}
	if got := get(t, s, "t1", uuid.Nil); got.Checkpoint.ID != bare.ID || len(got.Writes) != 0 {
		t.Errorf("latest after PutTuple without writes: %s with %d writes", got.Checkpoint.ID, len(got.Writes))
	}
	if got := get(t, s, "t1", answer.ID); len(got.Writes) != 2 {
		t.Errorf("the earlier tuple's writes: %+v", got.Writes)
	}
}

// testPutTupleInvalid: a write the store refuses leaves the checkpoint
// unstored too.
func testPutTupleInvalid(t *testing.T, s checkpoint.Store, tp checkpoint.TuplePutter) {
	g := newGen(t)
	ctx := context.Background()
	first := g.cp("t1", uuid.Nil, nil)
	put(t, s, first)
	answer := g.cp("t1", first.ID, nil)
	err := tp.PutTuple(ctx, checkpoint.Tuple{Checkpoint: answer, Writes: []checkpoint.Write{{Task: "", Kind: checkpoint.WriteResume}}})
	if !errors.Is(err, checkpoint.ErrInvalid) {
		t.Fatalf("PutTuple with a write without task: err = %v, want ErrInvalid", err)
	}
	if _, err := s.Get(ctx, "t1", answer.ID); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("the refused tuple's checkpoint: err = %v, want ErrNotFound", err)
	}
	if got := get(t, s, "t1", uuid.Nil); got.Checkpoint.ID != first.ID {
		t.Errorf("latest after a refused PutTuple: %s, want %s", got.Checkpoint.ID, first.ID)
	}
}

// testPutTupleFenced: under a lease that was lost, nothing of the tuple
// is stored.
func testPutTupleFenced(t *testing.T, s checkpoint.Store, tp checkpoint.TuplePutter) {
	l, ok := s.(checkpoint.Leaser)
	if !ok {
		return
	}
	g := newGen(t)
	ctx := context.Background()
	first := g.cp("t1", uuid.Nil, nil)
	put(t, s, first)
	a := acquire(t, l, "t1", "a", time.Minute)
	ws := []checkpoint.Write{{Task: "n", Kind: checkpoint.WriteResume, Value: json.RawMessage(`"yes"`)}}
	mine := g.cp("t1", first.ID, nil)
	if err := tp.PutTuple(checkpoint.WithLease(ctx, a), checkpoint.Tuple{Checkpoint: mine, Writes: ws}); err != nil {
		t.Fatalf("PutTuple by the holder: %v", err)
	}
	if err := l.ReleaseLease(ctx, a); err != nil {
		t.Fatal(err)
	}
	acquire(t, l, "t1", "b", time.Minute)
	stale := g.cp("t1", mine.ID, nil)
	if err := tp.PutTuple(checkpoint.WithLease(ctx, a), checkpoint.Tuple{Checkpoint: stale, Writes: ws}); !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Fatalf("PutTuple under a released lease: err = %v, want ErrLeaseLost", err)
	}
	if _, err := s.Get(ctx, "t1", stale.ID); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("the refused tuple's checkpoint: err = %v, want ErrNotFound", err)
	}
	if got := get(t, s, "t1", uuid.Nil); got.Checkpoint.ID != mine.ID || len(got.Writes) != 1 {
		t.Errorf("latest after a refused PutTuple: %s with %d writes, want %s with 1", got.Checkpoint.ID, len(got.Writes), mine.ID)
	}
}

// testPutTupleReadersSeeWhole: while tuples are written, a reader of the
// latest checkpoint always finds its writes with it.
func testPutTupleReadersSeeWhole(t *testing.T, s checkpoint.Store, tp checkpoint.TuplePutter) {
	g := newGen(t)
	ctx := context.Background()
	first := g.cp("t1", uuid.Nil, nil)
	put(t, s, first)
	const n = 50
	var (
		wg   sync.WaitGroup
		done = make(chan struct{})
		bad  []string
		mu   sync.Mutex
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			got, err := s.Get(ctx, "t1", uuid.Nil)
			if err == nil && got.Checkpoint.ID != first.ID && len(got.Writes) != 2 {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("%s with %d writes", got.Checkpoint.ID, len(got.Writes)))
				mu.Unlock()
			}
		}
	}()
	parent := first.ID
	for i := range n {
		cp := g.cp("t1", parent, nil)
		ws := []checkpoint.Write{
			{Task: "a", Kind: checkpoint.WriteUpdate, Value: json.RawMessage(fmt.Sprint(i))},
			{Task: "b", Kind: checkpoint.WriteResume, Value: json.RawMessage(`"yes"`)},
		}
		if err := tp.PutTuple(ctx, checkpoint.Tuple{Checkpoint: cp, Writes: ws}); err != nil {
			t.Fatalf("PutTuple %d: %v", i, err)
		}
		parent = cp.ID
	}
	close(done)
	wg.Wait()
	if len(bad) > 0 {
		t.Errorf("a reader saw %d checkpoints without their writes, e.g. %s", len(bad), bad[0])
	}
}
