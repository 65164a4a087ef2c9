package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/graph/checkpoint/postgres/pgtest"
	"github.com/capgraph/capgraph/runstore"
)

// TestRunQueueClaims: three replicas claiming fifty queued runs at once
// each get other runs (SKIP LOCKED), every run exactly once; a renewal by
// a replica that lost the run is refused; an expired lease makes the run
// ready again for another replica, which counts a second attempt.
func TestRunQueueClaims(t *testing.T) {
	ctx := context.Background()
	st := pgtest.Replicas(t, 3)
	const n = 50
	for i := range n {
		if _, _, err := st[0].CreateRun(ctx, runstore.Record{ID: fmt.Sprintf("q%d", i), Thread: fmt.Sprintf("t%d", i),
			Labels: map[string]string{"owner": "alice"}}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu  sync.Mutex
		got = map[string]string{}
		wg  sync.WaitGroup
	)
	for r, s := range st {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("replica-%d", r)
			for {
				rec, ok, err := s.ClaimRun(ctx, owner, "", time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					return
				}
				mu.Lock()
				if prev, dup := got[rec.ID]; dup {
					t.Errorf("%s claimed by %s and %s", rec.ID, prev, owner)
				}
				got[rec.ID] = owner
				mu.Unlock()
				if rec.Owner != owner || rec.Status != runstore.Running || rec.Attempt != 1 {
					t.Errorf("claimed %+v", rec)
				}
			}
		}()
	}
	wg.Wait()
	if len(got) != n {
		t.Fatalf("%d of %d runs claimed", len(got), n)
	}
	if c, err := st[1].CountRunning(ctx, map[string]string{"owner": "alice"}); err != nil || c != n {
		t.Errorf("CountRunning = %d, %v; want %d", c, err, n)
	}
	if c, err := st[1].CountRunning(ctx, map[string]string{"owner": "bob"}); err != nil || c != 0 {
		t.Errorf("CountRunning(bob) = %d, %v; want 0", c, err)
	}
	// Nothing is ready while the leases hold.
	if _, ok, err := st[2].ClaimRun(ctx, "late", "", time.Minute); ok || err != nil {
		t.Fatalf("claimed a leased run: %v %v", ok, err)
	}
	owner := got["q7"]
	if _, err := st[0].RenewRun(ctx, "q7", "someone-else", time.Minute); !errors.Is(err, runstore.ErrConflict) {
		t.Errorf("renewal by a non-owner: %v, want ErrRunConflict", err)
	}
	// The owner "dies": its lease runs out.
	if _, err := st[0].RenewRun(ctx, "q7", owner, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	rec, ok, err := st[2].ClaimRun(ctx, "heir", "", time.Minute)
	if err != nil || !ok || rec.ID != "q7" || rec.Attempt != 2 || rec.Owner != "heir" {
		t.Fatalf("claim after expiry = %+v %v %v; want q7, attempt 2, owner heir", rec, ok, err)
	}
	if _, err := st[0].RenewRun(ctx, "q7", owner, time.Minute); !errors.Is(err, runstore.ErrConflict) {
		t.Errorf("renewal by the dead owner: %v, want ErrRunConflict (fenced)", err)
	}
	if c, err := st[0].CountRunning(ctx, nil); err != nil || c != n {
		t.Errorf("CountRunning(all) = %d, %v; want %d", c, err, n)
	}
}

// TestRunQueueNotBeforeCancelEvents: a requeued run waits in the queue
// until its not-before time; a cancel request reaches the owner's renewal
// and ends a queued run at once; events are kept in order, once each.
func TestRunQueueNotBeforeCancelEvents(t *testing.T) {
	ctx := context.Background()
	st := pgtest.Replicas(t, 2)
	a, b := st[0], st[1]
	sigs, err := b.ListenRuns(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.CreateRun(ctx, runstore.Record{ID: "w", Thread: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := a.ClaimRun(ctx, "A", "w", time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := a.RequeueRun(ctx, "w", "B", time.Time{}); !errors.Is(err, runstore.ErrConflict) {
		t.Errorf("requeue by a non-owner: %v", err)
	}
	if err := a.RequeueRun(ctx, "w", "A", time.Now().Add(400*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, sigs, runstore.SignalQueued, "w")
	if _, ok, _ := b.ClaimRun(ctx, "B", "", time.Minute); ok {
		t.Fatal("claimed a run before its not-before time")
	}
	time.Sleep(500 * time.Millisecond)
	if rec, ok, err := b.ClaimRun(ctx, "B", "", time.Minute); !ok || err != nil || rec.Attempt != 2 {
		t.Fatalf("claim after not-before: %+v %v %v", rec, ok, err)
	}
	if c, err := b.RenewRun(ctx, "w", "B", time.Minute); c || err != nil {
		t.Fatalf("renew = %v, %v", c, err)
	}
	if err := a.RequestCancel(ctx, "w"); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, sigs, runstore.SignalCancel, "w")
	if c, err := b.RenewRun(ctx, "w", "B", time.Minute); !c || err != nil {
		t.Fatalf("renew after a cancel request = %v, %v; want canceled", c, err)
	}
	// A queued run is canceled at once.
	if _, _, err := a.CreateRun(ctx, runstore.Record{ID: "q", Thread: "t2"}); err != nil {
		t.Fatal(err)
	}
	if err := b.RequestCancel(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if rec, err := a.GetRun(ctx, "q"); err != nil || rec.Status != runstore.Canceled {
		t.Fatalf("queued run after cancel: %+v %v", rec, err)
	}
	ev := func(i int) runstore.Event {
		return runstore.Event{Seq: i, Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
	}
	if err := a.AppendRunEvents(ctx, "w", []runstore.Event{ev(1), ev(2), ev(3)}); err != nil {
		t.Fatal(err)
	}
	if err := b.AppendRunEvents(ctx, "w", []runstore.Event{ev(3), ev(4)}); err != nil {
		t.Fatal(err)
	}
	got, err := b.ListRunEvents(ctx, "w", 1)
	if err != nil || len(got) != 3 || got[0].Seq != 2 || got[2].Seq != 4 || string(got[1].Data) != `{"n": 3}` && string(got[1].Data) != `{"n":3}` {
		t.Fatalf("events after 1 = %+v, %v", got, err)
	}
	if err := a.DeleteRuns(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if got, err := b.ListRunEvents(ctx, "w", 0); err != nil || len(got) != 0 {
		t.Errorf("events of a deleted run = %+v, %v", got, err)
	}
}

func waitSignal(t *testing.T, sigs <-chan runstore.Signal, kind runstore.SignalKind, run string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case s, ok := <-sigs:
			if !ok {
				t.Fatal("signals closed")
			}
			if s.Kind == kind && s.Run == run {
				return
			}
		case <-timeout:
			t.Fatalf("no %s signal for %s", kind, run)
		}
	}
}
