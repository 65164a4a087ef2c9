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

// historyCases are the cases of Run that read back a checkpoint older than
// the thread's latest (Get by an earlier id, List of several checkpoints,
// writes against a superseded checkpoint). A store keeping only each thread's
// latest checkpoint cannot pass them by design; RunLatestOnly runs
// latestCases in their place.
var historyCases = map[string]bool{
	"PutGet":            true,
	"OutOfOrderPut":     true,
	"List":              true,
	"Writes":            true,
	"ConcurrentThreads": true,
}

var latestCases = []struct {
	name string
	fn   func(t *testing.T, s checkpoint.Store)
}{
	{"LatestOnlyPutGet", testLatestPutGet},
	{"LatestOnlyOutOfOrderPut", testLatestOutOfOrder},
	{"LatestOnlyList", testLatestList},
	{"LatestOnlyWrites", testLatestWrites},
	{"LatestOnlyConcurrentThreads", testLatestConcurrent},
}

// RunLatestOnly is Run for a store that keeps only each thread's latest
// checkpoint and its pending writes (memory.NewLatestOnly). Every case of
// Run that does not depend on history runs unchanged, leases and the record
// log included; the five that do (PutGet, OutOfOrderPut, List, Writes,
// ConcurrentThreads) are replaced by versions pinning what such a store does
// instead: an earlier
// checkpoint is gone once a newer one is Put (Get of its id and PutWrites on
// it are ErrNotFound, and its writes go with it), a checkpoint older than
// the latest is dropped, and List returns at most the latest. A Pruner
// without history prunes nothing.
func RunLatestOnly(t *testing.T, newStore func(t *testing.T) checkpoint.Store) {
	t.Helper()
	for _, tc := range cases {
		if historyCases[tc.name] {
			continue
		}
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
	for _, tc := range latestCases {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
	for _, tc := range leaseCases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			if l, ok := s.(checkpoint.Leaser); ok {
				tc.fn(t, s, l)
			}
		})
	}
	for _, tc := range recordCases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			if rl, ok := s.(checkpoint.RecordLog); ok {
				tc.fn(t, s, rl)
			}
		})
	}
	t.Run("LatestOnlyPrune", func(t *testing.T) {
		s := newStore(t)
		if p, ok := s.(checkpoint.Pruner); ok {
			testLatestPrune(t, s, p)
		}
	})
}

// A store without history has nothing to prune: Prune and a Put under
// WithPruning keep the latest checkpoint and its writes.
func testLatestPrune(t *testing.T, s checkpoint.Store, p checkpoint.Pruner) {
	r := newRunner(t, s, "t1")
	r.start()
	last := r.stepCtx(checkpoint.WithPruning(context.Background(), 0), 1, true)
	r.write(last.ID, "w")
	if res := prune(t, p, checkpoint.PruneOptions{}); res != (checkpoint.PruneResult{}) {
		t.Errorf("Prune = %+v, want nothing", res)
	}
	if tu := get(t, s, "t1", uuid.Nil); tu.Checkpoint.ID != last.ID || len(tu.Writes) != 1 {
		t.Errorf("latest after Prune: %s with %d writes, want %s with 1", tu.Checkpoint.ID, len(tu.Writes), last.ID)
	}
}

func listIDs(t *testing.T, s checkpoint.Store, thread string, opts checkpoint.ListOptions) []uuid.UUID {
	t.Helper()
	l, err := s.List(context.Background(), thread, opts)
	if err != nil {
		t.Fatalf("List(%s): %v", thread, err)
	}
	return ids(l)
}

func testLatestPutGet(t *testing.T, s checkpoint.Store) {
	g := newGen(t)
	c1 := g.cp("t1", uuid.Nil, map[string]string{"owner": "alice"})
	c2 := g.cp("t1", c1.ID, map[string]string{"owner": "alice", "title": "x"})
	c2.NotBefore = g.base.Add(time.Hour)
	c2.Next = nil
	put(t, s, c1)
	if d := diff(c1, get(t, s, "t1", uuid.Nil).Checkpoint); d != "" {
		t.Errorf("Get latest after one Put: %s", d)
	}
	if d := diff(c1, get(t, s, "t1", c1.ID).Checkpoint); d != "" {
		t.Errorf("Get of the latest by id: %s", d)
	}
	put(t, s, c2)
	if d := diff(c2, get(t, s, "t1", uuid.Nil).Checkpoint); d != "" {
		t.Errorf("Get latest: %s", d)
	}
	if d := diff(c2, get(t, s, "t1", c2.ID).Checkpoint); d != "" {
		t.Errorf("Get of the latest by id: %s", d)
	}
	if _, err := s.Get(context.Background(), "t1", c1.ID); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Get of a superseded checkpoint: err = %v, want ErrNotFound", err)
	}
	if got := listIDs(t, s, "t1", checkpoint.ListOptions{}); !slices.Equal(got, []uuid.UUID{c2.ID}) {
		t.Errorf("List = %v, want only the latest %s", got, c2.ID)
	}
}

func testLatestOutOfOrder(t *testing.T, s checkpoint.Store) {
	g := newGen(t)
	old := g.cp("t1", uuid.Nil, map[string]string{"v": "old"})
	newer := g.cp("t1", old.ID, map[string]string{"v": "new"})
	put(t, s, newer, old)
	if got := get(t, s, "t1", uuid.Nil).Checkpoint; got.ID != newer.ID || got.Metadata["v"] != "new" {
		t.Errorf("latest = %s %v, want the newer id %s with v=new", got.ID, got.Metadata, newer.ID)
	}
	if _, err := s.Get(context.Background(), "t1", old.ID); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Get of the older checkpoint Put last: err = %v, want ErrNotFound (dropped)", err)
	}
	if got := listIDs(t, s, "t1", checkpoint.ListOptions{}); !slices.Equal(got, []uuid.UUID{newer.ID}) {
		t.Errorf("List = %v, want [%s]", got, newer.ID)
	}
	ts, err := s.Threads(context.Background(), checkpoint.ThreadFilter{})
	if err != nil || len(ts) != 1 {
		t.Fatalf("Threads = %v, %v", ts, err)
	}
	if ts[0].Latest != newer.ID || ts[0].Metadata["v"] != "new" {
		t.Errorf("Threads[0] = %+v, want latest %s with v=new", ts[0], newer.ID)
	}
	// Created is still the time of the thread's first checkpoint.
	if d := timeDiff(old.Created, ts[0].Created); d != "" {
		t.Errorf("Threads[0].Created = %s, want %s (the oldest checkpoint Put)", d, old.Created)
	}
}

func testLatestList(t *testing.T, s checkpoint.Store) {
	g := newGen(t)
	var last checkpoint.Checkpoint
	parent := uuid.Nil
	for i := range 5 {
		last = g.cp("t1", parent, map[string]string{"i": fmt.Sprint(i), "owner": "alice"})
		parent = last.ID
		put(t, s, last)
	}
	put(t, s, g.cp("other", uuid.Nil, map[string]string{"owner": "alice"}))
	only := []uuid.UUID{last.ID}
	for _, tc := range []struct {
		name string
		opts checkpoint.ListOptions
		want []uuid.UUID
	}{
		{"all", checkpoint.ListOptions{}, only},
		{"limit", checkpoint.ListOptions{Limit: 1}, only},
		{"before the latest", checkpoint.ListOptions{Before: last.ID}, nil},
		{"before a later id", checkpoint.ListOptions{Before: g.id()}, only},
		{"filter on the latest", checkpoint.ListOptions{Filter: map[string]string{"i": "4"}}, only},
		{"filter on a superseded one", checkpoint.ListOptions{Filter: map[string]string{"i": "3"}}, nil},
	} {
		if got := listIDs(t, s, "t1", tc.opts); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	l, err := s.List(context.Background(), "t1", checkpoint.ListOptions{})
	if err != nil || len(l) != 1 {
		t.Fatalf("List = %v, %v", l, err)
	}
	if d := diff(last, l[0]); d != "" {
		t.Errorf("listed checkpoint: %s", d)
	}
}

func testLatestWrites(t *testing.T, s checkpoint.Store) {
	g := newGen(t)
	ctx := context.Background()
	w := func(task string, kind checkpoint.WriteKind, v string) checkpoint.Write {
		return checkpoint.Write{Task: task, Kind: kind, Value: json.RawMessage(v)}
	}
	c1 := g.cp("t1", uuid.Nil, nil)
	put(t, s, c1)
	if err := s.PutWrites(ctx, "t1", c1.ID, []checkpoint.Write{w("a", checkpoint.WriteUpdate, `{"a":1}`), w("b", checkpoint.WriteUpdate, `{"b":1}`)}); err != nil {
		t.Fatal(err)
	}
	// Replacing in place and keeping the order of first write, as in Writes.
	if err := s.PutWrites(ctx, "t1", c1.ID, []checkpoint.Write{w("a", checkpoint.WriteUpdate, `{"a":2}`), w("a", checkpoint.WriteInterrupt, `"ask"`)}); err != nil {
		t.Fatal(err)
	}
	got := get(t, s, "t1", uuid.Nil).Writes
	want := []checkpoint.Write{w("a", checkpoint.WriteUpdate, `{"a":2}`), w("b", checkpoint.WriteUpdate, `{"b":1}`), w("a", checkpoint.WriteInterrupt, `"ask"`)}
	if len(got) != len(want) {
		t.Fatalf("writes = %v, want %v", got, want)
	}
	for i := range want {
		if got[i].Task != want[i].Task || got[i].Kind != want[i].Kind || string(got[i].Value) != string(want[i].Value) {
			t.Errorf("write %d = %s/%s %s, want %s/%s %s", i, got[i].Task, got[i].Kind, got[i].Value, want[i].Task, want[i].Kind, want[i].Value)
		}
	}
	// Put of the same id again (a retried Put) keeps the writes.
	put(t, s, c1)
	if n := len(get(t, s, "t1", uuid.Nil).Writes); n != 3 {
		t.Errorf("after Put of the same id: %d writes, want 3", n)
	}
	// A newer checkpoint supersedes c1 and its writes.
	c2 := g.cp("t1", c1.ID, nil)
	put(t, s, c2)
	if ws := get(t, s, "t1", uuid.Nil).Writes; len(ws) != 0 {
		t.Errorf("writes of the new latest = %v, want none", ws)
	}
	if err := s.PutWrites(ctx, "t1", c1.ID, []checkpoint.Write{w("late", checkpoint.WriteUpdate, `1`)}); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("PutWrites on a superseded checkpoint: err = %v, want ErrNotFound", err)
	}
	if err := s.PutWrites(ctx, "t1", c2.ID, []checkpoint.Write{w("x", checkpoint.WriteError, `"boom"`)}); err != nil {
		t.Fatal(err)
	}
	if ws := get(t, s, "t1", c2.ID).Writes; len(ws) != 1 || ws[0].Task != "x" {
		t.Errorf("writes of c2 = %v, want the one error write", ws)
	}
}

func testLatestConcurrent(t *testing.T, s checkpoint.Store) {
	const (
		writers = 8
		puts    = 25
	)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	latest := make([]uuid.UUID, writers)
	for w := range writers {
		wg.Go(func() {
			thread := fmt.Sprintf("conc-%d", w)
			parent := uuid.Nil
			for i := range puts {
				id := uuid.Must(uuid.NewV7())
				cp := checkpoint.Checkpoint{ThreadID: thread, ID: id, ParentID: parent, Step: i,
					State:    json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)),
					Metadata: map[string]string{"writer": fmt.Sprint(w)}, Created: time.Now()}
				if err := s.Put(ctx, cp); err != nil {
					errs <- fmt.Errorf("%s put %d: %w", thread, i, err)
					return
				}
				if err := s.PutWrites(ctx, thread, id, []checkpoint.Write{{Task: "n", Kind: checkpoint.WriteUpdate, Value: json.RawMessage(`1`)}}); err != nil {
					errs <- fmt.Errorf("%s writes %d: %w", thread, i, err)
					return
				}
				parent = id
			}
			latest[w] = parent
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	for w := range writers {
		thread := fmt.Sprintf("conc-%d", w)
		if got := listIDs(t, s, thread, checkpoint.ListOptions{}); !slices.Equal(got, []uuid.UUID{latest[w]}) {
			t.Errorf("%s: List = %v, want only %s", thread, got, latest[w])
		}
		tu := get(t, s, thread, uuid.Nil)
		want := fmt.Sprintf(`{"w":%d,"i":%d}`, w, puts-1)
		if tu.Checkpoint.ID != latest[w] || len(tu.Writes) != 1 || string(tu.Checkpoint.State) != want {
			t.Errorf("%s: latest %s %s with %d writes, want %s %s with 1", thread, tu.Checkpoint.ID, tu.Checkpoint.State, len(tu.Writes), latest[w], want)
		}
	}
	ts, err := s.Threads(ctx, checkpoint.ThreadFilter{})
	if err != nil || len(ts) != writers {
		t.Errorf("Threads = %d, %v; want %d", len(ts), err, writers)
	}
}
