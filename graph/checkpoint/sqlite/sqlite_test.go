package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/checkpointtest"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/runstore/runstoretest"
)

func newStore(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.New(sqlite.Config{Path: filepath.Join(t.TempDir(), "cp.db")})
	if err != nil {
		t.Fatalf("sqlite.New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Store { return newStore(t) })
}

// TestRunConformance runs the run record suite: the store keeps the
// server's run records beside its checkpoints.
func TestRunConformance(t *testing.T) {
	runstoretest.Run(t, func(t *testing.T) runstore.Store { return newStore(t) })
}
