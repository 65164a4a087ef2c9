package postgres_test

import (
	"testing"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/checkpointtest"
	"github.com/capgraph/capgraph/graph/checkpoint/postgres"
)

func TestConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Store { return postgres.NewTestStore(t) })
}
