package sqlite

import (
	"bytes"
	stdflate "compress/flate"
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// A state of a few KiB is stored compressed and comes back byte for byte;
// a small one, and one that does not compress, are stored as they are.
func TestStatesAreStoredCompressed(t *testing.T) {
	s := tempStore(t)
	ctx := context.Background()
	conv := conversation(30, `{"role":"user","content":"what is the beam current, question %d?","time":"2026-01-02T03:04:05Z"}`)
	random := make([]byte, 4096)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(random)
	for _, c := range []struct {
		name     string
		state    []byte
		deflated bool
	}{
		{"json of 4 KiB", []byte(`{"messages":[` + conv + `], "pad": "  "}`), true},
		{"small", []byte(`{"n": 1}`), false},
		{"incompressible", random, false},
		{"empty", nil, false},
	} {
		cp := checkpoint.Checkpoint{ThreadID: c.name, ID: uuid.Must(uuid.NewV7()), State: c.state, Created: time.Now()}
		if err := s.Put(ctx, cp); err != nil {
			t.Fatal(err)
		}
		var stored []byte
		var deflated bool
		if err := s.r.QueryRowContext(ctx, `SELECT state, state_deflate FROM checkpoints WHERE thread_id = ?`, c.name).Scan(&stored, &deflated); err != nil {
			t.Fatal(err)
		}
		if deflated != c.deflated || c.deflated && len(stored) > len(c.state)/2 {
			t.Errorf("%s: stored %d bytes of %d, deflated %v; want deflated %v", c.name, len(stored), len(c.state), deflated, c.deflated)
		}
		tu, err := s.Get(ctx, c.name, uuid.Nil)
		if err != nil || !bytes.Equal(tu.Checkpoint.State, c.state) {
			t.Errorf("%s: Get gave %d bytes (%v), want the %d put", c.name, len(tu.Checkpoint.State), err, len(c.state))
		}
		l, err := s.List(ctx, c.name, checkpoint.ListOptions{})
		if err != nil || len(l) != 1 || !bytes.Equal(l[0].State, c.state) {
			t.Errorf("%s: List gave %v", c.name, err)
		}
	}
	// A corrupt compressed state is an error, not garbage.
	if _, err := s.w.ExecContext(ctx, `UPDATE checkpoints SET state = x'deadbeef' WHERE thread_id = 'json of 4 KiB'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "json of 4 KiB", uuid.Nil); err == nil || !strings.Contains(err.Error(), "corrupt compressed state") {
		t.Errorf("Get of a corrupt compressed state: %v", err)
	}
}

// A database of schema version 1 (states never compressed) is migrated to
// version 2 on open; its states read back as they were, and new ones are
// compressed beside them.
func TestMigrationFromVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	w, err := sql.Open("sqlite", Config{Path: path}.writerDSN())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stmts := append([]string{`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`}, migrations[0]...)
	stmts = append(stmts, `INSERT INTO schema_migrations VALUES (1, 0)`)
	old := []byte(`{"old": "` + strings.Repeat("state of version 1 ", 100) + `"}`)
	for _, q := range stmts {
		if _, err := w.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	id := uuid.Must(uuid.NewV7())
	if _, err := w.ExecContext(ctx, `INSERT INTO checkpoints (thread_id, id, step, state) VALUES ('t', ?, 1, ?)`, id[:], old); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ExecContext(ctx, `INSERT INTO threads (thread_id, first_id, latest_id) VALUES ('t', ?, ?)`, id[:], id[:]); err != nil {
		t.Fatal(err)
	}
	w.Close()

	s, err := New(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.SchemaVersion(ctx); err != nil || v != 2 {
		t.Fatalf("SchemaVersion after migrating = %d, %v", v, err)
	}
	if tu, err := s.Get(ctx, "t", id); err != nil || !bytes.Equal(tu.Checkpoint.State, old) {
		t.Fatalf("the version-1 state after migrating: %v", err)
	}
	newer := checkpoint.Checkpoint{ThreadID: "t", ID: uuid.Must(uuid.NewV7()), ParentID: id, Step: 2, State: old}
	if err := s.Put(ctx, newer); err != nil {
		t.Fatal(err)
	}
	l, err := s.List(ctx, "t", checkpoint.ListOptions{})
	if err != nil || len(l) != 2 || !bytes.Equal(l[0].State, old) || !bytes.Equal(l[1].State, old) {
		t.Fatalf("List after migrating: %d, %v", len(l), err)
	}
}

// Under pruning that keeps nothing of a finished run but its end, a step's
// checkpoint is not compressed (it will be pruned), the run's end is.
func TestTransientStatesAreNotCompressed(t *testing.T) {
	s, err := New(Config{Path: filepath.Join(t.TempDir(), "t.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := checkpoint.WithPruning(context.Background(), 0)
	state := []byte(`{"pad": "` + strings.Repeat("beam current 500 mA ", 100) + `"}`)
	run := uuid.Must(uuid.NewV7())
	step := checkpoint.Checkpoint{ThreadID: "t", ID: uuid.Must(uuid.NewV7()), RunID: run, Step: 1, State: state, Next: []string{"n"}}
	end := checkpoint.Checkpoint{ThreadID: "t", ID: uuid.Must(uuid.NewV7()), RunID: run, Step: 2, State: state}
	for _, c := range []struct {
		cp       checkpoint.Checkpoint
		deflated bool
	}{{step, false}, {end, true}} {
		if err := s.Put(ctx, c.cp); err != nil {
			t.Fatal(err)
		}
		var deflated bool
		if err := s.r.QueryRowContext(ctx, `SELECT state_deflate FROM checkpoints WHERE id = ?`, c.cp.ID[:]).Scan(&deflated); err != nil {
			t.Fatal(err)
		}
		if deflated != c.deflated {
			t.Errorf("step %d: deflated %v, want %v", c.cp.Step, deflated, c.deflated)
		}
	}
}

// A compressed state is the caller's own: the writer that made it goes back
// to the pool at once (not after the commit), and compressing more states
// meanwhile, from many goroutines, leaves it unchanged.
func TestCompressedStateOutlivesItsWriter(t *testing.T) {
	state := func(i int) []byte {
		return []byte(strings.Repeat(fmt.Sprintf(`{"n":%d,"text":"the RF cavity voltage over two hours"},`, i), 40))
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var kept [][]byte
			for i := range 50 {
				b, ok := deflateState(state(g*1000 + i))
				if !ok {
					t.Errorf("state %d not compressed", i)
					return
				}
				kept = append(kept, b)
			}
			for i, b := range kept {
				got, err := inflateState(b)
				if err != nil || !bytes.Equal(got, state(g*1000+i)) {
					t.Errorf("state %d of goroutine %d changed after later compressions (%v)", i, g, err)
				}
			}
		}()
	}
	wg.Wait()
}

// States are DEFLATE either way: one compressed by compress/flate (what a
// store of an earlier version wrote) reads back, and one this store
// compresses reads with compress/flate (what an earlier version would read).
func TestCompressedStatesAreStandardDEFLATE(t *testing.T) {
	s := tempStore(t)
	ctx := context.Background()
	state := []byte(`{"messages":[` + conversation(40, `{"role":"assistant","content":"The beam current is 4%02d.5 mA.","time":"2026-01-02T03:04:05Z"}`) + `]}`)

	ours := checkpoint.Checkpoint{ThreadID: "ours", ID: uuid.Must(uuid.NewV7()), State: state, Created: time.Now()}
	if err := s.Put(ctx, ours); err != nil {
		t.Fatal(err)
	}
	var stored []byte
	if err := s.r.QueryRowContext(ctx, `SELECT state FROM checkpoints WHERE thread_id = 'ours' AND state_deflate`).Scan(&stored); err != nil {
		t.Fatalf("the state was not stored compressed: %v", err)
	}
	if got, err := io.ReadAll(stdflate.NewReader(bytes.NewReader(stored))); err != nil || !bytes.Equal(got, state) {
		t.Errorf("compress/flate read %d bytes (%v) of what the store wrote, want the %d put", len(got), err, len(state))
	}

	var old bytes.Buffer
	w, _ := stdflate.NewWriter(&old, stdflate.BestSpeed)
	w.Write(state)
	w.Close()
	theirs := checkpoint.Checkpoint{ThreadID: "theirs", ID: uuid.Must(uuid.NewV7()), State: []byte(`{}`), Created: time.Now()}
	if err := s.Put(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, `UPDATE checkpoints SET state = ?, state_deflate = 1 WHERE thread_id = 'theirs'`, old.Bytes()); err != nil {
		t.Fatal(err)
	}
	if tu, err := s.Get(ctx, "theirs", uuid.Nil); err != nil || !bytes.Equal(tu.Checkpoint.State, state) {
		t.Errorf("a state compress/flate compressed read back as %d bytes (%v), want the %d written", len(tu.Checkpoint.State), err, len(state))
	}
}

// conversation is n messages, format filled with 0..n-1, joined by commas.
func conversation(n int, format string) string {
	msgs := make([]string, n)
	for i := range msgs {
		msgs[i] = fmt.Sprintf(format, i)
	}
	return strings.Join(msgs, ",")
}
