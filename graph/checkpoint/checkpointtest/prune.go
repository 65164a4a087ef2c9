package checkpointtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

var pruneCases = []struct {
	name string
	fn   func(t *testing.T, s checkpoint.Store, p checkpoint.Pruner)
}{
	{"PruneFinishedRuns", testPruneFinishedRuns},
	{"PruneThreadsAndAge", testPruneThreadsAndAge},
	{"PruneOnPut", testPruneOnPut},
	{"PruneWhileRunning", testPruneWhileRunning},
	{"PruneCanceledContext", testPruneCanceledContext},
}

// runner writes the checkpoints of runs on one thread as the engine does:
// step 0 then one per step, each the child of the previous, the last of a
// finished run without next nodes.
type runner struct {
	t      *testing.T
	s      checkpoint.Store
	g      *gen
	thread string
	last   uuid.UUID // the thread's latest checkpoint
	run    uuid.UUID
	at     time.Time
}

func newRunner(t *testing.T, s checkpoint.Store, thread string) *runner {
	g := newGen(t)
	return &runner{t: t, s: s, g: g, thread: thread, at: g.base}
}

// start begins a new run and returns its input checkpoint.
func (r *runner) start() checkpoint.Checkpoint {
	r.run = r.g.id()
	return r.step(0, false)
}

// step writes the run's next checkpoint; end makes it the run's last.
func (r *runner) step(n int, end bool) checkpoint.Checkpoint {
	return r.stepCtx(context.Background(), n, end)
}

func (r *runner) stepCtx(ctx context.Context, n int, end bool) checkpoint.Checkpoint {
	r.t.Helper()
	r.at = r.at.Add(time.Second)
	cp := checkpoint.Checkpoint{ThreadID: r.thread, ID: r.g.id(), ParentID: r.last, RunID: r.run, Step: n,
		State: json.RawMessage(fmt.Sprintf(`{"step":%d}`, n)), Next: []string{"node"}, Created: r.at}
	if end {
		cp.Next = nil
	}
	if err := r.s.Put(ctx, cp); err != nil {
		r.t.Fatalf("Put step %d of %s: %v", n, r.thread, err)
	}
	r.last = cp.ID
	return cp
}

func (r *runner) write(id uuid.UUID, task string) {
	r.t.Helper()
	if err := r.s.PutWrites(context.Background(), r.thread, id, []checkpoint.Write{{Task: task, Kind: checkpoint.WriteUpdate, Value: json.RawMessage(`1`)}}); err != nil {
		r.t.Fatalf("PutWrites: %v", err)
	}
}

func prune(t *testing.T, p checkpoint.Pruner, opts checkpoint.PruneOptions) checkpoint.PruneResult {
	t.Helper()
	res, err := p.Prune(context.Background(), opts)
	if err != nil {
		t.Fatalf("Prune(%+v): %v", opts, err)
	}
	return res
}

func keptIDs(t *testing.T, s checkpoint.Store, thread string) []uuid.UUID {
	t.Helper()
	l, err := s.List(context.Background(), thread, checkpoint.ListOptions{})
	if err != nil {
		t.Fatalf("List(%s): %v", thread, err)
	}
	out := ids(l)
	slices.Reverse(out) // oldest first, as written
	return out
}

// Prune keeps the last checkpoint of every finished run (ended, or followed
// by a later run) and every checkpoint of an unfinished latest run, with
// their writes; it deletes the rest and their writes, and counts them.
func testPruneFinishedRuns(t *testing.T, s checkpoint.Store, p checkpoint.Pruner) {
	r := newRunner(t, s, "t1")
	// Run 1 ends: steps 0, 1, 2 (the last without next nodes).
	a0, a1 := r.start(), r.step(1, false)
	r.write(a1.ID, "w1")
	r.write(a1.ID, "w2")
	a2 := r.step(2, true)
	r.write(a2.ID, "kept")
	// Run 2 is cut after step 1 and abandoned: run 3 starts after it.
	b0, b1 := r.start(), r.step(1, false)
	r.write(b1.ID, "error")
	// Run 3 is in progress (waiting for an approval, say).
	c0, c1 := r.start(), r.step(1, false)
	r.write(c1.ID, "interrupt")
	before, err := s.Threads(context.Background(), checkpoint.ThreadFilter{})
	if err != nil {
		t.Fatal(err)
	}

	res := prune(t, p, checkpoint.PruneOptions{Thread: "t1"})
	if want := (checkpoint.PruneResult{Checkpoints: 3, Writes: 2}); res != want {
		t.Errorf("Prune = %+v, want %+v (run 1's steps 0 and 1 with its two writes, run 2's step 0)", res, want)
	}
	if got, want := keptIDs(t, s, "t1"), []uuid.UUID{a2.ID, b1.ID, c0.ID, c1.ID}; !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v: each finished run's last checkpoint and all of the unfinished latest run", got, want)
	}
	for _, id := range []uuid.UUID{a0.ID, a1.ID, b0.ID} {
		if _, err := s.Get(context.Background(), "t1", id); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("Get of pruned %s: %v, want ErrNotFound", id, err)
		}
	}
	for _, k := range []struct {
		id   uuid.UUID
		task string
	}{{a2.ID, "kept"}, {b1.ID, "error"}, {c1.ID, "interrupt"}} {
		if tu := get(t, s, "t1", k.id); len(tu.Writes) != 1 || tu.Writes[0].Task != k.task {
			t.Errorf("writes of kept %s: %+v, want %q", k.id, tu.Writes, k.task)
		}
	}
	if d := diff(c1, get(t, s, "t1", uuid.Nil).Checkpoint); d != "" {
		t.Errorf("latest after Prune: %s", d)
	}
	after, err := s.Threads(context.Background(), checkpoint.ThreadFilter{})
	if err != nil || len(after) != 1 || after[0].Latest != before[0].Latest || !after[0].Created.Equal(before[0].Created) || !after[0].Updated.Equal(before[0].Updated) {
		t.Errorf("thread summary after Prune %+v, %v; before %+v", after, err, before)
	}
	if res := prune(t, p, checkpoint.PruneOptions{Thread: "t1"}); res != (checkpoint.PruneResult{}) {
		t.Errorf("a second Prune deleted %+v, want nothing", res)
	}

	// Run 3 ends: all but its last go too.
	c2 := r.step(2, true)
	if res := prune(t, p, checkpoint.PruneOptions{}); res != (checkpoint.PruneResult{Checkpoints: 2, Writes: 1}) {
		t.Errorf("Prune after run 3 ended = %+v, want its steps 0 and 1 and the write", res)
	}
	if got, want := keptIDs(t, s, "t1"), []uuid.UUID{a2.ID, b1.ID, c2.ID}; !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	// A run of one checkpoint (ended at once) and a missing thread: nothing.
	if res := prune(t, p, checkpoint.PruneOptions{Thread: "nope"}); res != (checkpoint.PruneResult{}) {
		t.Errorf("Prune of a missing thread = %+v", res)
	}
	if rl, ok := s.(checkpoint.RecordLog); ok {
		appendRecords(t, rl, checkpoint.Record{Kind: "audit", Thread: "t1", Data: json.RawMessage(`{}`)})
		r.start()
		r.step(1, true)
		prune(t, p, checkpoint.PruneOptions{})
		if recs := listRecords(t, rl, checkpoint.RecordFilter{Thread: "t1"}); len(recs) != 1 {
			t.Errorf("records after Prune: %d, want the 1 appended", len(recs))
		}
	}
}

// Thread limits Prune to one thread, Metadata to the threads whose latest
// checkpoint matches; FinishedBefore keeps runs that ended at or after it.
func testPruneThreadsAndAge(t *testing.T, s checkpoint.Store, p checkpoint.Pruner) {
	ra, rb := newRunner(t, s, "a"), newRunner(t, s, "b")
	ra.start()
	ra.step(1, false)
	a2 := ra.step(2, true) // ends at base+3s
	ra.start()
	ra.step(1, false)
	a5 := ra.step(2, true) // ends at base+6s
	rb.start()
	b1 := rb.step(1, true)

	if res := prune(t, p, checkpoint.PruneOptions{Thread: "b"}); res.Checkpoints != 1 {
		t.Errorf("Prune of b = %+v, want 1 checkpoint", res)
	}
	if got := keptIDs(t, s, "b"); !slices.Equal(got, []uuid.UUID{b1.ID}) {
		t.Errorf("b kept %v", got)
	}
	if got := keptIDs(t, s, "a"); len(got) != 6 {
		t.Errorf("pruning b changed a: %d checkpoints, want 6", len(got))
	}
	// The first run of a ended at base+3s, the second at base+6s.
	res := prune(t, p, checkpoint.PruneOptions{FinishedBefore: a2.Created.Add(time.Second)})
	if res.Checkpoints != 2 {
		t.Errorf("Prune of runs finished before %v = %+v, want the first run's 2", a2.Created.Add(time.Second), res)
	}
	if got := keptIDs(t, s, "a"); len(got) != 4 || got[0] != a2.ID {
		t.Errorf("a kept %v, want the first run's last and the whole second run", got)
	}
	if res := prune(t, p, checkpoint.PruneOptions{FinishedBefore: a5.Created}); res.Checkpoints != 0 {
		t.Errorf("a run finished at FinishedBefore was pruned: %+v", res)
	}
	if res := prune(t, p, checkpoint.PruneOptions{FinishedBefore: a5.Created.Add(time.Microsecond)}); res.Checkpoints != 2 {
		t.Errorf("Prune just after the second run ended = %+v, want its 2", res)
	}
	if got := keptIDs(t, s, "a"); !slices.Equal(got, []uuid.UUID{a2.ID, a5.ID}) {
		t.Errorf("a kept %v, want each run's last", got)
	}

	// Metadata: only the threads whose latest checkpoint matches.
	for _, c := range []struct {
		thread, app string
	}{{"x1", "x"}, {"x2", "x"}, {"y1", "y"}, {"none", ""}} {
		r := newRunner(t, s, c.thread)
		r.run = r.g.id()
		for i := range 3 {
			r.at = r.at.Add(time.Second)
			cp := checkpoint.Checkpoint{ThreadID: c.thread, ID: r.g.id(), ParentID: r.last, RunID: r.run, Step: i, Next: []string{"n"}, Created: r.at}
			if c.app != "" {
				cp.Metadata = map[string]string{"application": c.app, "i": fmt.Sprint(i)}
			}
			if i == 2 {
				cp.Next = nil
			}
			put(t, s, cp)
			r.last = cp.ID
		}
	}
	if res := prune(t, p, checkpoint.PruneOptions{Metadata: map[string]string{"application": "x"}}); res.Checkpoints != 4 {
		t.Errorf("Prune of application x = %+v, want 2 threads' 2 each", res)
	}
	if res := prune(t, p, checkpoint.PruneOptions{Thread: "y1", Metadata: map[string]string{"application": "x"}}); res.Checkpoints != 0 {
		t.Errorf("Prune of thread y1 with application x's metadata = %+v, want nothing", res)
	}
	for th, n := range map[string]int{"x1": 1, "x2": 1, "y1": 3, "none": 3} {
		if got := len(keptIDs(t, s, th)); got != n {
			t.Errorf("%s keeps %d checkpoints, want %d", th, got, n)
		}
	}
}

// Under checkpoint.WithPruning, the Put that ends a run prunes its thread;
// other Puts prune nothing.
func testPruneOnPut(t *testing.T, s checkpoint.Store, _ checkpoint.Pruner) {
	ctx := checkpoint.WithPruning(context.Background(), 0)
	r := newRunner(t, s, "t1")
	r.start()
	r.stepCtx(ctx, 1, false)
	if n := len(keptIDs(t, s, "t1")); n != 2 {
		t.Fatalf("a Put with next nodes pruned: %d checkpoints, want 2", n)
	}
	end := r.stepCtx(ctx, 2, true)
	if got := keptIDs(t, s, "t1"); !slices.Equal(got, []uuid.UUID{end.ID}) {
		t.Errorf("after the run's last Put under WithPruning: %v, want only %s", got, end.ID)
	}
	// keep: a run is pruned only once it ended that long before the new
	// last checkpoint.
	keep := checkpoint.WithPruning(context.Background(), 90*time.Second)
	r.start()
	end2 := r.stepCtx(keep, 1, true)
	if got := keptIDs(t, s, "t1"); len(got) != 3 {
		t.Errorf("keep 90s pruned a run that ended 2s before: %v", got)
	}
	r.at = r.at.Add(100 * time.Second)
	start3 := r.start()
	end3 := r.stepCtx(keep, 1, true)
	if got := keptIDs(t, s, "t1"); !slices.Equal(got, []uuid.UUID{end.ID, end2.ID, start3.ID, end3.ID}) {
		t.Errorf("keep 90s, 100s later: %v, want the second run pruned, the third kept whole", got)
	}
	// A negative keep prunes nothing.
	r.start()
	r.stepCtx(checkpoint.WithPruning(context.Background(), -1), 1, true)
	if res := prune(t, s.(checkpoint.Pruner), checkpoint.PruneOptions{}); res.Checkpoints != 2 {
		t.Errorf("after a Put under WithPruning(-1), Prune deleted %+v, want the last two runs' first checkpoints", res)
	}
}

// Prune running over and over beside a run in progress never deletes what
// the run writes next to: its Puts and PutWrites all succeed, and the run
// is whole at the end. Finished runs of other threads are pruned meanwhile.
func testPruneWhileRunning(t *testing.T, s checkpoint.Store, p checkpoint.Pruner) {
	const steps = 40
	done := make(chan struct{})
	var (
		wg   sync.WaitGroup
		perr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if _, err := p.Prune(context.Background(), checkpoint.PruneOptions{}); err != nil {
				perr = err
				return
			}
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	running := newRunner(t, s, "running")
	var written []uuid.UUID
	written = append(written, running.start().ID)
	for i := 1; i <= steps; i++ {
		cp := running.step(i, false)
		running.write(cp.ID, "branch")
		written = append(written, cp.ID)
		// Other threads finish runs meanwhile.
		other := newRunner(t, s, fmt.Sprint("done-", i))
		other.start()
		other.step(1, true)
	}
	close(done)
	wg.Wait()
	if perr != nil {
		t.Fatalf("Prune: %v", perr)
	}
	if got := keptIDs(t, s, "running"); !slices.Equal(got, written) {
		t.Errorf("the running run has %d of its %d checkpoints after concurrent Prunes", len(got), len(written))
	}
	prune(t, p, checkpoint.PruneOptions{})
	for i := 1; i <= steps; i++ {
		if n := len(keptIDs(t, s, fmt.Sprint("done-", i))); n != 1 {
			t.Fatalf("finished thread done-%d keeps %d checkpoints, want 1", i, n)
		}
	}
}

func testPruneCanceledContext(t *testing.T, s checkpoint.Store, p checkpoint.Pruner) {
	r := newRunner(t, s, "t1")
	r.start()
	r.step(1, true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Prune(ctx, checkpoint.PruneOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Prune with a canceled context: %v", err)
	}
	if n := len(keptIDs(t, s, "t1")); n != 2 {
		t.Errorf("a canceled Prune deleted: %d checkpoints left, want 2", n)
	}
}
