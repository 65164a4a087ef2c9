package postgres_test

import (
	"testing"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/checkpointtest"
	"github.com/capgraph/capgraph/graph/checkpoint/postgres"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/runstore/runstoretest"
)

func TestConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Store { return postgres.NewTestStore(t) })
}

// TestRunConformance runs the run record suite: the store keeps the
// server's run records beside its checkpoints.
func TestRunConformance(t *testing.T) {
	runstoretest.Run(t, func(t *testing.T) runstore.Store { return postgres.NewTestStore(t) })
}
