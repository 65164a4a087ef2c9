package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/runstore"
)

// groupTest is a store whose writer the test can hold, so that writes queue
// up behind it as they would behind a slow fsync, and which records the size
// of every commit.
type groupTest struct {
	t       *testing.T
	s       *Store
	mu      sync.Mutex
	commits []int
}

func newGroupTest(t *testing.T, cfg Config) *groupTest {
	t.Helper()
	cfg.Path = filepath.Join(t.TempDir(), "g.db")
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gt := &groupTest{t: t, s: s}
	afterCommit = func(n int) {
		gt.mu.Lock()
		gt.commits = append(gt.commits, n)
		gt.mu.Unlock()
	}
	t.Cleanup(func() {
		afterCommit = nil
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return gt
}

// hold takes the writer connection until the returned function is called.
func (gt *groupTest) hold() func() {
	gt.t.Helper()
	tx, err := gt.s.w.BeginTx(context.Background(), nil)
	if err != nil {
		gt.t.Fatal(err)
	}
	return func() { tx.Rollback() } //nolint:errcheck // only releases the connection
}

// waitQueued waits until n writes are queued behind the one committing.
func (gt *groupTest) waitQueued(n int) {
	gt.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		gt.s.group.mu.Lock()
		got := len(gt.s.group.queue)
		gt.s.group.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			gt.t.Fatalf("%d writes queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitBusy waits until a write has taken the writer (and is blocked behind
// hold), so that the next writes queue behind it.
func (gt *groupTest) waitBusy() {
	gt.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		gt.s.group.mu.Lock()
		busy := gt.s.group.busy
		gt.s.group.mu.Unlock()
		if busy {
			return
		}
		if time.Now().After(deadline) {
			gt.t.Fatal("no write took the writer")
		}
		time.Sleep(time.Millisecond)
	}
}

func (gt *groupTest) commitSizes() []int {
	gt.mu.Lock()
	defer gt.mu.Unlock()
	return slices.Clone(gt.commits)
}

func groupCP(thread string) checkpoint.Checkpoint {
	return checkpoint.Checkpoint{ThreadID: thread, ID: uuid.Must(uuid.NewV7()), Step: 1,
		State: json.RawMessage(fmt.Sprintf(`{"thread":%q}`, thread)), Created: time.Now()}
}

// result of one write started with goWrite.
type result struct {
	name string
	err  error
}

// noErrors waits for the writes started with goWrite and reports those
// that failed.
func noErrors(t *testing.T, wg *sync.WaitGroup, out chan result) {
	t.Helper()
	wg.Wait()
	close(out)
	for r := range out {
		if r.err != nil {
			t.Errorf("%s: %v", r.name, r.err)
		}
	}
}

func goWrite(wg *sync.WaitGroup, out chan<- result, name string, f func() error) {
	wg.Go(func() { out <- result{name, f()} })
}

// Writes arriving while a commit is in flight are committed together, in
// one transaction, and each caller returns only after that commit.
func TestGroupCommitGroupsQueuedWrites(t *testing.T) {
	gt := newGroupTest(t, Config{})
	ctx := context.Background()
	release := gt.hold()
	var wg sync.WaitGroup
	out := make(chan result, 10)
	cps := make([]checkpoint.Checkpoint, 10)
	for i := range cps {
		cps[i] = groupCP(fmt.Sprint("t", i))
	}
	goWrite(&wg, out, "t0", func() error { return gt.s.Put(ctx, cps[0]) }) // commits first, alone
	gt.waitBusy()
	for _, cp := range cps[1:] {
		goWrite(&wg, out, cp.ThreadID, func() error { return gt.s.Put(ctx, cp) })
	}
	gt.waitQueued(9)
	select {
	case r := <-out:
		t.Fatalf("%s returned %v before any commit", r.name, r.err)
	default:
	}
	release()
	noErrors(t, &wg, out)
	if got := gt.commitSizes(); !slices.Equal(got, []int{1, 9}) {
		t.Errorf("commit sizes %v, want [1 9]: the first write alone, the nine queued behind it together", got)
	}
	if st := gt.s.Stats(); st != (Stats{Commits: 2, Writes: 10}) {
		t.Errorf("Stats %+v, want 2 commits holding 10 writes", st)
	}
	for _, cp := range cps {
		if tu, err := gt.s.Get(ctx, cp.ThreadID, uuid.Nil); err != nil || tu.Checkpoint.ID != cp.ID {
			t.Errorf("%s after the group commit: %v, %v", cp.ThreadID, tu.Checkpoint.ID, err)
		}
	}
}

// MaxBatch caps a group.
func TestGroupCommitMaxBatch(t *testing.T) {
	gt := newGroupTest(t, Config{MaxBatch: 4})
	ctx := context.Background()
	release := gt.hold()
	var wg sync.WaitGroup
	out := make(chan result, 11)
	goWrite(&wg, out, "first", func() error { return gt.s.Put(ctx, groupCP("first")) })
	gt.waitBusy()
	for i := range 10 {
		goWrite(&wg, out, fmt.Sprint(i), func() error { return gt.s.Put(ctx, groupCP(fmt.Sprint("q", i))) })
	}
	gt.waitQueued(10)
	release()
	noErrors(t, &wg, out)
	if got := gt.commitSizes(); !slices.Equal(got, []int{1, 4, 4, 2}) {
		t.Errorf("commit sizes %v, want [1 4 4 2]", got)
	}
}

// In one group, a write whose caller gave up, a write under a lost lease and
// a PutWrites on a missing checkpoint fail alone, with their own errors,
// storing nothing; the others commit.
func TestGroupCommitFailuresStayWithTheirWrite(t *testing.T) {
	gt := newGroupTest(t, Config{})
	ctx := context.Background()
	lease, err := gt.s.AcquireLease(ctx, "fenced", "old-owner", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	release := gt.hold()
	var wg sync.WaitGroup
	out := make(chan result, 8)
	goWrite(&wg, out, "first", func() error { return gt.s.Put(ctx, groupCP("first")) })
	gt.waitBusy()

	good1, good2 := groupCP("good1"), groupCP("good2")
	goWrite(&wg, out, "good1", func() error { return gt.s.Put(ctx, good1) })
	gt.waitQueued(1)
	fenced := groupCP("fenced")
	goWrite(&wg, out, "fenced", func() error { return gt.s.Put(checkpoint.WithLease(ctx, lease), fenced) })
	gt.waitQueued(2)
	goWrite(&wg, out, "missing", func() error {
		return gt.s.PutWrites(ctx, "nowhere", uuid.Must(uuid.NewV7()), []checkpoint.Write{{Task: "a", Kind: checkpoint.WriteUpdate}})
	})
	gt.waitQueued(3)
	cctx, cancel := context.WithCancel(ctx)
	canceled := groupCP("canceled")
	goWrite(&wg, out, "canceled", func() error { return gt.s.Put(cctx, canceled) })
	gt.waitQueued(4)
	goWrite(&wg, out, "good2", func() error { return gt.s.Put(ctx, good2) })
	gt.waitQueued(5)
	// The lease is taken over and one caller gives up, while their writes wait.
	if err := gt.s.ReleaseLease(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if _, err := gt.s.AcquireLease(ctx, "fenced", "new-owner", time.Minute); err != nil {
		t.Fatal(err)
	}
	cancel()
	gt.waitQueued(4) // the canceled write left the queue
	release()
	wg.Wait()
	close(out)
	errs := map[string]error{}
	for r := range out {
		errs[r.name] = r.err
	}
	for _, name := range []string{"first", "good1", "good2"} {
		if errs[name] != nil {
			t.Errorf("%s: %v", name, errs[name])
		}
	}
	if !errors.Is(errs["fenced"], checkpoint.ErrLeaseLost) {
		t.Errorf("fenced: %v, want ErrLeaseLost", errs["fenced"])
	}
	if !errors.Is(errs["missing"], checkpoint.ErrNotFound) {
		t.Errorf("missing: %v, want ErrNotFound", errs["missing"])
	}
	if !errors.Is(errs["canceled"], context.Canceled) {
		t.Errorf("canceled: %v, want context.Canceled", errs["canceled"])
	}
	for _, thread := range []string{"fenced", "canceled"} {
		if _, err := gt.s.Get(ctx, thread, uuid.Nil); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("%s was stored (%v)", thread, err)
		}
	}
	for _, cp := range []checkpoint.Checkpoint{good1, good2} {
		if tu, err := gt.s.Get(ctx, cp.ThreadID, uuid.Nil); err != nil || tu.Checkpoint.ID != cp.ID {
			t.Errorf("%s: %v, %v", cp.ThreadID, tu.Checkpoint.ID, err)
		}
	}
	if got := gt.commitSizes(); !slices.Equal(got, []int{1, 4}) {
		t.Errorf("commit sizes %v, want [1 4] (good1, fenced, missing, good2)", got)
	}
}

// A database error in one write of a group rolls the group back, and each
// write is then committed on its own: the others are stored, the failing one
// gets its error.
func TestGroupCommitDatabaseErrorIsolated(t *testing.T) {
	gt := newGroupTest(t, Config{})
	ctx := context.Background()
	if _, err := gt.s.w.ExecContext(ctx, `CREATE TRIGGER poison BEFORE INSERT ON checkpoints
		WHEN NEW.thread_id = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned row'); END`); err != nil {
		t.Fatal(err)
	}
	release := gt.hold()
	var wg sync.WaitGroup
	out := make(chan result, 4)
	goWrite(&wg, out, "first", func() error { return gt.s.Put(ctx, groupCP("first")) })
	gt.waitBusy()
	a, b := groupCP("a"), groupCP("b")
	goWrite(&wg, out, "a", func() error { return gt.s.Put(ctx, a) })
	gt.waitQueued(1)
	goWrite(&wg, out, "poison", func() error { return gt.s.Put(ctx, groupCP("poison")) })
	gt.waitQueued(2)
	goWrite(&wg, out, "b", func() error { return gt.s.Put(ctx, b) })
	gt.waitQueued(3)
	release()
	wg.Wait()
	close(out)
	for r := range out {
		switch {
		case r.name == "poison" && (r.err == nil || !strings.Contains(r.err.Error(), "poisoned row")):
			t.Errorf("poison: %v, want the trigger's error", r.err)
		case r.name != "poison" && r.err != nil:
			t.Errorf("%s: %v", r.name, r.err)
		}
	}
	for _, cp := range []checkpoint.Checkpoint{a, b} {
		if tu, err := gt.s.Get(ctx, cp.ThreadID, uuid.Nil); err != nil || tu.Checkpoint.ID != cp.ID {
			t.Errorf("%s after the poisoned group: %v, %v", cp.ThreadID, tu.Checkpoint.ID, err)
		}
	}
	if got := gt.commitSizes(); !slices.Equal(got, []int{1, 1, 1}) {
		t.Errorf("commit sizes %v, want [1 1 1]: first, then a and b each alone after the rollback", got)
	}
}

// Close lets queued writes commit before closing, and refuses writes after.
func TestGroupCommitClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	s, err := New(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	gt := &groupTest{t: t, s: s}
	ctx := context.Background()
	release := gt.hold()
	var wg sync.WaitGroup
	out := make(chan result, 4)
	cps := []checkpoint.Checkpoint{groupCP("a"), groupCP("b"), groupCP("c")}
	goWrite(&wg, out, "a", func() error { return s.Put(ctx, cps[0]) })
	gt.waitBusy()
	goWrite(&wg, out, "b", func() error { return s.Put(ctx, cps[1]) })
	goWrite(&wg, out, "c", func() error { return s.Put(ctx, cps[2]) })
	gt.waitQueued(2)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.group.mu.Lock()
		c := s.group.closed
		s.group.mu.Unlock()
		if c {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Close did not start")
		}
		time.Sleep(time.Millisecond)
	}
	if err := s.Put(ctx, groupCP("late")); !errors.Is(err, errClosed) {
		t.Errorf("Put after Close: %v, want the store-closed error", err)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) with writes still queued", err)
	default:
	}
	release()
	noErrors(t, &wg, out)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Reopened, the file holds the three writes Close waited for.
	reopenedHolds(t, path, cps...)
}

// reopenedHolds opens the store file at path again and checks that each
// checkpoint is its thread's latest.
func reopenedHolds(t *testing.T, path string, cps ...checkpoint.Checkpoint) {
	t.Helper()
	s, err := New(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, cp := range cps {
		if tu, err := s.Get(context.Background(), cp.ThreadID, uuid.Nil); err != nil || tu.Checkpoint.ID != cp.ID {
			t.Errorf("%s after Close: %v, %v", cp.ThreadID, tu.Checkpoint.ID, err)
		}
	}
}

// A panic while writing (in the driver, say) reaches a lone write's caller,
// as without grouping, and becomes the error of every write of a group; in
// neither case is the writer left busy.
func TestGroupCommitPanic(t *testing.T) {
	gt := newGroupTest(t, Config{})
	ctx := context.Background()
	boom := func(context.Context, *sql.Tx) error { panic("driver exploded") }
	func() {
		defer func() {
			if v := recover(); v != "driver exploded" {
				t.Errorf("lone write: recovered %v, want the panic", v)
			}
		}()
		gt.s.write(ctx, "lone", boom) //nolint:errcheck // panics
	}()
	if err := gt.s.Put(ctx, groupCP("after-lone")); err != nil {
		t.Fatalf("Put after a lone write panicked: %v", err)
	}

	release := gt.hold()
	var wg sync.WaitGroup
	out := make(chan result, 3)
	goWrite(&wg, out, "first", func() error { return gt.s.Put(ctx, groupCP("first")) })
	gt.waitBusy()
	goWrite(&wg, out, "a", func() error { return gt.s.Put(ctx, groupCP("a")) })
	gt.waitQueued(1)
	goWrite(&wg, out, "boom", func() error { return gt.s.write(ctx, "boom", boom) })
	gt.waitQueued(2)
	release()
	wg.Wait()
	close(out)
	for r := range out {
		switch {
		case r.name == "first" && r.err != nil:
			t.Errorf("first: %v", r.err)
		case r.name != "first" && (r.err == nil || !strings.Contains(r.err.Error(), "driver exploded")):
			t.Errorf("%s in the group that panicked: %v, want the panic as an error", r.name, r.err)
		}
	}
	if err := gt.s.Put(ctx, groupCP("after-group")); err != nil {
		t.Fatalf("Put after a group panicked: %v", err)
	}
}

// Run records are written with the checkpoints' group commit: queued behind
// a commit in flight, a new record, an update, a refused update (a status
// it may not move from) and a duplicate id are one transaction with the
// Puts beside them; the refusals fail alone and the rest is stored.
func TestGroupCommitHoldsRunRecords(t *testing.T) {
	gt := newGroupTest(t, Config{})
	ctx := context.Background()
	if _, _, err := gt.s.CreateRun(ctx, runstore.Record{ID: "run-old", Thread: "t-old", Status: runstore.Running}); err != nil {
		t.Fatal(err)
	}
	gt.mu.Lock()
	gt.commits = nil
	gt.mu.Unlock()
	release := gt.hold()
	var wg sync.WaitGroup
	out := make(chan result, 8)
	first := groupCP("t-first")
	goWrite(&wg, out, "first put", func() error { return gt.s.Put(ctx, first) })
	gt.waitBusy()
	cp := groupCP("t-put")
	goWrite(&wg, out, "put", func() error { return gt.s.Put(ctx, cp) })
	goWrite(&wg, out, "create", func() error {
		_, created, err := gt.s.CreateRun(ctx, runstore.Record{ID: "run-new", Thread: "t-new", Key: "k-new"})
		if err == nil && !created {
			err = errors.New("not created")
		}
		return err
	})
	goWrite(&wg, out, "update", func() error {
		_, err := gt.s.UpdateRun(ctx, "run-old", runstore.Update{From: []runstore.Status{runstore.Running}, Status: runstore.Done})
		return err
	})
	goWrite(&wg, out, "refused update", func() error {
		_, err := gt.s.UpdateRun(ctx, "run-old", runstore.Update{From: []runstore.Status{runstore.Queued}, Status: runstore.Failed})
		if !errors.Is(err, runstore.ErrConflict) {
			return fmt.Errorf("got %v, want ErrRunConflict", err)
		}
		return nil
	})
	goWrite(&wg, out, "duplicate id", func() error {
		_, _, err := gt.s.CreateRun(ctx, runstore.Record{ID: "run-old", Thread: "t-old"})
		var inv *runstore.InvalidError
		if !errors.As(err, &inv) {
			return fmt.Errorf("got %v, want an InvalidError naming the id", err)
		}
		return nil
	})
	goWrite(&wg, out, "missing", func() error {
		_, err := gt.s.UpdateRun(ctx, "run-none", runstore.Update{Status: runstore.Done})
		if !errors.Is(err, runstore.ErrNotFound) {
			return fmt.Errorf("got %v, want ErrNotFound", err)
		}
		return nil
	})
	gt.waitQueued(6)
	release()
	noErrors(t, &wg, out)
	if got := gt.commitSizes(); !slices.Equal(got, []int{1, 6}) {
		t.Errorf("commit sizes %v, want [1 6]: the six writes queued behind the first in one transaction", got)
	}
	if r, err := gt.s.GetRun(ctx, "run-old"); err != nil || r.Status != runstore.Done {
		t.Errorf("run-old: %+v, %v; want done (the refused update changed nothing)", r, err)
	}
	if r, err := gt.s.GetRunByKey(ctx, "k-new"); err != nil || r.ID != "run-new" || r.Status != runstore.Queued {
		t.Errorf("run-new: %+v, %v", r, err)
	}
	if tu, err := gt.s.Get(ctx, cp.ThreadID, uuid.Nil); err != nil || tu.Checkpoint.ID != cp.ID {
		t.Errorf("the Put grouped with the records: %v, %v", tu.Checkpoint.ID, err)
	}
}

// A deferrable write (runstore.Deferrable) that finds the writer idle
// waits for the next commit and rides in it; with none coming it commits
// after deferLimit on its own. Either way it returns once durable, a
// caller that gives up first leaves nothing written, and Close waits for
// one still waiting.
func TestGroupCommitDeferrableWrites(t *testing.T) {
	later := runstore.Deferrable(context.Background())
	now := context.Background()
	t.Run("rides in the next commit", func(t *testing.T) {
		gt := newGroupTest(t, Config{})
		var wg sync.WaitGroup
		out := make(chan result, 3)
		goWrite(&wg, out, "d1", func() error { return gt.s.Put(later, groupCP("d1")) })
		goWrite(&wg, out, "d2", func() error { return gt.s.Put(later, groupCP("d2")) })
		gt.waitQueued(2)
		goWrite(&wg, out, "now", func() error { return gt.s.Put(now, groupCP("now")) })
		noErrors(t, &wg, out)
		if got := gt.commitSizes(); len(got) != 1 || got[0] != 3 {
			// The timer may fire before the third write arrives on a
			// very slow machine; then the two deferred ones commit
			// together and the third alone.
			if !slices.Equal(got, []int{2, 1}) {
				t.Errorf("commit sizes %v, want [3]: the two deferred writes in the commit of the one that came next", got)
			}
		}
	})
	t.Run("commits alone within the limit", func(t *testing.T) {
		gt := newGroupTest(t, Config{})
		cp := groupCP("alone")
		if err := gt.s.Put(later, cp); err != nil {
			t.Fatal(err)
		}
		if got := gt.commitSizes(); !slices.Equal(got, []int{1}) {
			t.Errorf("commit sizes %v, want [1]", got)
		}
		if tu, err := gt.s.Get(now, "alone", uuid.Nil); err != nil || tu.Checkpoint.ID != cp.ID {
			t.Errorf("after the deferred write returned: %v, %v", tu.Checkpoint.ID, err)
		}
	})
	t.Run("MaxBatch still caps the commit that takes them", func(t *testing.T) {
		gt := newGroupTest(t, Config{MaxBatch: 2})
		var wg sync.WaitGroup
		out := make(chan result, 4)
		for i := range 3 {
			goWrite(&wg, out, fmt.Sprint("d", i), func() error { return gt.s.Put(later, groupCP(fmt.Sprint("d", i))) })
		}
		gt.waitQueued(3)
		goWrite(&wg, out, "now", func() error { return gt.s.Put(now, groupCP("now")) })
		noErrors(t, &wg, out)
		for _, n := range gt.commitSizes() {
			if n > 2 {
				t.Errorf("commit sizes %v: one above MaxBatch 2", gt.commitSizes())
			}
		}
		if st := gt.s.Stats(); st.Writes != 4 {
			t.Errorf("Stats %+v, want 4 writes", st)
		}
	})
	t.Run("a caller that gives up first", func(t *testing.T) {
		gt := newGroupTest(t, Config{})
		release := gt.hold() // the deferred commit waits behind it
		ctx, cancel := context.WithCancel(later)
		done := make(chan error, 1)
		go func() { done <- gt.s.Put(ctx, groupCP("gave-up")) }()
		gt.waitQueued(1)
		cancel()
		// Given up while queued, or taken by the deferred commit (waiting
		// for the writer) and skipped there: canceled either way.
		release()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Put = %v, want context.Canceled", err)
		}
		if _, err := gt.s.Get(now, "gave-up", uuid.Nil); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("the write given up on: %v, want not found", err)
		}
	})
	t.Run("Close waits for it", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "d.db")
		s, err := New(Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		gt := &groupTest{t: t, s: s}
		done := make(chan error, 1)
		cp := groupCP("at-close")
		go func() { done <- s.Put(later, cp) }()
		gt.waitQueued(1)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("the deferred write: %v", err)
		}
		reopenedHolds(t, path, cp)
	})
}
