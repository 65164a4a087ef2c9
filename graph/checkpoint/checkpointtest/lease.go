package checkpointtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// LeaseTTL is the short lease the expiry cases use. Expiry is judged by the
// store's own clock (the database's for PostgreSQL), which a test cannot
// move, so these cases wait it out for real.
const LeaseTTL = 150 * time.Millisecond

// clockSlack bounds the difference between the test's clock and the store's.
const clockSlack = 2 * time.Second

var leaseCases = []struct {
	name string
	fn   func(t *testing.T, s checkpoint.Store, l checkpoint.Leaser)
}{
	{"LeaseAcquire", testLeaseAcquire},
	{"LeaseHeldByOther", testLeaseHeldByOther},
	{"LeaseSameOwnerReacquires", testLeaseSameOwner},
	{"LeaseRenew", testLeaseRenew},
	{"LeaseExpiryTakeover", testLeaseExpiry},
	{"LeaseRelease", testLeaseRelease},
	{"LeaseInvalid", testLeaseInvalid},
	{"LeaseConcurrentAcquire", testLeaseConcurrent},
	{"LeaseFencesPut", testLeaseFencesPut},
	{"LeaseFencesPutWrites", testLeaseFencesPutWrites},
	{"LeaseFencesRacingWriter", testLeaseFencesRacingWriter},
	{"ClaimResumable", testClaim},
	{"ClaimResumableConcurrent", testClaimConcurrent},
	{"ClaimResumableMetadata", testClaimMetadata},
}

func acquire(t *testing.T, l checkpoint.Leaser, thread, owner string, ttl time.Duration) checkpoint.Lease {
	t.Helper()
	ls, err := l.AcquireLease(context.Background(), thread, owner, ttl)
	if err != nil {
		t.Fatalf("AcquireLease(%s, %s): %v", thread, owner, err)
	}
	return ls
}

func testLeaseAcquire(t *testing.T, _ checkpoint.Store, l checkpoint.Leaser) {
	before := time.Now()
	ls := acquire(t, l, "t1", "a", time.Minute)
	if ls.Thread != "t1" || ls.Owner != "a" {
		t.Errorf("lease = %+v, want thread t1 owner a", ls)
	}
	if lo, hi := before.Add(time.Minute-clockSlack), time.Now().Add(time.Minute+clockSlack); ls.Expires.Before(lo) || ls.Expires.After(hi) {
		t.Errorf("Expires = %s, want about a minute from %s", ls.Expires, before)
	}
	// Another thread is independent.
	acquire(t, l, "t2", "b", time.Minute)
}

func testLeaseHeldByOther(t *testing.T, _ checkpoint.Store, l checkpoint.Leaser) {
	ls := acquire(t, l, "t1", "a", time.Minute)
	_, err := l.AcquireLease(context.Background(), "t1", "b", time.Minute)
	var he *checkpoint.LeaseHeldError
	if !errors.Is(err, checkpoint.ErrLeaseHeld) || !errors.As(err, &he) {
		t.Fatalf("AcquireLease by b: err = %v, want *LeaseHeldError", err)
	}
	if he.Thread != "t1" || he.Holder != "a" || he.Expires.Sub(ls.Expires).Abs() > Precision {
		t.Errorf("LeaseHeldError = %+v, want thread t1 holder a expires %s", he, ls.Expires)
	}
	if d := he.RetryAfter(time.Now()); d <= 0 || d > time.Minute+clockSlack {
		t.Errorf("RetryAfter = %s, want (0, 1m]", d)
	}
}

func testLeaseSameOwner(t *testing.T, _ checkpoint.Store, l checkpoint.Leaser) {
	first := acquire(t, l, "t1", "a", time.Minute)
	second := acquire(t, l, "t1", "a", 2*time.Minute)
	if !second.Expires.After(first.Expires) {
		t.Errorf("re-acquire by the holder: Expires %s, want after %s", second.Expires, first.Expires)
	}
}

func testLeaseRenew(t *testing.T, _ checkpoint.Store, l checkpoint.Leaser) {
	ctx := context.Background()
	ls := acquire(t, l, "t1", "a", time.Minute)
	got, err := l.RenewLease(ctx, ls, 2*time.Minute)
	if err != nil || !got.Expires.After(ls.Expires) || got.Owner != "a" || got.Thread != "t1" {
		t.Fatalf("RenewLease = %+v, %v; want owner a, later than %s", got, err, ls.Expires)
	}
	_, err = l.RenewLease(ctx, checkpoint.Lease{Thread: "t1", Owner: "b"}, time.Minute)
	var le *checkpoint.LeaseLostError
	if !errors.Is(err, checkpoint.ErrLeaseLost) || !errors.As(err, &le) || le.Lease.Owner != "b" {
		t.Errorf("RenewLease by a non-holder: err = %v, want *LeaseLostError for b", err)
	}
	if _, err := l.RenewLease(ctx, checkpoint.Lease{Thread: "never", Owner: "a"}, time.Minute); !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Errorf("RenewLease of a thread never leased: err = %v, want ErrLeaseLost", err)
	}
}

func testLeaseExpiry(t *testing.T, _ checkpoint.Store, l checkpoint.Leaser) {
	ctx := context.Background()
	old := acquire(t, l, "t1", "a", LeaseTTL)
	time.Sleep(LeaseTTL + 100*time.Millisecond)
	ls := acquire(t, l, "t1", "b", time.Minute)
	if ls.Owner != "b" {
		t.Fatalf("takeover: lease = %+v, want owner b", ls)
	}
	// The old holder finds out when it renews; it cannot take the lease back.
	_, err := l.RenewLease(ctx, old, time.Minute)
	var le *checkpoint.LeaseLostError
	if !errors.As(err, &le) || le.Holder != "b" {
		t.Errorf("RenewLease by the expired holder: err = %v, want *LeaseLostError naming holder b", err)
	}
	if _, err := l.AcquireLease(ctx, "t1", "a", time.Minute); !errors.Is(err, checkpoint.ErrLeaseHeld) {
		t.Errorf("AcquireLease by the expired holder: err = %v, want ErrLeaseHeld", err)
	}
	// An expired lease nobody took is not renewed either: its holder stalled.
	stale := acquire(t, l, "t2", "a", LeaseTTL)
	time.Sleep(LeaseTTL + 100*time.Millisecond)
	if _, err := l.RenewLease(ctx, stale, time.Minute); !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Errorf("RenewLease after expiry: err = %v, want ErrLeaseLost", err)
	}
}

func testLeaseRelease(t *testing.T, _ checkpoint.Store, l checkpoint.Leaser) {
	ctx := context.Background()
	a := acquire(t, l, "t1", "a", time.Minute)
	if err := l.ReleaseLease(ctx, a); err != nil {
		t.Fatalf("ReleaseLease: %v", err)
	}
	acquire(t, l, "t1", "b", time.Minute)
	// A release by a former holder neither fails nor frees b's lease.
	if err := l.ReleaseLease(ctx, a); err != nil {
		t.Errorf("ReleaseLease of a lease no longer held: %v", err)
	}
	if _, err := l.AcquireLease(ctx, "t1", "c", time.Minute); !errors.Is(err, checkpoint.ErrLeaseHeld) {
		t.Errorf("after a stale release, AcquireLease by c: err = %v, want ErrLeaseHeld (b holds it)", err)
	}
	if err := l.ReleaseLease(ctx, checkpoint.Lease{Thread: "never", Owner: "a"}); err != nil {
		t.Errorf("ReleaseLease of a thread never leased: %v", err)
	}
}

func testLeaseInvalid(t *testing.T, _ checkpoint.Store, l checkpoint.Leaser) {
	ctx := context.Background()
	for _, tc := range []struct {
		thread, owner string
		ttl           time.Duration
		field         string
	}{
		{"", "a", time.Second, "thread_id"},
		{"t1", "", time.Second, "owner"},
		{"t1", "a", 0, "ttl"},
		{"t1", "a", -time.Second, "ttl"},
	} {
		_, err := l.AcquireLease(ctx, tc.thread, tc.owner, tc.ttl)
		var ie *checkpoint.InvalidError
		if !errors.As(err, &ie) || ie.Field != tc.field {
			t.Errorf("AcquireLease(%q, %q, %s): err = %v, want *InvalidError on %s", tc.thread, tc.owner, tc.ttl, err, tc.field)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.AcquireLease(cctx, "t1", "a", time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("AcquireLease with a canceled ctx: err = %v, want context.Canceled", err)
	}
	// Nothing was granted by the refused calls.
	acquire(t, l, "t1", "b", time.Second)
}

func testLeaseConcurrent(t *testing.T, _ checkpoint.Store, l checkpoint.Leaser) {
	const n = 8
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []string
		errs    []error
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("o%d", i)
			_, err := l.AcquireLease(context.Background(), "t1", owner, time.Minute)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				winners = append(winners, owner)
			case !errors.Is(err, checkpoint.ErrLeaseHeld):
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	if len(winners) != 1 || len(errs) > 0 {
		t.Errorf("%d owners raced for one lease: winners %v, other errors %v; want exactly one winner", n, winners, errs)
	}
}

func testLeaseFencesPut(t *testing.T, s checkpoint.Store, l checkpoint.Leaser) {
	g := newGen(t)
	ctx := context.Background()
	a := acquire(t, l, "t1", "a", LeaseTTL)
	first := g.cp("t1", uuid.Nil, nil)
	if err := s.Put(checkpoint.WithLease(ctx, a), first); err != nil {
		t.Fatalf("Put by the holder: %v", err)
	}
	time.Sleep(LeaseTTL + 100*time.Millisecond)
	b := acquire(t, l, "t1", "b", time.Minute)
	stale := g.cp("t1", first.ID, nil)
	err := s.Put(checkpoint.WithLease(ctx, a), stale)
	if !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Fatalf("Put under a lost lease: err = %v, want ErrLeaseLost", err)
	}
	if got := get(t, s, "t1", uuid.Nil); got.Checkpoint.ID != first.ID {
		t.Errorf("after a refused Put the latest is %s, want %s (the refused one must not be stored)", got.Checkpoint.ID, first.ID)
	}
	if _, err := s.Get(ctx, "t1", stale.ID); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Get of the refused checkpoint: err = %v, want ErrNotFound", err)
	}
	if ts, err := s.Threads(ctx, checkpoint.ThreadFilter{}); err != nil || len(ts) != 1 || ts[0].Latest != first.ID {
		t.Errorf("Threads after a refused Put = %+v, %v; want latest %s", ts, err, first.ID)
	}
	next := g.cp("t1", first.ID, nil)
	if err := s.Put(checkpoint.WithLease(ctx, b), next); err != nil {
		t.Fatalf("Put by the new holder: %v", err)
	}
	// A lease for another thread does not fence this one, and a Put without
	// a lease is not fenced at all (single-process use, tools).
	other := acquire(t, l, "t2", "a", time.Minute)
	put(t, s, g.cp("t1", next.ID, nil))
	if err := s.Put(checkpoint.WithLease(ctx, other), g.cp("t1", next.ID, nil)); err != nil {
		t.Errorf("Put of t1 carrying a lease of t2: %v", err)
	}
}

func testLeaseFencesPutWrites(t *testing.T, s checkpoint.Store, l checkpoint.Leaser) {
	g := newGen(t)
	ctx := context.Background()
	cp := g.cp("t1", uuid.Nil, nil)
	put(t, s, cp)
	a := acquire(t, l, "t1", "a", LeaseTTL)
	w1 := []checkpoint.Write{{Task: "n1", Kind: checkpoint.WriteUpdate, Value: []byte(`1`)}}
	if err := s.PutWrites(checkpoint.WithLease(ctx, a), "t1", cp.ID, w1); err != nil {
		t.Fatalf("PutWrites by the holder: %v", err)
	}
	if err := l.ReleaseLease(ctx, a); err != nil {
		t.Fatal(err)
	}
	acquire(t, l, "t1", "b", time.Minute)
	w2 := []checkpoint.Write{{Task: "n2", Kind: checkpoint.WriteUpdate, Value: []byte(`2`)}}
	if err := s.PutWrites(checkpoint.WithLease(ctx, a), "t1", cp.ID, w2); !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Fatalf("PutWrites under a released lease: err = %v, want ErrLeaseLost", err)
	}
	if got := get(t, s, "t1", cp.ID); len(got.Writes) != 1 || got.Writes[0].Task != "n1" {
		t.Errorf("writes after a refused PutWrites = %+v, want only n1", got.Writes)
	}
}

// testLeaseFencesRacingWriter: the old holder keeps writing while its lease
// expires and another owner takes over and writes. Once the new holder's
// first checkpoint is stored, nothing of the old holder's lands after it:
// the thread's latest checkpoint is the new holder's.
func testLeaseFencesRacingWriter(t *testing.T, s checkpoint.Store, l checkpoint.Leaser) {
	g := newGen(t)
	ctx := context.Background()
	first := g.cp("t1", uuid.Nil, nil)
	put(t, s, first)
	a := acquire(t, l, "t1", "a", LeaseTTL)
	stopped := make(chan error, 1)
	var (
		written int
		quit    atomic.Bool
	)
	defer quit.Store(true)
	go func() {
		parent := first.ID
		for !quit.Load() {
			cp := checkpoint.Checkpoint{ThreadID: "t1", ID: uuid.Must(uuid.NewV7()), ParentID: parent, Next: []string{"a"}}
			if err := s.Put(checkpoint.WithLease(ctx, a), cp); err != nil {
				stopped <- err
				return
			}
			written++
			parent = cp.ID
		}
		stopped <- errors.New("stopped by the test")
	}()
	var b checkpoint.Lease
	deadline := time.Now().Add(LeaseTTL + clockSlack)
	for {
		var err error
		if b, err = l.AcquireLease(ctx, "t1", "b", time.Minute); err == nil {
			break
		}
		if !errors.Is(err, checkpoint.ErrLeaseHeld) || time.Now().After(deadline) {
			t.Fatalf("takeover by b: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	mine := checkpoint.Checkpoint{ThreadID: "t1", ID: uuid.Must(uuid.NewV7()), ParentID: first.ID, Next: []string{"b"}}
	if err := s.Put(checkpoint.WithLease(ctx, b), mine); err != nil {
		t.Fatalf("Put by the new holder: %v", err)
	}
	select {
	case err := <-stopped:
		if !errors.Is(err, checkpoint.ErrLeaseLost) {
			t.Fatalf("the old holder's writes ended with %v, want ErrLeaseLost", err)
		}
	case <-time.After(5 * time.Second):
		quit.Store(true)
		<-stopped
		t.Fatal("the old holder's writes were not refused after the takeover")
	}
	if written == 0 {
		t.Fatal("the old holder wrote nothing while it held the lease")
	}
	if got := get(t, s, "t1", uuid.Nil); got.Checkpoint.ID != mine.ID {
		t.Fatalf("latest is %s (next %v), want the new holder's %s: the old holder wrote after the takeover", got.Checkpoint.ID, got.Checkpoint.Next, mine.ID)
	}
}
