package checkpointtest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// testClaim runs for stores that are a checkpoint.Claimer.
func testClaim(t *testing.T, s checkpoint.Store, l checkpoint.Leaser) {
	c, ok := s.(checkpoint.Claimer)
	if !ok {
		return
	}
	g := newGen(t)
	ctx := context.Background()
	// One thread of each kind; only "cut" and "expired" are resumable and free.
	mk := func(thread string, next []string, kind checkpoint.WriteKind) {
		first := g.cp(thread, uuid.Nil, nil)
		latest := g.cp(thread, first.ID, nil)
		latest.Next = next
		put(t, s, first, latest)
		// A write on an older checkpoint does not count.
		if err := s.PutWrites(ctx, thread, first.ID, []checkpoint.Write{{Task: "old", Kind: checkpoint.WriteInterrupt}}); err != nil {
			t.Fatal(err)
		}
		if kind != "" {
			if err := s.PutWrites(ctx, thread, latest.ID, []checkpoint.Write{{Task: "n", Kind: kind, Value: []byte(`1`)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("cut", []string{"a"}, "")
	mk("cut-with-update", []string{"a", "b"}, checkpoint.WriteUpdate)
	mk("interrupted", []string{"a"}, checkpoint.WriteInterrupt)
	mk("failed", []string{"a"}, checkpoint.WriteError)
	mk("done", nil, "")
	mk("leased", []string{"a"}, "")
	mk("expired", []string{"a"}, "")
	mk("skipped", []string{"a"}, "")
	acquire(t, l, "leased", "other", time.Minute)
	acquire(t, l, "expired", "other", LeaseTTL)
	time.Sleep(LeaseTTL + 100*time.Millisecond)

	if _, err := c.ClaimResumable(ctx, "", time.Minute, checkpoint.ClaimOptions{}); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("ClaimResumable without owner: err = %v, want ErrInvalid", err)
	}
	want := []string{"cut", "cut-with-update", "expired"}
	var got []string
	for range len(want) + 1 {
		ls, err := c.ClaimResumable(ctx, "a", time.Minute, checkpoint.ClaimOptions{Limit: 1, Skip: []string{"skipped"}})
		if err != nil {
			t.Fatalf("ClaimResumable: %v", err)
		}
		if len(ls) > 1 {
			t.Fatalf("Limit 1 claimed %d", len(ls))
		}
		for _, ls := range ls {
			if ls.Owner != "a" || !ls.Expires.After(time.Now().Add(time.Minute-clockSlack)) {
				t.Errorf("claimed lease %+v, want owner a for about a minute", ls)
			}
			got = append(got, ls.Thread)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("claimed %v, want %v (resumable, unleased, not skipped)", got, want)
	}
	// Claimed means leased: another owner cannot take them.
	if _, err := l.AcquireLease(ctx, "cut", "b", time.Minute); !errors.Is(err, checkpoint.ErrLeaseHeld) {
		t.Errorf("AcquireLease of a claimed thread: err = %v, want ErrLeaseHeld", err)
	}
	if ls, err := c.ClaimResumable(ctx, "b", time.Minute, checkpoint.ClaimOptions{Limit: 10}); err != nil || len(ls) != 1 || ls[0].Thread != "skipped" {
		t.Errorf("ClaimResumable by b = %+v, %v; want only skipped", ls, err)
	}
}

// testClaimMetadata: a metadata filter claims only the threads whose
// latest checkpoint matches it (an application sharing the store with
// another claims only its own cut runs).
func testClaimMetadata(t *testing.T, s checkpoint.Store, _ checkpoint.Leaser) {
	c, ok := s.(checkpoint.Claimer)
	if !ok {
		return
	}
	g := newGen(t)
	ctx := context.Background()
	mine := map[string]string{"app": "mine", "graph": "g1"}
	put(t, s, g.cp("m1", uuid.Nil, mine))
	put(t, s, g.cp("m2", uuid.Nil, map[string]string{"app": "mine", "graph": "g1", "owner": "ada"}))
	put(t, s, g.cp("other-app", uuid.Nil, map[string]string{"app": "theirs", "graph": "g1"}))
	put(t, s, g.cp("other-graph", uuid.Nil, map[string]string{"app": "mine", "graph": "g0"}))
	put(t, s, g.cp("no-metadata", uuid.Nil, nil))
	// The latest checkpoint decides: a thread that was mine and is now theirs is theirs.
	first := g.cp("moved", uuid.Nil, mine)
	put(t, s, first, g.cp("moved", first.ID, map[string]string{"app": "theirs", "graph": "g1"}))

	var got []string
	for {
		ls, err := c.ClaimResumable(ctx, "a", time.Minute, checkpoint.ClaimOptions{Limit: 1, Metadata: mine})
		if err != nil {
			t.Fatalf("ClaimResumable: %v", err)
		}
		if len(ls) == 0 {
			break
		}
		got = append(got, ls[0].Thread)
		if len(got) > 6 {
			t.Fatalf("claimed %v: a thread twice", got)
		}
	}
	slices.Sort(got)
	if want := []string{"m1", "m2"}; !slices.Equal(got, want) {
		t.Fatalf("claimed %v with filter %v, want %v", got, mine, want)
	}
	// Without a filter the others are claimable (nobody took them).
	ls, err := c.ClaimResumable(ctx, "b", time.Minute, checkpoint.ClaimOptions{Limit: 10})
	if err != nil || len(ls) != 4 {
		t.Errorf("ClaimResumable without filter = %+v, %v; want the 4 others", ls, err)
	}
}

// testClaimConcurrent: owners claiming at once get disjoint threads that
// together are all the resumable ones.
func testClaimConcurrent(t *testing.T, s checkpoint.Store, _ checkpoint.Leaser) {
	c, ok := s.(checkpoint.Claimer)
	if !ok {
		return
	}
	g := newGen(t)
	var want []string
	for i := range 20 {
		th := "t" + string(rune('a'+i))
		put(t, s, g.cp(th, uuid.Nil, nil))
		want = append(want, th)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		got  []string
		errs []error
	)
	for o := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ls, err := c.ClaimResumable(context.Background(), "o"+string(rune('0'+o)), time.Minute, checkpoint.ClaimOptions{Limit: 2})
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				}
				for _, l := range ls {
					got = append(got, l.Thread)
				}
				mu.Unlock()
				if err != nil || len(ls) == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	slices.Sort(got)
	if len(errs) > 0 || !slices.Equal(got, want) {
		t.Fatalf("claimed %v (errors %v); want each of %v exactly once", got, errs, want)
	}
}
