package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// The durability settings are what the package promises; check them on the
// live connections rather than trusting the DSN.
func TestPragmas(t *testing.T) {
	s, err := New(Config{Path: filepath.Join(t.TempDir(), "p.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		name, pragma string
		db           string
		want         string
	}{
		{"writer journal", "journal_mode", "w", "wal"},
		{"writer synchronous FULL", "synchronous", "w", "2"},
		{"writer foreign keys", "foreign_keys", "w", "1"},
		{"reader journal", "journal_mode", "r", "wal"},
		{"reader query_only", "query_only", "r", "1"},
		{"reader busy timeout", "busy_timeout", "r", "5000"},
	} {
		db := s.w
		if tc.db == "r" {
			db = s.r
		}
		var got string
		if err := db.QueryRowContext(ctx, "PRAGMA "+tc.pragma).Scan(&got); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: PRAGMA %s = %q, want %q", tc.name, tc.pragma, got, tc.want)
		}
	}
	if _, err := s.r.ExecContext(ctx, `DELETE FROM threads`); err == nil {
		t.Error("a write through the read pool succeeded; it must be refused")
	}
}

// The pruning a run's last Put does takes the pruned checkpoints' pending
// writes with them (ON DELETE CASCADE, one statement): none is left behind
// to grow the file.
func TestPruneOnPutLeavesNoWrites(t *testing.T) {
	s, err := New(Config{Path: filepath.Join(t.TempDir(), "w.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	run, at := uuid.New(), time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	put := func(ctx context.Context, step int, next []string) uuid.UUID {
		t.Helper()
		cp := checkpoint.Checkpoint{ThreadID: "t", ID: uuid.Must(uuid.NewV7()), RunID: run, Step: step, State: []byte(`{}`), Next: next, Created: at.Add(time.Duration(step) * time.Second)}
		if err := s.Put(ctx, cp); err != nil {
			t.Fatal(err)
		}
		return cp.ID
	}
	put(ctx, 0, []string{"a"})
	mid := put(ctx, 1, []string{"b", "c"})
	if err := s.PutWrites(ctx, "t", mid, []checkpoint.Write{{Task: "b", Kind: checkpoint.WriteUpdate, Value: []byte(`1`)}}); err != nil {
		t.Fatal(err)
	}
	last := put(checkpoint.WithPruning(ctx, 0), 2, nil)
	var cps, writes int
	if err := s.w.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM checkpoints), (SELECT COUNT(*) FROM writes)`).Scan(&cps, &writes); err != nil {
		t.Fatal(err)
	}
	if cps != 1 || writes != 0 {
		t.Errorf("after the run's last Put under WithPruning: %d checkpoints, %d writes; want 1 (%s) and 0", cps, writes, last)
	}
}
