package postgres_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/graph/checkpoint/postgres/pgtest"
)

// TestRateBucketsShared: three replicas taking tokens of one key at once
// take exactly the bucket's capacity between them; the refused are told how
// long until the next token; other keys have buckets of their own.
func TestRateBucketsShared(t *testing.T) {
	ctx := context.Background()
	st := pgtest.Replicas(t, 3)
	const perMinute = 12 // a token every 5 s: none refills during the test
	var (
		took, refused atomic.Int32
		wg            sync.WaitGroup
	)
	for _, s := range st {
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, wait, err := s.TakeToken(ctx, "alice", perMinute)
				switch {
				case err != nil:
					t.Error(err)
				case ok:
					took.Add(1)
				default:
					refused.Add(1)
					if wait <= 0 || wait > 5*time.Second {
						t.Errorf("refused with wait %s, want (0, 5s]", wait)
					}
				}
			}()
		}
	}
	wg.Wait()
	if took.Load() != perMinute || refused.Load() != 30-perMinute {
		t.Fatalf("took %d, refused %d; want %d and %d", took.Load(), refused.Load(), perMinute, 30-perMinute)
	}
	if ok, _, err := st[1].TakeToken(ctx, "bob", perMinute); err != nil || !ok {
		t.Fatalf("another key: %v %v, want a token", ok, err)
	}
	if ok, _, err := st[2].TakeToken(ctx, "alice", 0); err != nil || !ok {
		t.Fatalf("no limit: %v %v, want a token", ok, err)
	}
}
