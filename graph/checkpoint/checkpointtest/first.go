package checkpointtest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// Cases for a store that is a checkpoint.FirstPutter: a thread's first
// checkpoint is stored only while the thread has none, whoever else is
// storing one at the same moment. The engine's Init uses it.
var firstCases = []struct {
	name string
	fn   func(t *testing.T, s checkpoint.Store, fp checkpoint.FirstPutter)
}{
	{"PutFirst", testPutFirst},
	{"PutFirstConcurrent", testPutFirstConcurrent},
	{"PutFirstInvalid", testPutFirstInvalid},
	{"PutFirstFenced", testPutFirstFenced},
}

// testPutFirst: stored on a new thread, as Put stores it; refused, with
// nothing written, on a thread with a checkpoint (one Put, or its own);
// stored again once the thread was deleted. Other threads do not count.
func testPutFirst(t *testing.T, s checkpoint.Store, fp checkpoint.FirstPutter) {
	g := newGen(t)
	ctx := context.Background()
	put(t, s, g.cp("other", uuid.Nil, nil))
	first := g.cp("t1", uuid.Nil, map[string]string{"owner": "alice"})
	if stored, err := fp.PutFirst(ctx, first); err != nil || !stored {
		t.Fatalf("PutFirst on a new thread = %v, %v; want stored", stored, err)
	}
	if d := diff(first, get(t, s, "t1", uuid.Nil).Checkpoint); d != "" {
		t.Errorf("the first checkpoint: %s", d)
	}
	if ts, err := s.Threads(ctx, checkpoint.ThreadFilter{Metadata: map[string]string{"owner": "alice"}}); err != nil || len(ts) != 1 || ts[0].Latest != first.ID {
		t.Errorf("Threads after PutFirst = %+v, %v; want t1 at %s", ts, err, first.ID)
	}
	again := g.cp("t1", uuid.Nil, nil)
	if stored, err := fp.PutFirst(ctx, again); err != nil || stored {
		t.Fatalf("PutFirst on a thread with its first checkpoint = %v, %v; want not stored, no error", stored, err)
	}
	if _, err := s.Get(ctx, "t1", again.ID); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("the refused checkpoint: err = %v, want ErrNotFound", err)
	}
	put(t, s, g.cp("t2", uuid.Nil, nil))
	if stored, err := fp.PutFirst(ctx, g.cp("t2", uuid.Nil, nil)); err != nil || stored {
		t.Fatalf("PutFirst on a thread with a Put checkpoint = %v, %v; want not stored", stored, err)
	}
	if cps, err := s.List(ctx, "t2", checkpoint.ListOptions{}); err != nil || len(cps) != 1 {
		t.Errorf("t2 holds %d checkpoints (%v), want 1", len(cps), err)
	}
	if err := s.DeleteThread(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	anew := g.cp("t1", uuid.Nil, nil)
	if stored, err := fp.PutFirst(ctx, anew); err != nil || !stored {
		t.Fatalf("PutFirst on a deleted thread = %v, %v; want stored", stored, err)
	}
	if got := get(t, s, "t1", uuid.Nil); got.Checkpoint.ID != anew.ID {
		t.Errorf("latest after PutFirst on a deleted thread: %s, want %s", got.Checkpoint.ID, anew.ID)
	}
}

// testPutFirstConcurrent: of many callers storing a first checkpoint of
// one thread at once, exactly one stores it.
func testPutFirstConcurrent(t *testing.T, s checkpoint.Store, fp checkpoint.FirstPutter) {
	g := newGen(t)
	const n = 16
	cps := make([]checkpoint.Checkpoint, n)
	for i := range cps {
		cps[i] = g.cp("t1", uuid.Nil, nil)
	}
	var (
		wg     sync.WaitGroup
		stored atomic.Int32
		winner atomic.Value
	)
	start := make(chan struct{})
	for _, cp := range cps {
		wg.Go(func() {
			<-start
			ok, err := fp.PutFirst(context.Background(), cp)
			if err != nil {
				t.Errorf("PutFirst: %v", err)
			}
			if ok {
				stored.Add(1)
				winner.Store(cp.ID)
			}
		})
	}
	close(start)
	wg.Wait()
	if stored.Load() != 1 {
		t.Fatalf("%d of %d concurrent PutFirst stored, want 1", stored.Load(), n)
	}
	cpsNow, err := s.List(context.Background(), "t1", checkpoint.ListOptions{})
	if err != nil || len(cpsNow) != 1 || cpsNow[0].ID != winner.Load().(uuid.UUID) {
		t.Errorf("the thread holds %d checkpoints (%v), want the one PutFirst stored", len(cpsNow), err)
	}
}

// testPutFirstInvalid: an invalid checkpoint is refused as Put refuses
// it, and stores nothing.
func testPutFirstInvalid(t *testing.T, s checkpoint.Store, fp checkpoint.FirstPutter) {
	g := newGen(t)
	bad := g.cp("t1", uuid.Nil, nil)
	bad.ID = uuid.Nil
	if stored, err := fp.PutFirst(context.Background(), bad); !errors.Is(err, checkpoint.ErrInvalid) || stored {
		t.Fatalf("PutFirst without an id = %v, %v; want ErrInvalid", stored, err)
	}
	if _, err := s.Get(context.Background(), "t1", uuid.Nil); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("the thread after a refused PutFirst: err = %v, want ErrNotFound", err)
	}
}

// testPutFirstFenced: under a lease that was lost, nothing is stored.
func testPutFirstFenced(t *testing.T, s checkpoint.Store, fp checkpoint.FirstPutter) {
	l, ok := s.(checkpoint.Leaser)
	if !ok {
		return
	}
	g := newGen(t)
	ctx := context.Background()
	a := acquire(t, l, "t1", "a", time.Minute)
	if err := l.ReleaseLease(ctx, a); err != nil {
		t.Fatal(err)
	}
	acquire(t, l, "t1", "b", time.Minute)
	if stored, err := fp.PutFirst(checkpoint.WithLease(ctx, a), g.cp("t1", uuid.Nil, nil)); !errors.Is(err, checkpoint.ErrLeaseLost) || stored {
		t.Fatalf("PutFirst under a released lease = %v, %v; want ErrLeaseLost", stored, err)
	}
	if _, err := s.Get(ctx, "t1", uuid.Nil); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("the thread after a fenced PutFirst: err = %v, want ErrNotFound", err)
	}
}
