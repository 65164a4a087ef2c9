package sqlite

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// The writer never checkpoints the log itself (wal_autocheckpoint 0), so
// without the checkpointer the database file would keep its first pages
// and the log would grow without end: while the store is open, the log's
// pages reach the file and the log restarts from its beginning.
func TestCheckpointerCopiesTheLogIntoTheFile(t *testing.T) {
	// The hook is in place before the checkpointer starts and removed after
	// it stopped (Cleanup runs after the deferred Close).
	type report struct{ frames, copied int }
	reports := make(chan report, 64)
	var watching atomic.Bool
	afterCheckpoint = func(frames, copied int) {
		if !watching.Load() {
			return
		}
		select {
		case reports <- report{frames, copied}:
		default:
		}
	}
	t.Cleanup(func() { afterCheckpoint = nil })
	path := filepath.Join(t.TempDir(), "wal.db")
	s, err := New(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	size := func(p string) int64 {
		fi, err := os.Stat(p)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	start := size(path)
	ctx := context.Background()
	pad := make([]byte, 2000)
	rand.Read(pad) // incompressible: the states fill pages
	state := json.RawMessage(fmt.Sprintf(`{"pad":"%x"}`, pad))
	put := func(n int) {
		t.Helper()
		for i := range n {
			cp := checkpoint.Checkpoint{ThreadID: fmt.Sprintf("t%d", i%50), ID: uuid.Must(uuid.NewV7()), Step: i, State: state, Created: time.Now()}
			if err := s.Put(ctx, cp); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(600) // more than 1 MB of states, in more than SQLite's own threshold of 1 000 pages
	deadline := time.Now().Add(10 * time.Second)
	for size(path) <= start+1<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("the database file stayed at %d bytes (from %d) with a %d-byte log: nothing checkpointed it", size(path), start, size(path+"-wal"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Copied whole, the log is written again from its start: the next
	// checkpoint after one more write finds a log of that write's frames,
	// not the thousands before it.
	watching.Store(true)
	next := func() report {
		t.Helper()
		select {
		case r := <-reports:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no checkpoint within 10 s of a commit")
			return report{}
		}
	}
	put(1)
	for r := next(); r.frames != r.copied; r = next() {
		put(1) // not all copied yet (a reader in the way): another commit, another look
	}
	// A checkpoint already under way (or queued) when the loop ended may
	// still report the old log: look at a few, each after one more write.
	// A log that never restarts reports thousands of frames every time.
	small := false
	last := 0
	for range 5 {
		put(1)
		if r := next(); r.frames <= 20 {
			small = true
			break
		} else {
			last = r.frames
		}
	}
	if !small {
		t.Errorf("after the log was copied whole, writes left %d frames in it: the log did not restart", last)
	}
	if tu, err := s.Get(ctx, "t7", uuid.Nil); err != nil || tu.Checkpoint.ThreadID != "t7" {
		t.Fatalf("Get after checkpoints: %+v, %v", tu.Checkpoint, err)
	}
}
