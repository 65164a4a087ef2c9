package sqlite_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"
	"weak"

	"go.uber.org/goleak"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
)

// A closed store leaves nothing behind: its goroutines (the WAL
// checkpointer, the group commit) have ended, and nothing outside it —
// no package-level table of stores — keeps it reachable, so a process
// opening and closing stores (tests, a server reloading its
// configuration) does not grow.
func TestClosedStoreLeavesNothingBehind(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := context.Background()
	s, err := sqlite.New(sqlite.Config{Path: filepath.Join(t.TempDir(), "cp.db")})
	if err != nil {
		t.Fatal(err)
	}
	// Use what keeps per-store state: the records table (created on first
	// use), checkpoints (group commit), leases.
	if _, err := s.AppendRecords(ctx, checkpoint.Record{Kind: "test", Thread: "t1", Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if recs, err := s.Records(ctx, checkpoint.RecordFilter{}); err != nil || len(recs) != 1 {
		t.Fatalf("Records = %v, %v; want the one appended", recs, err)
	}
	l, err := s.AcquireLease(ctx, "t1", "owner", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	w := weak.Make(s)
	s = nil
	for range 20 {
		runtime.GC()
		if w.Value() == nil {
			return
		}
	}
	t.Fatal("the closed store is still reachable after 20 garbage collections: something outside it refers to it")
}
