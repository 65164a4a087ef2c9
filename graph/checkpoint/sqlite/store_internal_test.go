package sqlite

import (
	"context"
	"path/filepath"
	"testing"
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
