package memory_test

import (
	"testing"

	"github.com/capgraph/capgraph/graph/checkpoint/checkpointtest"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

func BenchmarkPut(b *testing.B)         { checkpointtest.BenchPut(b, memory.New()) }
func BenchmarkPutParallel(b *testing.B) { checkpointtest.BenchPutParallel(b, memory.New()) }
func BenchmarkGraph8Nodes(b *testing.B) { checkpointtest.BenchGraph8(b, memory.New()) }
func BenchmarkLease(b *testing.B)       { checkpointtest.BenchLease(b, memory.New()) }

// The latest-only store (NewLatestOnly): the same Puts, each replacing the
// thread's one checkpoint.
func BenchmarkPutLatestOnly(b *testing.B) { checkpointtest.BenchPut(b, memory.NewLatestOnly()) }
func BenchmarkPutParallelLatestOnly(b *testing.B) {
	checkpointtest.BenchPutParallel(b, memory.NewLatestOnly())
}
func BenchmarkGraph8NodesLatestOnly(b *testing.B) {
	checkpointtest.BenchGraph8(b, memory.NewLatestOnly())
}
