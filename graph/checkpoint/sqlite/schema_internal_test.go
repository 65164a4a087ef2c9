package sqlite

import (
	"errors"
	"path/filepath"
	"testing"
)

func TestSchemaTooNewIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	s, err := New(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)`, len(migrations)+1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = New(Config{Path: path})
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("New on a newer schema: err = %v, want ErrSchemaTooNew", err)
	}
}
