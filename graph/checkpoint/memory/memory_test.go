package memory_test

import (
	"testing"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/checkpointtest"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

func TestConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Store { return memory.New() })
}

func TestConformanceLatestOnly(t *testing.T) {
	checkpointtest.RunLatestOnly(t, func(t *testing.T) checkpoint.Store { return memory.NewLatestOnly() })
}
