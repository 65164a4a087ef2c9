package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// errKilled is what a store returns once the process is "killed": nothing
// more reaches its disk.
var errKilled = errors.New("the process was killed")

// diskStore is a store whose every checkpoint takes lag to become durable,
// as an fsync on a busy disk does, and that can be "killed": from then on
// no write lands, the ones in flight included (they were not on disk yet).
type diskStore struct {
	*memory.Store
	inMemory bool
	lag      time.Duration
	killed   atomic.Bool
	inFlight atomic.Int32
	failAt   int // the step whose checkpoint fails to write (0: none)
}

// InMemory is what the test says (checkpoint.InMemory): false, a write
// of this store waits.
func (d *diskStore) InMemory() bool { return d.inMemory }

func (d *diskStore) Put(ctx context.Context, cp checkpoint.Checkpoint) error {
	d.inFlight.Add(1)
	defer d.inFlight.Add(-1)
	time.Sleep(d.lag)
	if d.killed.Load() {
		return errKilled
	}
	if d.failAt != 0 && cp.Step == d.failAt {
		return errors.New("disk full")
	}
	return d.Store.Put(ctx, cp)
}

func (d *diskStore) PutWrites(ctx context.Context, thread string, id uuid.UUID, ws []checkpoint.Write) error {
	if d.killed.Load() {
		return errKilled
	}
	return d.Store.PutWrites(ctx, thread, id, ws)
}

func (d *diskStore) PutTuple(ctx context.Context, t checkpoint.Tuple) error {
	if d.killed.Load() {
		return errKilled
	}
	return d.Store.PutTuple(ctx, t)
}

// linear compiles nodes run one after another, in order, on store.
func linear(t *testing.T, store checkpoint.Store, mode graph.Durability, nodes ...graph.NodeFunc[tstate, tupd]) *graph.Compiled[tstate, tupd] {
	t.Helper()
	return chainOf(t, graph.Config[tstate, tupd]{Apply: tapply, Store: store, Durability: mode}, nodes...)
}

// chainOf compiles a graph of cfg whose nodes (named a, b, c, …) run one
// after the other.
func chainOf[S any](t *testing.T, cfg graph.Config[S, tupd], nodes ...graph.NodeFunc[S, tupd]) *graph.Compiled[S, tupd] {
	t.Helper()
	g := graph.New(cfg)
	names := make([]string, len(nodes))
	for i, fn := range nodes {
		names[i] = string(rune('a' + i))
		g.AddNode(names[i], fn)
	}
	g.SetEntry(names[0])
	for i := range names {
		to := graph.End
		if i+1 < len(names) {
			to = names[i+1]
		}
		g.AddEdge(names[i], to)
	}
	c, err := g.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDurabilityCommitWaits counts the durable writes a run of four steps
// waits for: under sync the input checkpoint and every step's; under async
// the input checkpoint, the Flush of the step that acts (c) and the run's
// end. In both, c runs only once the checkpoint it runs from is on disk,
// and the run returns with every checkpoint on disk. A store in memory
// (checkpoint.InMemory) is written in place under async: the input's write
// is the one waited for, as under sync.
func TestDurabilityCommitWaits(t *testing.T) {
	for _, tc := range []struct {
		mode     graph.Durability
		inMemory bool
		waits    int
	}{{graph.DurabilitySync, false, 5}, {"", false, 5}, {graph.DurabilityAsync, false, 3}, {graph.DurabilityAsync, true, 1}} {
		t.Run(fmt.Sprintf("%q in memory %t", tc.mode, tc.inMemory), func(t *testing.T) {
			store := &diskStore{Store: memory.New(), inMemory: tc.inMemory, lag: 20 * time.Millisecond}
			cnt := newCounter()
			var acted []string // the checkpoint c acted on, as the store had it
			act := func(ctx context.Context, s tstate) (tupd, error) {
				if err := graph.Flush(ctx); err != nil {
					return tupd{}, err
				}
				if n := store.inFlight.Load(); n != 0 {
					t.Errorf("%d checkpoint writes in flight after Flush", n)
				}
				tu, err := store.Get(ctx, "t", uuid.Nil)
				if err != nil {
					return tupd{}, err
				}
				acted = tu.Checkpoint.Next
				return tupd{Log: "c", N: 1}, nil
			}
			c := linear(t, store, tc.mode, logNode(cnt, "a"), logNode(cnt, "b"), act, logNode(cnt, "d"))
			res, err := c.Run(context.Background(), "t", tstate{})
			if err != nil || res.Status != graph.StatusDone {
				t.Fatalf("Run: %v, %v", res.Status, err)
			}
			if res.CommitWaits != tc.waits {
				t.Errorf("the run waited for %d commits, want %d", res.CommitWaits, tc.waits)
			}
			if !slices.Equal(acted, []string{"c"}) {
				t.Errorf("c acted while the store's latest checkpoint had next %v, want [c]: the one it runs from", acted)
			}
			cps, err := store.List(context.Background(), "t", checkpoint.ListOptions{})
			if err != nil || len(cps) != 5 {
				t.Fatalf("%d checkpoints on disk when Run returned (%v), want 5", len(cps), err)
			}
			for i, cp := range cps { // newest first, each the child of the next
				if cp.Step != 4-i || (i+1 < len(cps) && cp.ParentID != cps[i+1].ID) {
					t.Errorf("checkpoint %d: step %d, parent %v: not the chain of steps 4..0", i, cp.Step, cp.ParentID)
				}
			}
			if got := strings.Join(res.State.Log, " "); got != "a b c d" {
				t.Errorf("log %q, want a b c d", got)
			}
			if n := len(eventsOf(res.Trace.Events(), graph.EventCheckpoint)); n != 5 {
				t.Errorf("%d checkpoint events, want 5", n)
			}
		})
	}
}

// TestAsyncCrashRepeatsOnlyReads kills the process (the store writes
// nothing more) while the checkpoints of c, which acted, and of d are still
// in flight under DurabilityAsync. A new process resumes the run from the
// checkpoint c ran from, which c's Flush made durable: a and b do not run
// again, c finds its durable record of the attempt and does not act again,
// and only d, a read, runs twice.
func TestAsyncCrashRepeatsOnlyReads(t *testing.T) {
	disk := memory.New()
	var (
		mu      sync.Mutex
		started = map[string]bool{} // the durable log of attempts (an audit log)
		effects int
	)
	cnt := newCounter()
	act := func(ctx context.Context, s tstate) (tupd, error) {
		cnt.inc("c")
		key := fmt.Sprint("attempt-", s.N) // the same on every re-entry from the same checkpoint
		mu.Lock()
		seen := started[key]
		mu.Unlock()
		if seen {
			return tupd{Log: "c(replayed)", N: 1}, nil
		}
		if err := graph.Flush(ctx); err != nil {
			return tupd{}, err
		}
		mu.Lock()
		started[key] = true
		effects++
		mu.Unlock()
		return tupd{Log: "c", N: 1}, nil
	}
	var kill atomic.Pointer[diskStore] // set: e kills that store's process
	e := func(ctx context.Context, s tstate) (tupd, error) {
		cnt.inc("e")
		if d := kill.Swap(nil); d != nil {
			d.killed.Store(true)
			return tupd{}, errKilled
		}
		return tupd{Log: "e", N: 1}, nil
	}
	nodes := []graph.NodeFunc[tstate, tupd]{logNode(cnt, "a"), logNode(cnt, "b"), act, logNode(cnt, "d"), e}

	first := &diskStore{Store: disk, lag: 200 * time.Millisecond}
	kill.Store(first)
	res, err := linear(t, first, graph.DurabilityAsync, nodes...).Run(context.Background(), "t", tstate{})
	if err == nil {
		t.Fatalf("the killed run returned %v without an error", res.Status)
	}
	// What the disk holds: everything up to the checkpoint c ran from, not
	// the in-flight checkpoints of c and d.
	tu, err := disk.Get(context.Background(), "t", uuid.Nil)
	if err != nil {
		t.Fatal(err)
	}
	if tu.Checkpoint.Step != 2 || !slices.Equal(tu.Checkpoint.Next, []string{"c"}) {
		t.Fatalf("after the kill the disk's latest checkpoint is step %d (next %v), want step 2 (next [c]): the test did not cut where it means to",
			tu.Checkpoint.Step, tu.Checkpoint.Next)
	}

	second := &diskStore{Store: disk, lag: time.Millisecond}
	res, err = linear(t, second, graph.DurabilityAsync, nodes...).Resume(context.Background(), "t", nil)
	if err != nil || res.Status != graph.StatusDone {
		t.Fatalf("Resume: %v, %v", res.Status, err)
	}
	if got := strings.Join(res.State.Log, " "); got != "a b c(replayed) d e" {
		t.Errorf("log %q, want a b c(replayed) d e", got)
	}
	if effects != 1 {
		t.Errorf("c acted %d times, want once", effects)
	}
	for name, want := range map[string]int{"a": 1, "b": 1, "c": 2, "d": 2, "e": 2} {
		if got := cnt.get(name); got != want {
			t.Errorf("%s ran %d times, want %d", name, got, want)
		}
	}
}

// TestAsyncCheckpointEventMeansDurable: under async, as under sync, a
// consumer that sees an EventCheckpoint finds the checkpoint in the store,
// and sees one for every step before the run's end.
func TestAsyncCheckpointEventMeansDurable(t *testing.T) {
	store := &diskStore{Store: memory.New(), lag: 5 * time.Millisecond}
	cnt := newCounter()
	c := linear(t, store, graph.DurabilityAsync, logNode(cnt, "a"), logNode(cnt, "b"), logNode(cnt, "c"))
	var steps []int
	for ev, err := range c.Stream(context.Background(), "t", tstate{}) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case graph.EventCheckpoint:
			if _, err := store.Get(context.Background(), "t", ev.Checkpoint); err != nil {
				t.Errorf("checkpoint event of step %d: the store has no such checkpoint (%v)", ev.Step, err)
			}
			steps = append(steps, ev.Step)
		case graph.EventRunEnd:
			if !slices.Equal(steps, []int{0, 1, 2, 3}) {
				t.Errorf("run end after checkpoint events of steps %v, want 0 1 2 3", steps)
			}
		}
	}
}

// TestAsyncWriteFailure: a checkpoint that cannot be written fails the run
// under async as under sync, and a Flush after it reports the error, so a
// node does not act on a state that is not on disk.
func TestAsyncWriteFailure(t *testing.T) {
	store := &diskStore{Store: memory.New(), failAt: 1}
	cnt := newCounter()
	var flushErr error
	act := func(ctx context.Context, s tstate) (tupd, error) {
		flushErr = graph.Flush(ctx)
		if flushErr != nil {
			return tupd{}, flushErr
		}
		cnt.inc("acted")
		return tupd{Log: "b"}, nil
	}
	res, err := linear(t, store, graph.DurabilityAsync, logNode(cnt, "a"), act, logNode(cnt, "c")).Run(context.Background(), "t", tstate{})
	if err == nil || !strings.Contains(err.Error(), "disk full") || res.Status != graph.StatusFailed {
		t.Fatalf("Run: %v, %v; want failed with the write's error", res.Status, err)
	}
	if flushErr == nil || cnt.get("acted") != 0 || cnt.get("c") != 0 {
		t.Errorf("Flush returned %v, acted %d times, c ran %d times: want the error, none, none", flushErr, cnt.get("acted"), cnt.get("c"))
	}
}

// TestInputKept: under WithInputKept, an async run's input checkpoint is
// written while its first step runs (a commit less waited for), reported
// once durable, and waited for by the first barrier; a sync run is as
// without it. A crash before the input is on disk leaves the thread as it
// was, nothing acted, and the caller's second Run of the same input acts
// once.
func TestInputKept(t *testing.T) {
	for _, tc := range []struct {
		mode  graph.Durability
		waits int
	}{{graph.DurabilitySync, 5}, {graph.DurabilityAsync, 2}} {
		t.Run(string(tc.mode), func(t *testing.T) {
			store := &diskStore{Store: memory.New(), lag: 20 * time.Millisecond}
			cnt := newCounter()
			var firstRan, acted int32 // checkpoints on disk when a ran; when c acted
			first := func(ctx context.Context, s tstate) (tupd, error) {
				cps, _ := store.List(ctx, "t", checkpoint.ListOptions{})
				firstRan = int32(len(cps))
				return tupd{Log: "a", N: 1}, nil
			}
			act := func(ctx context.Context, s tstate) (tupd, error) {
				if err := graph.Flush(ctx); err != nil {
					return tupd{}, err
				}
				cps, _ := store.List(ctx, "t", checkpoint.ListOptions{})
				acted = int32(len(cps))
				return tupd{Log: "c", N: 1}, nil
			}
			c := linear(t, store, tc.mode, first, logNode(cnt, "b"), act, logNode(cnt, "d"))
			var checkpointed []int
			for ev, err := range c.Stream(graph.WithInputKept(context.Background()), "t", tstate{}) {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Kind == graph.EventCheckpoint {
					if _, err := store.Get(context.Background(), "t", ev.Checkpoint); err != nil {
						t.Errorf("checkpoint event of step %d: not in the store (%v)", ev.Step, err)
					}
					checkpointed = append(checkpointed, ev.Step)
				}
			}
			wantFirst := int32(1) // sync: the input is on disk before a runs
			if tc.mode == graph.DurabilityAsync {
				wantFirst = 0 // async, kept: a runs while it is written
			}
			if firstRan != wantFirst {
				t.Errorf("%d checkpoints on disk when the first step ran, want %d", firstRan, wantFirst)
			}
			if acted != 3 {
				t.Errorf("%d checkpoints on disk when c acted, want 3 (the input's, a's, b's)", acted)
			}
			if !slices.Equal(checkpointed, []int{0, 1, 2, 3, 4}) {
				t.Errorf("checkpoint events of steps %v, want 0..4", checkpointed)
			}
			res, err := c.Run(graph.WithInputKept(context.Background()), "u", tstate{})
			if err != nil || res.CommitWaits != tc.waits {
				t.Errorf("Run: %v; waited for %d commits, want %d", err, res.CommitWaits, tc.waits)
			}
		})
	}

	t.Run("crash before the input is on disk", func(t *testing.T) {
		disk := memory.New()
		effects := 0
		var kill atomic.Pointer[diskStore]
		first := func(ctx context.Context, s tstate) (tupd, error) {
			if d := kill.Swap(nil); d != nil {
				d.killed.Store(true) // the input's write is still in flight
			}
			return tupd{Log: "a", N: 1}, nil
		}
		act := func(ctx context.Context, s tstate) (tupd, error) {
			if err := graph.Flush(ctx); err != nil {
				return tupd{}, err
			}
			effects++
			return tupd{Log: "b", N: 1}, nil
		}
		dying := &diskStore{Store: disk, lag: 50 * time.Millisecond}
		kill.Store(dying)
		res, err := linear(t, dying, graph.DurabilityAsync, first, act).Run(graph.WithInputKept(context.Background()), "t", tstate{})
		if err == nil || res.Status != graph.StatusFailed {
			t.Fatalf("the killed run: %v, %v; want failed", res.Status, err)
		}
		if _, err := disk.Get(context.Background(), "t", uuid.Nil); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Fatalf("the disk holds the thread after the kill (%v): the test did not cut where it means to", err)
		}
		if effects != 0 {
			t.Fatalf("b acted %d times before its input was on disk", effects)
		}
		// The caller kept the input: a new process runs it again.
		res, err = linear(t, &diskStore{Store: disk}, graph.DurabilityAsync, first, act).Run(graph.WithInputKept(context.Background()), "t", tstate{})
		if err != nil || res.Status != graph.StatusDone || effects != 1 {
			t.Fatalf("the input run again: %v, %v, acted %d times; want done, once", res.Status, err, effects)
		}
	})
}

// TestUnknownDurability: a mode the engine does not know is a build problem.
func TestUnknownDurability(t *testing.T) {
	_, err := graph.New(graph.Config[tstate, tupd]{Apply: tapply, Durability: "exit"}).
		AddNode("a", logNode(newCounter(), "a")).SetEntry("a").SetTerminal("a").Compile()
	var be *graph.BuildError
	if !errors.As(err, &be) || !be.Has(graph.ProblemUnknownDurability) {
		t.Fatalf("Compile: %v, want the unknown_durability problem", err)
	}
}

// queueingStore is a store whose Put of step 1 waits, as a write queued
// behind another commit does, until the run has been canceled, and then
// gives up when its context is done — as SQLite's group commit does.
type queueingStore struct {
	*memory.Store
	putting  chan struct{} // closed when step 1's Put starts
	canceled chan struct{} // closed by the test once it canceled the run
}

// InMemory: no, a write of this store waits (checkpoint.InMemory).
func (*queueingStore) InMemory() bool { return false }

func (q *queueingStore) Put(ctx context.Context, cp checkpoint.Checkpoint) error {
	if cp.Step == 1 {
		close(q.putting)
		<-q.canceled
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return q.Store.Put(ctx, cp)
}

// A run canceled while a finished step's checkpoint is being written keeps
// that checkpoint: the save is not canceled with the run (under async the
// next step runs meanwhile, and its start is what a Ctrl-C follows), so
// Resume does not run the finished step again. In both modes.
func TestACancelDuringAWriteKeepsTheFinishedStep(t *testing.T) {
	for _, mode := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync} {
		t.Run(string(mode), func(t *testing.T) {
			store := &queueingStore{Store: memory.New(), putting: make(chan struct{}), canceled: make(chan struct{})}
			cnt := newCounter()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				<-store.putting
				cancel()
				close(store.canceled)
			}()
			var resumed atomic.Bool
			wait := func(nctx context.Context, s tstate) (tupd, error) {
				cnt.inc("b")
				if !resumed.Load() { // the first run: b is what the cancellation stops
					<-nctx.Done()
					return tupd{}, nctx.Err()
				}
				return tupd{Log: "b", N: 1}, nil
			}
			c := linear(t, store, mode, logNode(cnt, "a"), wait, logNode(cnt, "c"))
			res, err := c.Run(ctx, "t", tstate{})
			if !errors.Is(err, context.Canceled) || res.Status != graph.StatusCanceled {
				t.Fatalf("run: %v, %v", res.Status, err)
			}
			if tu := latest(t, c, "t"); tu.Checkpoint.Step != 1 {
				t.Fatalf("the store's latest checkpoint is step %d, want 1 (a's, written while the run was canceled)", tu.Checkpoint.Step)
			}
			resumed.Store(true)
			res, err = c.Resume(context.Background(), "t", nil)
			if err != nil || !slices.Equal(res.State.Log, []string{"a", "b", "c"}) {
				t.Fatalf("resume: %v, %+v", err, res)
			}
			if cnt.get("a") != 1 {
				t.Errorf("a ran %d times, want 1", cnt.get("a"))
			}
		})
	}
}

// puttingStore records the step of every checkpoint Put and can be
// "killed" (no write lands afterwards).
type puttingStore struct {
	*memory.Store
	mu     sync.Mutex
	steps  []int
	killed atomic.Bool
}

// InMemory: no, a write of this store waits (checkpoint.InMemory).
func (*puttingStore) InMemory() bool { return false }

func (p *puttingStore) Put(ctx context.Context, cp checkpoint.Checkpoint) error {
	if p.killed.Load() {
		return errKilled
	}
	p.mu.Lock()
	p.steps = append(p.steps, cp.Step)
	p.mu.Unlock()
	return p.Store.Put(ctx, cp)
}

func (p *puttingStore) written() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.steps)
}

// Under async with the run's intermediate checkpoints pruned when it ends
// (checkpoint.WithPruning 0, a finished turn's default), a step checkpoint
// no barrier needs is never written: a run of a, b, c (which acts, after
// Flush), d writes its input, b's (the one c runs from, by c's Flush) and
// d's (its last), not a's or c's. A crash after c acted resumes from b's,
// so c is re-entered from the checkpoint it acted from. With intermediate
// checkpoints kept, or under sync, every step's is written.
func TestAsyncWritesOnlyTheCheckpointsABarrierNeeds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mode      graph.Durability
		keep      time.Duration
		inputKept bool
		steps     []int
	}{
		{"async, pruned", graph.DurabilityAsync, 0, false, []int{0, 2, 4}},
		// The caller keeps the input: its checkpoint is held like a step's.
		{"async, pruned, input kept", graph.DurabilityAsync, 0, true, []int{2, 4}},
		{"async, kept", graph.DurabilityAsync, -1, true, []int{0, 1, 2, 3, 4}},
		{"sync, pruned", graph.DurabilitySync, 0, true, []int{0, 1, 2, 3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &puttingStore{Store: memory.New()}
			cnt := newCounter()
			var (
				onDisk   []string  // the store's latest checkpoint's next when c acted
				onDiskID uuid.UUID // and its id
			)
			act := func(ctx context.Context, s tstate) (tupd, error) {
				if err := graph.Flush(ctx); err != nil {
					return tupd{}, err
				}
				tu, err := store.Get(ctx, "t", uuid.Nil)
				if err != nil {
					return tupd{}, err
				}
				onDisk, onDiskID = tu.Checkpoint.Next, tu.Checkpoint.ID
				cnt.inc("c")
				return tupd{Log: "c", N: 1}, nil
			}
			// d reads what the barrier wrote, once c's step is committed.
			var ranFrom []string
			d := func(ctx context.Context, s tstate) (tupd, error) {
				var err error
				if ranFrom, err = logAt(ctx, store, onDiskID); err != nil {
					return tupd{}, err
				}
				return logNode(cnt, "d")(ctx, s)
			}
			c := linear(t, store, tc.mode, logNode(cnt, "a"), logNode(cnt, "b"), act, d)
			ctx := checkpoint.WithPruning(context.Background(), tc.keep)
			if tc.inputKept {
				ctx = graph.WithInputKept(ctx)
			}
			res, err := c.Run(ctx, "t", tstate{})
			if err != nil || res.Status != graph.StatusDone || strings.Join(res.State.Log, " ") != "a b c d" {
				t.Fatalf("Run: %v, %v, %v", res.Status, err, res.State.Log)
			}
			if got := store.written(); !slices.Equal(got, tc.steps) {
				t.Errorf("checkpoints written for steps %v, want %v", got, tc.steps)
			}
			if !slices.Equal(onDisk, []string{"c"}) {
				t.Errorf("c acted while the store's latest checkpoint had next %v, want [c]: the one it runs from", onDisk)
			}
			if !slices.Equal(ranFrom, []string{"a", "b"}) {
				t.Errorf("once c's step was committed, the checkpoint c ran from held the log %v, want [a b]", ranFrom)
			}
			if n := len(eventsOf(res.Trace.Events(), graph.EventCheckpoint)); n != len(tc.steps) {
				t.Errorf("%d checkpoint events, want one per checkpoint written (%d)", n, len(tc.steps))
			}
		})
	}

	// The crash: d's checkpoint never lands. The resumed run starts from
	// b's, the one c acted from, and runs c and d again — c would find its
	// own durable record of the attempt, as after any crash.
	store := &puttingStore{Store: memory.New()}
	cnt := newCounter()
	act := func(ctx context.Context, s tstate) (tupd, error) {
		if err := graph.Flush(ctx); err != nil {
			return tupd{}, err
		}
		cnt.inc("c")
		if cnt.get("c") == 1 {
			store.killed.Store(true)
		}
		return tupd{Log: "c", N: 1}, nil
	}
	c := linear(t, store, graph.DurabilityAsync, logNode(cnt, "a"), logNode(cnt, "b"), act, logNode(cnt, "d"))
	if res, err := c.Run(checkpoint.WithPruning(context.Background(), 0), "t", tstate{}); err == nil || res.Status != graph.StatusFailed {
		t.Fatalf("the killed run: %v, %v", res.Status, err)
	}
	if tu := latest(t, c, "t"); !slices.Equal(tu.Checkpoint.Next, []string{"c"}) {
		t.Fatalf("after the crash the latest checkpoint has next %v, want [c]", tu.Checkpoint.Next)
	}
	store.killed.Store(false)
	res, err := c.Resume(checkpoint.WithPruning(context.Background(), 0), "t", nil)
	if err != nil || strings.Join(res.State.Log, " ") != "a b c d" {
		t.Fatalf("resume: %v, %v", err, res.State.Log)
	}
	if cnt.get("a") != 1 || cnt.get("b") != 1 || cnt.get("c") != 2 {
		t.Errorf("executions %v, want a and b once, c re-entered once", cnt.n)
	}
}

// vstate is a graph.ValueState: vapply returns a new value, never writing
// to the one it is given.
type vstate struct {
	Log []string `json:"log"`
}

func (vstate) ValueState() {}

func vapply(s vstate, u tupd) (vstate, error) {
	return vstate{Log: slices.Concat(s.Log, []string{u.Log})}, nil
}

// Under async, pruned and with the input kept (a server's turn), a state
// that is a graph.ValueState is encoded only for the checkpoints written:
// a run that meets no barrier encodes its last state alone, one whose c
// calls Flush also the state c runs from — and that checkpoint holds b's
// state, not what c and d made after. A state that is not a ValueState is
// encoded at every step, as before.
func TestValueStateIsEncodedOnlyForTheCheckpointsWritten(t *testing.T) {
	for _, tc := range []struct {
		name    string
		value   bool
		flushAt string // the node that calls Flush ("": none)
		encodes int32
		written []int
	}{
		{"value, no barrier", true, "", 1, []int{4}},
		{"value, c flushes", true, "c", 2, []int{2, 4}},
		{"not a value, no barrier", false, "", 5, []int{4}},
		{"not a value, c flushes", false, "c", 5, []int{2, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &puttingStore{Store: memory.New()}
			codec := &countingCodec{}
			var atFlush uuid.UUID // the store's latest checkpoint when the flushing node ran
			var readBack []string // that checkpoint's log, read once the run went on
			node := func(name string) func(ctx context.Context) (tupd, error) {
				return func(ctx context.Context) (tupd, error) {
					if name == tc.flushAt {
						if err := graph.Flush(ctx); err != nil {
							return tupd{}, err
						}
						tu, err := store.Get(ctx, "t", uuid.Nil)
						if err != nil {
							return tupd{}, err
						}
						atFlush = tu.Checkpoint.ID
					}
					if name == "d" && atFlush != uuid.Nil {
						var err error
						if readBack, err = logAt(ctx, store, atFlush); err != nil {
							return tupd{}, err
						}
					}
					return tupd{Log: name}, nil
				}
			}
			ctx := graph.WithInputKept(checkpoint.WithPruning(context.Background(), 0))
			var logOf []string
			if tc.value {
				res, err := chainOf(t, graph.Config[vstate, tupd]{Apply: vapply, Store: store, Durability: graph.DurabilityAsync, Codec: codec},
					nodesOf[vstate](node)...).Run(ctx, "t", vstate{})
				if err != nil {
					t.Fatal(err)
				}
				logOf = res.State.Log
			} else {
				res, err := chainOf(t, graph.Config[tstate, tupd]{Apply: tapply, Store: store, Durability: graph.DurabilityAsync, Codec: codec},
					nodesOf[tstate](node)...).Run(ctx, "t", tstate{})
				if err != nil {
					t.Fatal(err)
				}
				logOf = res.State.Log
			}
			if strings.Join(logOf, " ") != "a b c d" {
				t.Fatalf("the run's log %v, want a b c d", logOf)
			}
			if got := codec.marshal.Load(); got != tc.encodes {
				t.Errorf("%d states encoded, want %d", got, tc.encodes)
			}
			if got := store.written(); !slices.Equal(got, tc.written) {
				t.Errorf("checkpoints written for steps %v, want %v", got, tc.written)
			}
			if tc.flushAt != "" && !slices.Equal(readBack, []string{"a", "b"}) {
				t.Errorf("the checkpoint c ran from holds the log %v, want [a b]", readBack)
			}
		})
	}
}

// nodesOf makes the nodes a, b, c, d of any state type from node, called
// with each node's name.
func nodesOf[S any](node func(name string) func(context.Context) (tupd, error)) []graph.NodeFunc[S, tupd] {
	var out []graph.NodeFunc[S, tupd]
	for _, name := range []string{"a", "b", "c", "d"} {
		f := node(name)
		out = append(out, func(ctx context.Context, _ S) (tupd, error) { return f(ctx) })
	}
	return out
}

// logAt reads the log of the state checkpoint id of thread "t" holds.
func logAt(ctx context.Context, store checkpoint.Store, id uuid.UUID) ([]string, error) {
	tu, err := store.Get(ctx, "t", id)
	if err != nil {
		return nil, err
	}
	var st struct {
		Log []string `json:"log"`
	}
	if err := json.Unmarshal(tu.Checkpoint.State, &st); err != nil {
		return nil, err
	}
	return st.Log, nil
}
