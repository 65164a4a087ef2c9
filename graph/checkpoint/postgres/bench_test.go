package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/capgraph/capgraph/graph/checkpoint/checkpointtest"
)

func BenchmarkPut(b *testing.B)         { checkpointtest.BenchPut(b, NewTestStore(b)) }
func BenchmarkPutParallel(b *testing.B) { checkpointtest.BenchPutParallel(b, NewTestStore(b)) }
func BenchmarkGraph8Nodes(b *testing.B) { checkpointtest.BenchGraph8(b, NewTestStore(b)) }

// BenchmarkRawCommit is the floor for BenchmarkPut: one plain INSERT of a blob
// of the same size per (implicit) transaction through the store's own pool.
func BenchmarkRawCommit(b *testing.B) {
	s := NewTestStore(b)
	ctx := context.Background()
	if _, err := s.pool.Exec(ctx, `CREATE TABLE `+s.cfg.table("raw_bench")+` (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v bytea)`); err != nil {
		b.Fatal(err)
	}
	ins := `INSERT INTO ` + s.cfg.table("raw_bench") + ` (v) VALUES ($1)`
	blob := []byte(checkpointtest.BenchState)
	var lat checkpointtest.Latencies
	b.SetBytes(int64(len(blob)))
	for b.Loop() {
		lat.Time(func() {
			if _, err := s.pool.Exec(ctx, ins, blob); err != nil {
				b.Fatal(err)
			}
		})
	}
	lat.Report(b)
}

func BenchmarkPutVsRawCommit(b *testing.B) {
	s := NewTestStore(b)
	ctx := context.Background()
	if _, err := s.pool.Exec(ctx, `CREATE TABLE `+s.cfg.table("raw_bench")+` (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v bytea)`); err != nil {
		b.Fatal(err)
	}
	ins := `INSERT INTO ` + s.cfg.table("raw_bench") + ` (v) VALUES ($1)`
	checkpointtest.BenchPutVsRaw(b, s, func(ctx context.Context, blob []byte) error {
		_, err := s.pool.Exec(ctx, ins, blob)
		return err
	})
}

func BenchmarkLease(b *testing.B)     { checkpointtest.BenchLease(b, NewTestStore(b)) }
func BenchmarkFencedPut(b *testing.B) { checkpointtest.BenchFencedPut(b, NewTestStore(b)) }

func BenchmarkClaim(b *testing.B) {
	for _, done := range []int{0, 2000} {
		b.Run(fmt.Sprintf("done=%d", done), func(b *testing.B) { checkpointtest.BenchClaim(b, NewTestStore(b), done) })
	}
}
