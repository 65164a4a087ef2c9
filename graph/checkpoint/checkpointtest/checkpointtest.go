package checkpointtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// Precision is the time precision every Store keeps: times come back in UTC,
// truncated to whole microseconds (PostgreSQL's timestamptz resolution).
const Precision = time.Microsecond

// Run runs the conformance suite against the stores newStore returns,
// including the lease cases (lease.go) when the store is a checkpoint.Leaser,
// the record log cases (records.go) when it is a checkpoint.RecordLog, the
// tuple cases (tuple.go) when it is a checkpoint.TuplePutter, the
// first-checkpoint cases (first.go) when it is a checkpoint.FirstPutter and
// the pruning cases (prune.go) when it is a checkpoint.Pruner. newStore
// is called once per subtest and must return an empty store; it should register
// its own cleanup with t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) checkpoint.Store) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
	// Lease cases run for stores that are a checkpoint.Leaser (all of ours).
	for _, tc := range leaseCases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			l, ok := s.(checkpoint.Leaser)
			if !ok {
				return
			}
			tc.fn(t, s, l)
		})
	}
	// Record log cases run for stores that are a checkpoint.RecordLog (all
	// of ours; records.go).
	for _, tc := range recordCases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			rl, ok := s.(checkpoint.RecordLog)
			if !ok {
				return
			}
			tc.fn(t, s, rl)
		})
	}
	// Tuple cases run for stores that are a checkpoint.TuplePutter (all of
	// ours; tuple.go).
	for _, tc := range tupleCases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			tp, ok := s.(checkpoint.TuplePutter)
			if !ok {
				return
			}
			tc.fn(t, s, tp)
		})
	}
	// First-checkpoint cases run for stores that are a
	// checkpoint.FirstPutter (all of ours; first.go).
	for _, tc := range firstCases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			fp, ok := s.(checkpoint.FirstPutter)
			if !ok {
				return
			}
			tc.fn(t, s, fp)
		})
	}
	// Pruning cases run for stores that are a checkpoint.Pruner (all of
	// ours; prune.go).
	for _, tc := range pruneCases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			p, ok := s.(checkpoint.Pruner)
			if !ok {
				return
			}
			tc.fn(t, s, p)
		})
	}
}

var cases = []struct {
	name string
	fn   func(t *testing.T, s checkpoint.Store)
}{
	{"PutGet", testPutGet},
	{"PutSameIDReplaces", testPutSameIDReplaces},
	{"OutOfOrderPut", testOutOfOrderPut},
	{"NotFound", testNotFound},
	{"InvalidInput", testInvalidInput},
	{"List", testList},
	{"Writes", testWrites},
	{"WritesMissingCheckpoint", testWritesMissingCheckpoint},
	{"DeleteThread", testDeleteThread},
	{"Threads", testThreads},
	{"ConcurrentThreads", testConcurrentThreads},
	{"DeleteWhileWriting", testDeleteWhileWriting},
	{"LargeState", testLargeState},
	{"BytesRoundTrip", testBytesRoundTrip},
	{"Times", testTimes},
	{"CanceledContext", testCanceledContext},
}

// --- helpers -----------------------------------------------------------------

type gen struct {
	t    *testing.T
	base time.Time
	n    int
}

func newGen(t *testing.T) *gen {
	return &gen{t: t, base: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (g *gen) id() uuid.UUID {
	g.t.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		g.t.Fatalf("uuid.NewV7: %v", err)
	}
	return id
}

// cp returns a checkpoint with every field set, as the engine writes it.
func (g *gen) cp(thread string, parent uuid.UUID, md map[string]string) checkpoint.Checkpoint {
	g.n++
	return checkpoint.Checkpoint{
		ThreadID: thread,
		ID:       g.id(),
		ParentID: parent,
		RunID:    g.id(),
		Step:     g.n,
		State:    json.RawMessage(fmt.Sprintf(`{"n":%d,"thread":%q}`, g.n, thread)),
		Next:     []string{"a", "b"},
		Metadata: md,
		Created:  g.base.Add(time.Duration(g.n) * time.Second),
	}
}

func put(t *testing.T, s checkpoint.Store, cps ...checkpoint.Checkpoint) {
	t.Helper()
	for _, cp := range cps {
		if err := s.Put(context.Background(), cp); err != nil {
			t.Fatalf("Put(%s/%s): %v", cp.ThreadID, cp.ID, err)
		}
	}
}

func get(t *testing.T, s checkpoint.Store, thread string, id uuid.UUID) checkpoint.Tuple {
	t.Helper()
	tu, err := s.Get(context.Background(), thread, id)
	if err != nil {
		t.Fatalf("Get(%s, %s): %v", thread, id, err)
	}
	return tu
}

// diff describes how got differs from want after the documented
// normalisation (UTC, microseconds, nil for empty collections), or "".
func diff(want, got checkpoint.Checkpoint) string {
	var d []string
	add := func(field string, w, g any) { d = append(d, fmt.Sprintf("%s: got %v, want %v", field, g, w)) }
	if got.ThreadID != want.ThreadID {
		add("ThreadID", want.ThreadID, got.ThreadID)
	}
	if got.ID != want.ID {
		add("ID", want.ID, got.ID)
	}
	if got.ParentID != want.ParentID {
		add("ParentID", want.ParentID, got.ParentID)
	}
	if got.RunID != want.RunID {
		add("RunID", want.RunID, got.RunID)
	}
	if got.Step != want.Step {
		add("Step", want.Step, got.Step)
	}
	if !bytes.Equal(got.State, want.State) {
		add("State", short(want.State), short(got.State))
	}
	if !slices.Equal(got.Next, want.Next) {
		add("Next", want.Next, got.Next)
	}
	if !maps.Equal(got.Metadata, want.Metadata) {
		add("Metadata", want.Metadata, got.Metadata)
	}
	if s := timeDiff(want.Created, got.Created); s != "" {
		add("Created", want.Created, s)
	}
	if s := timeDiff(want.NotBefore, got.NotBefore); s != "" {
		add("NotBefore", want.NotBefore, s)
	}
	return strings.Join(d, "; ")
}

// timeDiff checks one stored time against what was written: the zero time stays
// zero; any other time comes back in UTC, equal to the input truncated to Precision.
func timeDiff(want, got time.Time) string {
	if want.IsZero() {
		if !got.IsZero() {
			return got.String() + " (want the zero time)"
		}
		return ""
	}
	if got.Location() != time.UTC {
		return got.String() + " (not UTC)"
	}
	if !got.Equal(want.Truncate(Precision)) {
		return got.String()
	}
	return ""
}

func short(b []byte) string {
	if len(b) > 64 {
		return fmt.Sprintf("%q… (%d bytes)", b[:64], len(b))
	}
	return fmt.Sprintf("%q", b)
}

func ids(cps []checkpoint.Checkpoint) []uuid.UUID {
	out := make([]uuid.UUID, len(cps))
	for i, c := range cps {
		out[i] = c.ID
	}
	return out
}

func threadIDs(ts []checkpoint.ThreadInfo) []string {
	out := make([]string, len(ts))
	for i, ti := range ts {
		out[i] = ti.ThreadID
	}
	return out
}

// --- cases -------------------------------------------------------------------

func testPutGet(t *testing.T, s checkpoint.Store) {
	g := newGen(t)
	c1 := g.cp("t1", uuid.Nil, map[string]string{"owner": "alice"})
	c2 := g.cp("t1", c1.ID, map[string]string{"owner": "alice", "title": "x"})
	c2.NotBefore = g.base.Add(time.Hour)
	c2.Next = nil // a finished run
	put(t, s, c1)

	if d := diff(c1, get(t, s, "t1", uuid.Nil).Checkpoint); d != "" {
		t.Errorf("Get latest after one Put: %s", d)
	}
	put(t, s, c2)
	latest := get(t, s, "t1", uuid.Nil)
	if d := diff(c2, latest.Checkpoint); d != "" {
		t.Errorf("Get latest: %s", d)
	}
	if len(latest.Writes) != 0 {
		t.Errorf("Get latest: %d writes, want none", len(latest.Writes))
	}
	if d := diff(c1, get(t, s, "t1", c1.ID).Checkpoint); d != "" {
		t.Errorf("Get by id: %s", d)
	}
}

func testPutSameIDReplaces(t *testing.T, s checkpoint.Store) {
	g := newGen(t)
	c := g.cp("t1", uuid.Nil, nil)
	put(t, s, c)
	c.State = json.RawMessage(`{"replaced":true}`)
	c.Metadata = map[string]string{"k": "v"}
	put(t, s, c) // an engine retrying a Put whose answer was lost
	if d := diff(c, get(t, s, "t1", c.ID).Checkpoint); d != "" {
		t.Errorf("after second Put of the same id: %s", d)
	}
	list, err := s.List(context.Background(), "t1", checkpoint.ListOptions{})
	if err != nil || len(list) != 1 {
		t.Fatalf("List = %d checkpoints, %v; want 1", len(list), err)
	}
}

// A checkpoint with an older id written after a newer one must not become the
// thread's latest (ids order checkpoints, not arrival).
func testOutOfOrderPut(t *testing.T, s checkpoint.Store) {
	g := newGen(t)
	old := g.cp("t1", uuid.Nil, map[string]string{"v": "old"})
	newer := g.cp("t1", old.ID, map[string]string{"v": "new"})
	put(t, s, newer, old)
	if got := get(t, s, "t1", uuid.Nil).Checkpoint.ID; got != newer.ID {
		t.Errorf("latest = %s, want the newer id %s", got, newer.ID)
	}
	ts, err := s.Threads(context.Background(), checkpoint.ThreadFilter{})
	if err != nil || len(ts) != 1 {
		t.Fatalf("Threads = %v, %v", ts, err)
	}
	if ts[0].Latest != newer.ID || ts[0].Metadata["v"] != "new" {
		t.Errorf("Threads[0] = %+v, want latest %s with v=new", ts[0], newer.ID)
	}
	list, err := s.List(context.Background(), "t1", checkpoint.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []uuid.UUID{newer.ID, old.ID}; !slices.Equal(ids(list), want) {
		t.Errorf("List = %v, want %v", ids(list), want)
	}
}

func testNotFound(t *testing.T, s checkpoint.Store) {
	g := newGen(t)
	ctx := context.Background()
	if _, err := s.Get(ctx, "nope", uuid.Nil); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Get latest of a missing thread: err = %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, "nope", g.id()); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Get by id on a missing thread: err = %v, want ErrNotFound", err)
	}
	c := g.cp("t1", uuid.Nil, nil)
	put(t, s, c)
	if _, err := s.Get(ctx, "t1", g.id()); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Get of a missing id: err = %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, "t2", c.ID); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Get of another thread's id: err = %v, want ErrNotFound", err)
	}
	list, err := s.List(ctx, "nope", checkpoint.ListOptions{})
	if err != nil || len(list) != 0 {
		t.Errorf("List of a missing thread = %v, %v; want empty, nil", list, err)
	}
}

func testInvalidInput(t *testing.T, s checkpoint.Store) {
	g := newGen(t)
	ctx := context.Background()
	good := g.cp("t1", uuid.Nil, nil)
	put(t, s, good)
	noThread, noID, negStep, nulThread, badMD, nulNext := good, good, good, good, good, good
	noThread.ThreadID = ""
	noID.ID = uuid.Nil
	negStep.Step = -1
	nulThread.ThreadID = "t\x00"
	badMD.Metadata = map[string]string{"ok": "fine", "bad": "\xff\xfe"}
	nulNext.Next = []string{"a", "b\x00"}
	for _, tc := range []struct {
		name  string
		call  func() error
		field string
	}{
		{"Put empty thread", func() error { return s.Put(ctx, noThread) }, "thread_id"},
		{"Put nil id", func() error { return s.Put(ctx, noID) }, "id"},
		{"Put negative step", func() error { return s.Put(ctx, negStep) }, "step"},
		{"Put NUL in thread", func() error { return s.Put(ctx, nulThread) }, "thread_id"},
		{"Put invalid UTF-8 metadata", func() error { return s.Put(ctx, badMD) }, `metadata["bad"]`},
		{"Put NUL in next", func() error { return s.Put(ctx, nulNext) }, "next[1]"},
		{"PutWrites NUL in task", func() error {
			return s.PutWrites(ctx, "t1", good.ID, []checkpoint.Write{{Task: "a\x00", Kind: checkpoint.WriteUpdate}})
		}, "writes[0].task"},
		{"PutWrites empty thread", func() error {
			return s.PutWrites(ctx, "", good.ID, []checkpoint.Write{{Task: "a", Kind: checkpoint.WriteUpdate}})
		}, "thread_id"},
		{"PutWrites nil id", func() error {
			return s.PutWrites(ctx, "t1", uuid.Nil, []checkpoint.Write{{Task: "a", Kind: checkpoint.WriteUpdate}})
		}, "checkpoint_id"},
		{"PutWrites empty task", func() error {
			return s.PutWrites(ctx, "t1", good.ID, []checkpoint.Write{{Task: "a", Kind: checkpoint.WriteUpdate}, {Kind: checkpoint.WriteUpdate}})
		}, "writes[1].task"},
		{"PutWrites empty kind", func() error {
			return s.PutWrites(ctx, "t1", good.ID, []checkpoint.Write{{Task: "a"}})
		}, "writes[0].kind"},
	} {
		err := tc.call()
		var ie *checkpoint.InvalidError
		if !errors.Is(err, checkpoint.ErrInvalid) || !errors.As(err, &ie) || ie.Field != tc.field {
			t.Errorf("%s: err = %v, want an InvalidError naming %q", tc.name, err, tc.field)
		}
	}
	// Nothing of a refused call may have been stored.
	tu := get(t, s, "t1", uuid.Nil)
	if len(tu.Writes) != 0 {
		t.Errorf("a refused PutWrites stored %d writes", len(tu.Writes))
	}
	if d := diff(good, tu.Checkpoint); d != "" {
		t.Errorf("a refused Put changed the thread: %s", d)
	}
}

func testList(t *testing.T, s checkpoint.Store) {
	g := newGen(t)
	ctx := context.Background()
	var cps []checkpoint.Checkpoint // oldest first
	parent := uuid.Nil
	for i := range 10 {
		kind := "a"
		if i%2 == 1 {
			kind = "b"
		}
		c := g.cp("t1", parent, map[string]string{"kind": kind, "owner": "alice"})
		parent = c.ID
		cps = append(cps, c)
	}
	put(t, s, cps...)
	put(t, s, g.cp("other", uuid.Nil, map[string]string{"kind": "a", "owner": "alice"}))

	newest := func(idx ...int) []uuid.UUID {
		out := make([]uuid.UUID, len(idx))
		for i, x := range idx {
			out[i] = cps[x].ID
		}
		return out
	}
	for _, tc := range []struct {
		name string
		opts checkpoint.ListOptions
		want []uuid.UUID
	}{
		{"all", checkpoint.ListOptions{}, newest(9, 8, 7, 6, 5, 4, 3, 2, 1, 0)},
		{"limit", checkpoint.ListOptions{Limit: 3}, newest(9, 8, 7)},
		{"limit above count", checkpoint.ListOptions{Limit: 50}, newest(9, 8, 7, 6, 5, 4, 3, 2, 1, 0)},
		{"before", checkpoint.ListOptions{Before: cps[5].ID}, newest(4, 3, 2, 1, 0)},
		{"before oldest", checkpoint.ListOptions{Before: cps[0].ID}, nil},
		{"before and limit", checkpoint.ListOptions{Before: cps[5].ID, Limit: 2}, newest(4, 3)},
		{"filter", checkpoint.ListOptions{Filter: map[string]string{"kind": "a"}}, newest(8, 6, 4, 2, 0)},
		{"filter two keys", checkpoint.ListOptions{Filter: map[string]string{"kind": "b", "owner": "alice"}}, newest(9, 7, 5, 3, 1)},
		{"filter limit before", checkpoint.ListOptions{Filter: map[string]string{"kind": "b"}, Before: cps[7].ID, Limit: 2}, newest(5, 3)},
		{"filter wrong value", checkpoint.ListOptions{Filter: map[string]string{"kind": "c"}}, nil},
		{"filter missing key", checkpoint.ListOptions{Filter: map[string]string{"nokey": ""}}, nil},
	} {
		got, err := s.List(ctx, "t1", tc.opts)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !slices.Equal(ids(got), tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, ids(got), tc.want)
		}
	}
	// List returns whole checkpoints, not just ids.
	got, err := s.List(ctx, "t1", checkpoint.ListOptions{Limit: 1})
	if err != nil || len(got) != 1 {
		t.Fatalf("List limit 1 = %v, %v", got, err)
	}
	if d := diff(cps[9], got[0]); d != "" {
		t.Errorf("listed checkpoint: %s", d)
	}
}

func testWrites(t *testing.T, s checkpoint.Store) {
	g := newGen(t)
	ctx := context.Background()
	c1 := g.cp("t1", uuid.Nil, nil)
	c2 := g.cp("t1", c1.ID, nil)
	put(t, s, c1, c2)
	w := func(task string, kind checkpoint.WriteKind, v string) checkpoint.Write {
		return checkpoint.Write{Task: task, Kind: kind, Value: json.RawMessage(v)}
	}
	must := func(id uuid.UUID, ws ...checkpoint.Write) {
		t.Helper()
		if err := s.PutWrites(ctx, "t1", id, ws); err != nil {
			t.Fatalf("PutWrites: %v", err)
		}
	}
	check := func(label string, id uuid.UUID, want ...checkpoint.Write) {
		t.Helper()
		got := get(t, s, "t1", id).Writes
		if len(got) != len(want) {
			t.Errorf("%s: %d writes %v, want %d %v", label, len(got), got, len(want), want)
			return
		}
		for i := range want {
			if got[i].Task != want[i].Task || got[i].Kind != want[i].Kind || !bytes.Equal(got[i].Value, want[i].Value) {
				t.Errorf("%s: write %d = %s/%s %s, want %s/%s %s", label, i,
					got[i].Task, got[i].Kind, got[i].Value, want[i].Task, want[i].Kind, want[i].Value)
			}
		}
	}

	must(c2.ID, w("a", checkpoint.WriteUpdate, `{"a":1}`), w("b", checkpoint.WriteUpdate, `{"b":1}`))
	check("two tasks", c2.ID, w("a", checkpoint.WriteUpdate, `{"a":1}`), w("b", checkpoint.WriteUpdate, `{"b":1}`))

	// Same task and kind replaces in place (idempotent); the order of first write is kept.
	must(c2.ID, w("a", checkpoint.WriteUpdate, `{"a":2}`))
	check("replace", c2.ID, w("a", checkpoint.WriteUpdate, `{"a":2}`), w("b", checkpoint.WriteUpdate, `{"b":1}`))
	must(c2.ID, w("a", checkpoint.WriteUpdate, `{"a":2}`))
	check("same write again", c2.ID, w("a", checkpoint.WriteUpdate, `{"a":2}`), w("b", checkpoint.WriteUpdate, `{"b":1}`))

	// Same task, another kind is another write.
	must(c2.ID, w("a", checkpoint.WriteInterrupt, `"ask"`), w("c", checkpoint.WriteError, `"boom"`))
	check("other kinds", c2.ID,
		w("a", checkpoint.WriteUpdate, `{"a":2}`), w("b", checkpoint.WriteUpdate, `{"b":1}`),
		w("a", checkpoint.WriteInterrupt, `"ask"`), w("c", checkpoint.WriteError, `"boom"`))

	// A key repeated inside one batch: the last value wins.
	must(c2.ID, w("d", checkpoint.WriteResume, `"first"`), w("d", checkpoint.WriteResume, `"second"`))
	got := get(t, s, "t1", uuid.Nil).Writes
	if n := len(got); n != 5 || got[4].Task != "d" || string(got[4].Value) != `"second"` {
		t.Errorf("repeated key in one batch: writes %v, want 5 with d = \"second\" last", got)
	}

	// A write without value round-trips as empty.
	must(c1.ID, checkpoint.Write{Task: "x", Kind: checkpoint.WriteUpdate})
	if ws := get(t, s, "t1", c1.ID).Writes; len(ws) != 1 || len(ws[0].Value) != 0 {
		t.Errorf("write without value: %v", ws)
	}
	// An empty batch is a no-op.
	if err := s.PutWrites(ctx, "t1", c1.ID, nil); err != nil {
		t.Errorf("PutWrites with no writes: %v", err)
	}
	// Writes belong to their checkpoint only.
	if ws := get(t, s, "t1", c1.ID).Writes; len(ws) != 1 {
		t.Errorf("writes of c1 = %v, want 1", ws)
	}
}

func testWritesMissingCheckpoint(t *testing.T, s checkpoint.Store) {
	g := newGen(t)
	ctx := context.Background()
	ws := []checkpoint.Write{{Task: "a", Kind: checkpoint.WriteUpdate, Value: json.RawMessage(`1`)}}
	if err := s.PutWrites(ctx, "nope", g.id(), ws); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("PutWrites on a missing thread: err = %v, want ErrNotFound", err)
	}
	c := g.cp("t1", uuid.Nil, nil)
	put(t, s, c)
	if err := s.PutWrites(ctx, "t1", g.id(), ws); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("PutWrites on a missing checkpoint: err = %v, want ErrNotFound", err)
	}
	if err := s.PutWrites(ctx, "t2", c.ID, ws); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("PutWrites on another thread's checkpoint: err = %v, want ErrNotFound", err)
	}
	// The checkpoint is checked even when there is nothing to write.
	if err := s.PutWrites(ctx, "t1", g.id(), nil); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("PutWrites of no writes on a missing checkpoint: err = %v, want ErrNotFound", err)
	}
}

func testDeleteThread(t *testing.T, s checkpoint.Store) {
	g := newGen(t)
	ctx := context.Background()
	a1 := g.cp("a", uuid.Nil, map[string]string{"owner": "x"})
	a2 := g.cp("a", a1.ID, map[string]string{"owner": "x"})
	b1 := g.cp("b", uuid.Nil, map[string]string{"owner": "x"})
	put(t, s, a1, a2, b1)
	ws := []checkpoint.Write{{Task: "n", Kind: checkpoint.WriteUpdate, Value: json.RawMessage(`1`)}}
	for _, c := range []checkpoint.Checkpoint{a2, b1} {
		if err := s.PutWrites(ctx, c.ThreadID, c.ID, ws); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteThread(ctx, "a"); err != nil {
		t.Fatalf("DeleteThread: %v", err)
	}
	if _, err := s.Get(ctx, "a", uuid.Nil); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Get after delete: err = %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, "a", a1.ID); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Get by id after delete: err = %v, want ErrNotFound", err)
	}
	if l, err := s.List(ctx, "a", checkpoint.ListOptions{}); err != nil || len(l) != 0 {
		t.Errorf("List after delete = %v, %v", ids(l), err)
	}
	if err := s.PutWrites(ctx, "a", a2.ID, ws); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("PutWrites after delete: err = %v, want ErrNotFound", err)
	}
	ts, err := s.Threads(ctx, checkpoint.ThreadFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if got := threadIDs(ts); !slices.Equal(got, []string{"b"}) {
		t.Errorf("Threads after delete = %v, want [b]", got)
	}
	// The other thread is untouched, writes included.
	if tu := get(t, s, "b", uuid.Nil); tu.Checkpoint.ID != b1.ID || len(tu.Writes) != 1 {
		t.Errorf("thread b after deleting a: %s with %d writes", tu.Checkpoint.ID, len(tu.Writes))
	}
	if err := s.DeleteThread(ctx, "a"); err != nil {
		t.Errorf("deleting a deleted thread: %v", err)
	}
	if err := s.DeleteThread(ctx, "never-existed"); err != nil {
		t.Errorf("deleting a missing thread: %v", err)
	}
	// A deleted thread id can be used again and starts empty.
	a3 := g.cp("a", uuid.Nil, nil)
	put(t, s, a3)
	if l, err := s.List(ctx, "a", checkpoint.ListOptions{}); err != nil || !slices.Equal(ids(l), []uuid.UUID{a3.ID}) {
		t.Errorf("List after reuse = %v, %v; want only the new checkpoint", ids(l), err)
	}
	if w := get(t, s, "a", uuid.Nil).Writes; len(w) != 0 {
		t.Errorf("reused thread has %d old writes", len(w))
	}
}

func testThreads(t *testing.T, s checkpoint.Store) {
	g := newGen(t)
	ctx := context.Background()
	alice := map[string]string{"owner": "alice"}
	bob := map[string]string{"owner": "bob"}
	a1 := g.cp("ta", uuid.Nil, alice)
	b1 := g.cp("tb", uuid.Nil, bob)
	c1 := g.cp("tc", uuid.Nil, alice)
	a2 := g.cp("ta", a1.ID, map[string]string{"owner": "alice", "title": "hello"})
	d1 := g.cp("td", uuid.Nil, bob)
	c2 := g.cp("tc", c1.ID, bob) // tc changes owner: filters see the latest metadata
	put(t, s, a1, b1, c1, a2, d1, c2)
	// Updated order (latest checkpoint id, newest first): tc, td, ta, tb.

	for _, tc := range []struct {
		name string
		f    checkpoint.ThreadFilter
		want []string
	}{
		{"all", checkpoint.ThreadFilter{}, []string{"tc", "td", "ta", "tb"}},
		{"limit", checkpoint.ThreadFilter{Limit: 2}, []string{"tc", "td"}},
		{"alice", checkpoint.ThreadFilter{Metadata: alice}, []string{"ta"}},
		{"bob", checkpoint.ThreadFilter{Metadata: bob}, []string{"tc", "td", "tb"}},
		{"bob limit", checkpoint.ThreadFilter{Metadata: bob, Limit: 2}, []string{"tc", "td"}},
		{"two keys", checkpoint.ThreadFilter{Metadata: map[string]string{"owner": "alice", "title": "hello"}}, []string{"ta"}},
		{"nobody", checkpoint.ThreadFilter{Metadata: map[string]string{"owner": "carol"}}, nil},
		{"one thread", checkpoint.ThreadFilter{ThreadID: "td"}, []string{"td"}},
		{"one thread and its owner", checkpoint.ThreadFilter{ThreadID: "tc", Metadata: bob}, []string{"tc"}},
		{"one thread, another owner", checkpoint.ThreadFilter{ThreadID: "tc", Metadata: alice}, nil},
		{"one thread, not there", checkpoint.ThreadFilter{ThreadID: "tz"}, nil},
		{"one thread before", checkpoint.ThreadFilter{ThreadID: "ta", Before: d1.ID}, []string{"ta"}},
		{"one thread, not before", checkpoint.ThreadFilter{ThreadID: "tc", Before: d1.ID}, nil},
		// Paging: the next page starts below the last thread's latest id.
		{"before", checkpoint.ThreadFilter{Before: d1.ID}, []string{"ta", "tb"}},
		{"before limit", checkpoint.ThreadFilter{Before: c2.ID, Limit: 2}, []string{"td", "ta"}},
		{"bob before", checkpoint.ThreadFilter{Metadata: bob, Before: d1.ID}, []string{"tb"}},
		{"before the oldest", checkpoint.ThreadFilter{Before: b1.ID}, nil},
	} {
		got, err := s.Threads(ctx, tc.f)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !slices.Equal(threadIDs(got), tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, threadIDs(got), tc.want)
		}
	}
	all, err := s.Threads(ctx, checkpoint.ThreadFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range all {
		if ti.ThreadID != "ta" {
			continue
		}
		if ti.Latest != a2.ID {
			t.Errorf("ta latest = %s, want %s", ti.Latest, a2.ID)
		}
		if !maps.Equal(ti.Metadata, a2.Metadata) {
			t.Errorf("ta metadata = %v, want %v", ti.Metadata, a2.Metadata)
		}
		if d := timeDiff(a1.Created, ti.Created); d != "" {
			t.Errorf("ta created = %s, want %s (first checkpoint)", d, a1.Created)
		}
		if d := timeDiff(a2.Created, ti.Updated); d != "" {
			t.Errorf("ta updated = %s, want %s (latest checkpoint)", d, a2.Created)
		}
	}
}

func testConcurrentThreads(t *testing.T, s checkpoint.Store) {
	const (
		writers = 8
		puts    = 25
	)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	latest := make([]uuid.UUID, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			thread := fmt.Sprintf("conc-%d", w)
			parent := uuid.Nil
			for i := range puts {
				id, err := uuid.NewV7()
				if err != nil {
					errs <- err
					return
				}
				cp := checkpoint.Checkpoint{ThreadID: thread, ID: id, ParentID: parent, Step: i,
					State:    json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)),
					Metadata: map[string]string{"writer": fmt.Sprint(w)}, Created: time.Now()}
				if err := s.Put(ctx, cp); err != nil {
					errs <- fmt.Errorf("%s put %d: %w", thread, i, err)
					return
				}
				err = s.PutWrites(ctx, thread, id, []checkpoint.Write{{Task: "n", Kind: checkpoint.WriteUpdate, Value: json.RawMessage(`1`)}})
				if err != nil {
					errs <- fmt.Errorf("%s writes %d: %w", thread, i, err)
					return
				}
				parent = id
			}
			latest[w] = parent
		}()
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
		l, err := s.List(ctx, thread, checkpoint.ListOptions{})
		if err != nil || len(l) != puts {
			t.Errorf("%s: List = %d checkpoints, %v; want %d", thread, len(l), err, puts)
			continue
		}
		tu := get(t, s, thread, uuid.Nil)
		if tu.Checkpoint.ID != latest[w] || len(tu.Writes) != 1 {
			t.Errorf("%s: latest %s with %d writes, want %s with 1", thread, tu.Checkpoint.ID, len(tu.Writes), latest[w])
		}
		want := fmt.Sprintf(`{"w":%d,"i":%d}`, w, puts-1)
		if string(tu.Checkpoint.State) != want {
			t.Errorf("%s: state %s, want %s", thread, tu.Checkpoint.State, want)
		}
	}
	ts, err := s.Threads(ctx, checkpoint.ThreadFilter{})
	if err != nil || len(ts) != writers {
		t.Errorf("Threads = %d, %v; want %d", len(ts), err, writers)
	}
}

// DeleteThread racing with writers on the same thread (a replica deleting a
// conversation another replica is still running) must leave the thread
// consistent: its summary in Threads exists exactly when checkpoints do, and
// names the latest one. The only error writers may see is ErrNotFound from
// PutWrites on a checkpoint that was deleted.
func testDeleteWhileWriting(t *testing.T, s checkpoint.Store) {
	const (
		writers = 4
		puts    = 30
		deletes = 30
	)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, writers+1)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range puts {
				id, err := uuid.NewV7()
				if err != nil {
					errs <- err
					return
				}
				cp := checkpoint.Checkpoint{ThreadID: "contested", ID: id, Step: i, State: json.RawMessage(`{}`),
					Metadata: map[string]string{"writer": fmt.Sprint(w)}, Created: time.Now()}
				if err := s.Put(ctx, cp); err != nil {
					errs <- fmt.Errorf("put: %w", err)
					return
				}
				err = s.PutWrites(ctx, "contested", id, []checkpoint.Write{{Task: "n", Kind: checkpoint.WriteUpdate, Value: json.RawMessage(`1`)}})
				if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
					errs <- fmt.Errorf("PutWrites: %w", err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range deletes {
			if err := s.DeleteThread(ctx, "contested"); err != nil {
				errs <- fmt.Errorf("DeleteThread: %w", err)
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	list, err := s.List(ctx, "contested", checkpoint.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := s.Threads(ctx, checkpoint.ThreadFilter{})
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case len(list) == 0 && len(ts) != 0:
		t.Errorf("no checkpoints left, but Threads lists %v", threadIDs(ts))
	case len(list) > 0 && len(ts) != 1:
		t.Errorf("%d checkpoints left, but Threads lists %v", len(list), threadIDs(ts))
	case len(list) > 0 && ts[0].Latest != list[0].ID:
		t.Errorf("Threads says latest %s, List says %s", ts[0].Latest, list[0].ID)
	}
	if len(list) > 0 {
		if tu := get(t, s, "contested", uuid.Nil); tu.Checkpoint.ID != list[0].ID {
			t.Errorf("Get latest = %s, List newest = %s", tu.Checkpoint.ID, list[0].ID)
		}
	}
}

func testLargeState(t *testing.T, s checkpoint.Store) {
	g := newGen(t)
	// 6 MiB of JSON with every byte value that may appear in a JSON string.
	var b bytes.Buffer
	b.WriteString(`{"blob":"`)
	pattern := []byte("abcdefghijklmnopqrstuvwxyz0123456789 é漢\\\"\\n")
	for b.Len() < 6<<20 {
		b.Write(pattern)
	}
	b.WriteString(`"}`)
	c := g.cp("big", uuid.Nil, nil)
	c.State = b.Bytes()
	put(t, s, c)
	value := bytes.Repeat([]byte("x"), 2<<20)
	value[0], value[len(value)-1] = '"', '"'
	if err := s.PutWrites(context.Background(), "big", c.ID, []checkpoint.Write{{Task: "n", Kind: checkpoint.WriteUpdate, Value: value}}); err != nil {
		t.Fatalf("PutWrites 2 MiB: %v", err)
	}
	tu := get(t, s, "big", uuid.Nil)
	if !bytes.Equal(tu.Checkpoint.State, c.State) {
		t.Errorf("large state: got %d bytes, want %d equal bytes", len(tu.Checkpoint.State), len(c.State))
	}
	if len(tu.Writes) != 1 || !bytes.Equal(tu.Writes[0].Value, value) {
		t.Errorf("large write did not round-trip")
	}
}

// States are stored as the exact bytes given, not re-encoded (a JSON column
// would reorder keys and drop whitespace), and the store neither keeps nor
// hands out the caller's buffers.
func testBytesRoundTrip(t *testing.T, s checkpoint.Store) {
	g := newGen(t)
	ctx := context.Background()
	exact := "{ \"z\": 1,\n  \"a\" : [1.0, 2e3, \"\\u00e9\"], \"dup\":1, \"dup\":2 }"
	state := []byte(exact)
	c := g.cp("t1", uuid.Nil, map[string]string{"k": "v", "": "empty key", "weird \"key\"": "ü\x01"})
	c.State = state
	c.Next = []string{"b", "a", "b"} // order and duplicates are the caller's business
	put(t, s, c)
	value := []byte(`{"v":  1}`)
	if err := s.PutWrites(ctx, "t1", c.ID, []checkpoint.Write{{Task: "n", Kind: checkpoint.WriteUpdate, Value: value}}); err != nil {
		t.Fatal(err)
	}
	// Caller mutates its buffers after the calls returned.
	state[0], value[0] = 'X', 'X'
	c.Metadata["k"] = "changed"
	c.Next[0] = "changed"

	tu := get(t, s, "t1", c.ID)
	if string(tu.Checkpoint.State) != exact {
		t.Errorf("state = %q, want exactly %q", tu.Checkpoint.State, exact)
	}
	if len(tu.Writes) != 1 || string(tu.Writes[0].Value) != `{"v":  1}` {
		t.Errorf("write value = %v, want exactly {\"v\":  1}", tu.Writes)
	}
	wantMD := map[string]string{"k": "v", "": "empty key", "weird \"key\"": "ü\x01"}
	if !maps.Equal(tu.Checkpoint.Metadata, wantMD) {
		t.Errorf("metadata = %q, want %q", tu.Checkpoint.Metadata, wantMD)
	}
	if !slices.Equal(tu.Checkpoint.Next, []string{"b", "a", "b"}) {
		t.Errorf("next = %q, want [b a b]", tu.Checkpoint.Next)
	}
	l, err := s.List(ctx, "t1", checkpoint.ListOptions{Filter: map[string]string{"weird \"key\"": "ü\x01"}})
	if err != nil || len(l) != 1 {
		t.Errorf("List filtered on an unusual key = %d, %v; want 1", len(l), err)
	}
	// Mutating what Get returned does not change the store.
	tu.Checkpoint.State[0] = 'Y'
	tu.Checkpoint.Metadata["k"] = "changed"
	if again := get(t, s, "t1", c.ID); string(again.Checkpoint.State) != exact || again.Checkpoint.Metadata["k"] != "v" {
		t.Errorf("Get handed out the store's own buffers")
	}
	// Empty collections come back as nil.
	e := g.cp("t2", uuid.Nil, map[string]string{})
	e.State, e.Next = nil, []string{}
	put(t, s, e)
	got := get(t, s, "t2", uuid.Nil).Checkpoint
	if got.State != nil || got.Next != nil || got.Metadata != nil {
		t.Errorf("empty collections = %#v %#v %#v, want nil", got.State, got.Next, got.Metadata)
	}
}

func testTimes(t *testing.T, s checkpoint.Store) {
	g := newGen(t)
	zone := time.FixedZone("UTC+05:30", 5*3600+1800)
	c := g.cp("t1", uuid.Nil, nil)
	c.Created = time.Date(2026, 3, 4, 5, 6, 7, 123456789, zone)
	c.NotBefore = time.Date(2026, 3, 4, 5, 7, 0, 999999999, zone)
	put(t, s, c)
	z := g.cp("t2", uuid.Nil, nil)
	z.Created = time.Now() // has a monotonic reading, which cannot survive storage
	put(t, s, z)
	for _, want := range []checkpoint.Checkpoint{c, z} {
		got := get(t, s, want.ThreadID, uuid.Nil).Checkpoint
		if d := timeDiff(want.Created, got.Created); d != "" {
			t.Errorf("%s Created = %s, want %s truncated to %s in UTC", want.ThreadID, d, want.Created, Precision)
		}
		if d := timeDiff(want.NotBefore, got.NotBefore); d != "" {
			t.Errorf("%s NotBefore = %s, want %s", want.ThreadID, d, want.NotBefore)
		}
	}
	ts, err := s.Threads(context.Background(), checkpoint.ThreadFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range ts {
		if ti.ThreadID == "t1" {
			if d := timeDiff(c.Created, ti.Created); d != "" {
				t.Errorf("ThreadInfo.Created = %s", d)
			}
			if d := timeDiff(c.Created, ti.Updated); d != "" {
				t.Errorf("ThreadInfo.Updated = %s", d)
			}
		}
	}
}

func testCanceledContext(t *testing.T, s checkpoint.Store) {
	g := newGen(t)
	c := g.cp("t1", uuid.Nil, nil)
	put(t, s, c)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c2 := g.cp("t1", c.ID, nil)
	ws := []checkpoint.Write{{Task: "n", Kind: checkpoint.WriteUpdate, Value: json.RawMessage(`1`)}}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"Put", func() error { return s.Put(ctx, c2) }},
		{"PutWrites", func() error { return s.PutWrites(ctx, "t1", c.ID, ws) }},
		{"Get", func() error { _, err := s.Get(ctx, "t1", uuid.Nil); return err }},
		{"List", func() error { _, err := s.List(ctx, "t1", checkpoint.ListOptions{}); return err }},
		{"Threads", func() error { _, err := s.Threads(ctx, checkpoint.ThreadFilter{}); return err }},
		{"DeleteThread", func() error { return s.DeleteThread(ctx, "t1") }},
	} {
		if err := tc.call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context: err = %v, want context.Canceled", tc.name, err)
		}
	}
	// None of the canceled calls changed anything.
	tu := get(t, s, "t1", uuid.Nil)
	if tu.Checkpoint.ID != c.ID || len(tu.Writes) != 0 {
		t.Errorf("after canceled calls: latest %s with %d writes, want %s with none", tu.Checkpoint.ID, len(tu.Writes), c.ID)
	}
	// A deadline that passes is honoured the same way.
	dctx, dcancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer dcancel()
	<-dctx.Done()
	if _, err := s.Get(dctx, "t1", uuid.Nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Get past its deadline: err = %v, want DeadlineExceeded", err)
	}
}
