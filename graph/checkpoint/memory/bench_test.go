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
