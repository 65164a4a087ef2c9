package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/capgraph/capgraph/graph/checkpoint/checkpointtest"
)

func benchStore(b *testing.B) *Store {
	b.Helper()
	s, err := New(Config{Path: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func BenchmarkPut(b *testing.B)         { checkpointtest.BenchPut(b, benchStore(b)) }
func BenchmarkPutParallel(b *testing.B) { checkpointtest.BenchPutParallel(b, benchStore(b)) }
func BenchmarkGraph8Nodes(b *testing.B) { checkpointtest.BenchGraph8(b, benchStore(b)) }

// BenchmarkRawCommit is the floor for BenchmarkPut: one plain INSERT of a blob
// of the same size per transaction, on the store's own writer connection
// (same file, same WAL + synchronous=FULL settings).
func BenchmarkRawCommit(b *testing.B) {
	s := benchStore(b)
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
	s := benchStore(b)
	if _, err := s.w.Exec(`CREATE TABLE raw_bench (id INTEGER PRIMARY KEY, v BLOB)`); err != nil {
		b.Fatal(err)
	}
	checkpointtest.BenchPutVsRaw(b, s, func(ctx context.Context, blob []byte) error {
		_, err := s.w.ExecContext(ctx, `INSERT INTO raw_bench (v) VALUES (?)`, blob)
		return err
	})
}

func BenchmarkLease(b *testing.B)     { checkpointtest.BenchLease(b, benchStore(b)) }
func BenchmarkFencedPut(b *testing.B) { checkpointtest.BenchFencedPut(b, benchStore(b)) }
