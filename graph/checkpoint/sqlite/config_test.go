package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
)

func TestNewRefusesBadConfig(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		cfg  sqlite.Config
		want string
	}{
		{"empty path", sqlite.Config{}, "Path is empty"},
		{"memory", sqlite.Config{Path: ":memory:"}, `":memory:"`},
		{"uri", sqlite.Config{Path: "file:x.db"}, `"file:x.db"`},
		{"question mark", sqlite.Config{Path: filepath.Join(dir, "a?b.db")}, "contains '?'"},
		{"negative read conns", sqlite.Config{Path: filepath.Join(dir, "x.db"), ReadConns: -1}, "ReadConns -1"},
		{"negative busy timeout", sqlite.Config{Path: filepath.Join(dir, "x.db"), BusyTimeout: -time.Second}, "BusyTimeout -1s"},
		{"negative max batch", sqlite.Config{Path: filepath.Join(dir, "x.db"), MaxBatch: -1}, "MaxBatch -1"},
	} {
		_, err := sqlite.New(tc.cfg)
		if !errors.Is(err, sqlite.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig naming %s", tc.name, err, tc.want)
		}
	}
	// A directory that does not exist is reported by the driver, not hidden.
	if _, err := sqlite.New(sqlite.Config{Path: filepath.Join(dir, "missing", "x.db")}); err == nil {
		t.Error("New in a missing directory succeeded")
	}
}

func TestNewFileIsPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "private.db")
	s, err := sqlite.New(sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Put(context.Background(), checkpoint.Checkpoint{ThreadID: "t", ID: uuid.Must(uuid.NewV7())}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s has mode %o, want 600", filepath.Base(p), perm)
		}
	}
}

func TestReopenKeepsDataAndSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.db")
	ctx := context.Background()
	s, err := sqlite.New(sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.Must(uuid.NewV7())
	if err := s.Put(ctx, checkpoint.Checkpoint{ThreadID: "t", ID: id, State: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = sqlite.New(sqlite.Config{Path: path})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if v, err := s.SchemaVersion(ctx); err != nil || v != 2 {
		t.Errorf("SchemaVersion = %d, %v; want 2", v, err)
	}
	tu, err := s.Get(ctx, "t", uuid.Nil)
	if err != nil || tu.Checkpoint.ID != id {
		t.Errorf("after reopen: %v, %v", tu.Checkpoint.ID, err)
	}
}

// Two Stores on one file behave like two processes: their writers queue on
// SQLite's lock (IMMEDIATE transactions + busy_timeout) instead of failing.
func TestTwoStoresOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	ctx := context.Background()
	var stores [2]*sqlite.Store
	for i := range stores {
		s, err := sqlite.New(sqlite.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[i] = s
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[g%2]
			for i := range 50 {
				cp := checkpoint.Checkpoint{ThreadID: fmt.Sprint("g", g), ID: uuid.Must(uuid.NewV7()), Step: i, State: []byte(`1`)}
				if err := s.Put(ctx, cp); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent Put across two stores: %v", err)
	}
	ts, err := stores[0].Threads(ctx, checkpoint.ThreadFilter{})
	if err != nil || len(ts) != 4 {
		t.Errorf("Threads = %d, %v; want 4", len(ts), err)
	}
}
