package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/checkpointtest"
)

// tempStore opens a store in a new file, closed when the test ends.
func tempStore(tb testing.TB) *Store {
	tb.Helper()
	s, err := New(Config{Path: filepath.Join(tb.TempDir(), "store.db")})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func BenchmarkPut(b *testing.B)         { checkpointtest.BenchPut(b, tempStore(b)) }
func BenchmarkPutParallel(b *testing.B) { checkpointtest.BenchPutParallel(b, tempStore(b)) }
func BenchmarkGet(b *testing.B)         { checkpointtest.BenchGet(b, tempStore(b)) }
func BenchmarkGraph8Nodes(b *testing.B) { checkpointtest.BenchGraph8(b, tempStore(b)) }

// BenchmarkRawCommit is the floor for BenchmarkPut: one plain INSERT of a blob
// of the same size per transaction, on the store's own writer connection
// (same file, same WAL + synchronous=FULL settings).
func BenchmarkRawCommit(b *testing.B) {
	s := tempStore(b)
	ctx := context.Background()
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE raw_bench (id INTEGER PRIMARY KEY, v BLOB)`); err != nil {
		b.Fatal(err)
	}
	blob := []byte(checkpointtest.BenchState)
	var lat checkpointtest.Latencies
	b.SetBytes(int64(len(blob)))
	for b.Loop() {
		lat.Time(func() {
			if _, err := s.w.ExecContext(ctx, `INSERT INTO raw_bench (v) VALUES (?)`, blob); err != nil {
				b.Fatal(err)
			}
		})
	}
	lat.Report(b)
}

func BenchmarkPutVsRawCommit(b *testing.B) {
	s := tempStore(b)
	if _, err := s.w.Exec(`CREATE TABLE raw_bench (id INTEGER PRIMARY KEY, v BLOB)`); err != nil {
		b.Fatal(err)
	}
	checkpointtest.BenchPutVsRaw(b, s, func(ctx context.Context, blob []byte) error {
		_, err := s.w.ExecContext(ctx, `INSERT INTO raw_bench (v) VALUES (?)`, blob)
		return err
	})
}

func BenchmarkLease(b *testing.B)     { checkpointtest.BenchLease(b, tempStore(b)) }
func BenchmarkFencedPut(b *testing.B) { checkpointtest.BenchFencedPut(b, tempStore(b)) }

// BenchmarkGroupCommit compares, on one file and in one run, the checkpoints
// per second of the single-commit loop (MaxBatch 1: one transaction and one
// fsync per Put, which is what the store did before group commit) with group
// commit (the default), with 1, 8 and 64 goroutines each Putting a ~2 KiB
// checkpoint on its own thread, one Put after the other. One op is one round:
// 256 Puts single-commit, then 256 grouped (the order alternates between
// rounds). The metrics are the two rates and their ratio; ns/op means little.
func BenchmarkGroupCommit(b *testing.B) {
	for _, threads := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			s := tempStore(b)
			const perRound = 256
			var single, grouped time.Duration
			phase := func(maxBatch int, round int) time.Duration {
				s.maxBatch = maxBatch // no write is in flight between phases
				var wg sync.WaitGroup
				t0 := time.Now()
				for g := range threads {
					wg.Go(func() {
						thread := fmt.Sprintf("gc-%d-%d-%d", maxBatch, round, g)
						for i := range perRound / threads {
							cp := checkpoint.Checkpoint{ThreadID: thread, ID: uuid.Must(uuid.NewV7()), Step: i,
								State: checkpointtest.BenchState, Next: []string{"node"}, Created: time.Now()}
							if err := s.Put(context.Background(), cp); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				return time.Since(t0)
			}
			round := 0
			for b.Loop() {
				if round%2 == 0 {
					single += phase(1, round)
					grouped += phase(defaultMaxBatch, round)
				} else {
					grouped += phase(defaultMaxBatch, round)
					single += phase(1, round)
				}
				round++
			}
			puts := float64(round * perRound / threads * threads)
			b.ReportMetric(puts/single.Seconds(), "single-cp/s")
			b.ReportMetric(puts/grouped.Seconds(), "group-cp/s")
			b.ReportMetric(single.Seconds()/grouped.Seconds(), "group/single")
		})
	}
}
