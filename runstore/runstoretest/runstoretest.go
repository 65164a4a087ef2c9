package runstoretest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/runstore"
)

// Run runs the conformance suite of run records against the stores
// newStore returns: each call an empty store, which registers its own
// cleanup with t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) runstore.Store) {
	t.Helper()
	for _, tc := range runCases {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

var runCases = []struct {
	name string
	fn   func(t *testing.T, rs runstore.Store)
}{
	{"RunsCreateGet", testRunsCreateGet},
	{"RunsKey", testRunsKey},
	{"RunsUpdate", testRunsUpdate},
	{"RunsList", testRunsList},
	{"RunsDeletePrune", testRunsDeletePrune},
	{"RunsInvalid", testRunsInvalid},
	{"RunsConcurrentTake", testRunsConcurrentTake},
	{"RunsConcurrentKey", testRunsConcurrentKey},
}

func createRun(t *testing.T, rs runstore.Store, r runstore.Record) runstore.Record {
	t.Helper()
	out, created, err := rs.CreateRun(context.Background(), r)
	if err != nil || !created {
		t.Fatalf("CreateRun(%s) = %v, created %v", r.ID, err, created)
	}
	return out
}

func runIDs(rs []runstore.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func testRunsCreateGet(t *testing.T, rs runstore.Store) {
	ctx := context.Background()
	before := time.Now().Add(-time.Second)
	in := json.RawMessage(`{"input": "What is the beam current?",  "n": [1, 2]}`)
	got := createRun(t, rs, runstore.Record{ID: "r1", Thread: "t1", Input: in, Key: "k1",
		Labels: map[string]string{"owner": "alice", "tenant": "lab"}, Owner: "p1"})
	if got.Status != runstore.Queued || got.Seq <= 0 || got.Created.Before(before) || !got.Updated.Equal(got.Created) || got.Attempt != 0 {
		t.Fatalf("created %+v", got)
	}
	if got.Created.Location() != time.UTC || got.Created.Nanosecond()%1000 != 0 {
		t.Errorf("created time %v is not UTC microseconds", got.Created)
	}
	back, err := rs.GetRun(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if string(back.Input) != string(in) {
		t.Errorf("input came back as %s, want the same bytes %s", back.Input, in)
	}
	if back.Thread != "t1" || back.Key != "k1" || back.Owner != "p1" || !maps.Equal(back.Labels, got.Labels) || back.Seq != got.Seq ||
		!back.Created.Equal(got.Created) || back.Result != nil || back.Error != "" {
		t.Errorf("GetRun = %+v, want %+v", back, got)
	}
	// What CreateRun returned is the record as stored, field for field.
	if !reflect.DeepEqual(back, got) {
		t.Errorf("CreateRun returned %+v, GetRun reads %+v", got, back)
	}
	if k, err := rs.GetRunByKey(ctx, "k1"); err != nil || k.ID != "r1" {
		t.Errorf("GetRunByKey = %+v, %v", k, err)
	}
	if _, err := rs.GetRun(ctx, "nope"); !errors.Is(err, runstore.ErrNotFound) {
		t.Errorf("GetRun(missing) = %v, want ErrNotFound", err)
	}
	if _, err := rs.GetRunByKey(ctx, "nope"); !errors.Is(err, runstore.ErrNotFound) {
		t.Errorf("GetRunByKey(missing) = %v, want ErrNotFound", err)
	}
	if _, err := rs.GetRunByKey(ctx, ""); !errors.Is(err, runstore.ErrNotFound) {
		t.Errorf("GetRunByKey(\"\") = %v, want ErrNotFound", err)
	}
	second := createRun(t, rs, runstore.Record{ID: "r2", Thread: "t1", Status: runstore.Running})
	if second.Seq <= got.Seq || second.Status != runstore.Running || second.Labels != nil || second.Input != nil {
		t.Errorf("second %+v (first seq %d)", second, got.Seq)
	}
}

func testRunsKey(t *testing.T, rs runstore.Store) {
	ctx := context.Background()
	first := createRun(t, rs, runstore.Record{ID: "r1", Thread: "t1", Key: "same", Input: json.RawMessage(`1`), Result: json.RawMessage(`{"content":"500 mA"}`)})
	again, created, err := rs.CreateRun(ctx, runstore.Record{ID: "r2", Thread: "t2", Key: "same", Input: json.RawMessage(`2`)})
	if err != nil || created || again.ID != "r1" || string(again.Input) != "1" || again.Seq != first.Seq {
		t.Fatalf("repeated key: %+v created %v err %v", again, created, err)
	}
	if _, err := rs.GetRun(ctx, "r2"); !errors.Is(err, runstore.ErrNotFound) {
		t.Errorf("the repeated request stored a record: %v", err)
	}
	// The same record created again (a retry of a CreateRun whose
	// outcome was lost): the record holding the key, not an id in use.
	if again, created, err := rs.CreateRun(ctx, runstore.Record{ID: "r1", Thread: "t1", Key: "same", Input: json.RawMessage(`1`)}); err != nil || created || again.ID != "r1" || again.Seq != first.Seq {
		t.Errorf("the same record again: %+v created %v err %v; want r1, not created", again, created, err)
	}
	// An id in use is refused, even with another key.
	if _, _, err := rs.CreateRun(ctx, runstore.Record{ID: "r1", Thread: "t1", Key: "other"}); !errors.Is(err, runstore.ErrInvalid) {
		t.Errorf("id in use: %v, want ErrInvalid", err)
	}
	if _, err := rs.GetRunByKey(ctx, "other"); !errors.Is(err, runstore.ErrNotFound) {
		t.Errorf("the refused record's key was taken: %v", err)
	}
	// Released, the key starts a new run.
	if _, err := rs.UpdateRun(ctx, "r1", runstore.Update{Status: runstore.Done, ReleaseKey: true}); err != nil {
		t.Fatal(err)
	}
	if r, _ := rs.GetRun(ctx, "r1"); r.Key != "" || r.Result != nil || string(r.Input) != "1" {
		t.Errorf("r1 released: key %q, result %s, input %s; want no key, no result (only a repetition by the key read it), the input kept", r.Key, r.Result, r.Input)
	}
	third := createRun(t, rs, runstore.Record{ID: "r3", Thread: "t1", Key: "same"})
	if k, err := rs.GetRunByKey(ctx, "same"); err != nil || k.ID != third.ID {
		t.Errorf("key now names %+v, %v; want r3", k, err)
	}
	// Records without a key never collide.
	createRun(t, rs, runstore.Record{ID: "r4", Thread: "t1"})
	createRun(t, rs, runstore.Record{ID: "r5", Thread: "t1"})
}

func testRunsUpdate(t *testing.T, rs runstore.Store) {
	ctx := context.Background()
	c := createRun(t, rs, runstore.Record{ID: "r1", Thread: "t1", Owner: "p1"})
	time.Sleep(2 * time.Millisecond)
	r, err := rs.UpdateRun(ctx, "r1", runstore.Update{From: []runstore.Status{runstore.Queued}, Status: runstore.Running, Owner: "p2", Start: true})
	if err != nil || r.Status != runstore.Running || r.Owner != "p2" || r.Attempt != 1 || !r.Updated.After(c.Updated) || !r.Created.Equal(c.Created) {
		t.Fatalf("start: %+v, %v", r, err)
	}
	// The condition fails: nothing changes.
	if _, err := rs.UpdateRun(ctx, "r1", runstore.Update{From: []runstore.Status{runstore.Queued}, Status: runstore.Running, Owner: "p3", Start: true}); !errors.Is(err, runstore.ErrConflict) {
		t.Fatalf("second start = %v, want ErrRunConflict", err)
	}
	if g, _ := rs.GetRun(ctx, "r1"); g.Owner != "p2" || g.Attempt != 1 || g.Status != runstore.Running {
		t.Fatalf("a failed conditional update changed the record: %+v", g)
	}
	// Taking over from an owner: only while that owner holds it.
	if _, err := rs.UpdateRun(ctx, "r1", runstore.Update{IfOwner: "p1", Status: runstore.Running, Owner: "p3"}); !errors.Is(err, runstore.ErrConflict) {
		t.Fatalf("take-over from a former owner = %v, want ErrRunConflict", err)
	}
	if r, err = rs.UpdateRun(ctx, "r1", runstore.Update{IfOwner: "p2", From: []runstore.Status{runstore.Running}, Status: runstore.Running, Owner: "p2"}); err != nil || r.Owner != "p2" {
		t.Fatalf("update by the owner: %+v, %v", r, err)
	}
	res := json.RawMessage(`{"content":"401.5 mA"}`)
	r, err = rs.UpdateRun(ctx, "r1", runstore.Update{From: []runstore.Status{runstore.Queued, runstore.Running},
		Status: runstore.Failed, Error: "the turn exceeded its time limit", Result: res})
	if err != nil || r.Status != runstore.Failed || r.Error != "the turn exceeded its time limit" || string(r.Result) != string(res) || r.Owner != "p2" || r.Attempt != 1 {
		t.Fatalf("fail: %+v, %v", r, err)
	}
	if g, _ := rs.GetRun(ctx, "r1"); string(g.Result) != string(res) || g.Error != r.Error || !g.Updated.Equal(r.Updated) {
		t.Errorf("stored %+v, returned %+v", g, r)
	}
	// Empty fields keep what is there.
	if r, err = rs.UpdateRun(ctx, "r1", runstore.Update{Status: runstore.Running, Start: true}); err != nil || r.Error == "" || r.Result == nil || r.Attempt != 2 {
		t.Errorf("restart: %+v, %v", r, err)
	}
	if _, err := rs.UpdateRun(ctx, "nope", runstore.Update{Status: runstore.Done}); !errors.Is(err, runstore.ErrNotFound) {
		t.Errorf("update missing = %v, want ErrNotFound", err)
	}
}

func testRunsList(t *testing.T, rs runstore.Store) {
	ctx := context.Background()
	alice := map[string]string{"owner": "alice"}
	bob := map[string]string{"owner": "bob"}
	createRun(t, rs, runstore.Record{ID: "a1", Thread: "ta", Labels: alice})
	createRun(t, rs, runstore.Record{ID: "b1", Thread: "tb", Labels: bob})
	createRun(t, rs, runstore.Record{ID: "a2", Thread: "ta", Labels: alice})
	time.Sleep(3 * time.Millisecond)
	mid := time.Now()
	time.Sleep(3 * time.Millisecond)
	createRun(t, rs, runstore.Record{ID: "b2", Thread: "tb", Labels: map[string]string{"owner": "bob", "source": "native"}})
	if _, err := rs.UpdateRun(ctx, "a1", runstore.Update{Status: runstore.Done}); err != nil {
		t.Fatal(err)
	}
	all, err := rs.ListRuns(ctx, runstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(runIDs(all), []string{"b2", "a2", "b1", "a1"}) {
		t.Fatalf("all: %v, want newest first", runIDs(all))
	}
	seqOf := map[string]int64{}
	for _, r := range all {
		seqOf[r.ID] = r.Seq
	}
	for _, tc := range []struct {
		name string
		f    runstore.Filter
		want []string
	}{
		{"thread", runstore.Filter{Thread: "ta"}, []string{"a2", "a1"}},
		{"status", runstore.Filter{Status: []runstore.Status{runstore.Queued}}, []string{"b2", "a2", "b1"}},
		{"statuses", runstore.Filter{Status: []runstore.Status{runstore.Done, runstore.Failed}}, []string{"a1"}},
		{"labels", runstore.Filter{Labels: bob}, []string{"b2", "b1"}},
		{"two labels", runstore.Filter{Labels: map[string]string{"owner": "bob", "source": "native"}}, []string{"b2"}},
		{"limit", runstore.Filter{Limit: 2}, []string{"b2", "a2"}},
		{"before", runstore.Filter{Before: seqOf["a2"]}, []string{"b1", "a1"}},
		{"before limit", runstore.Filter{Before: seqOf["b2"], Limit: 1}, []string{"a2"}},
		{"updated before", runstore.Filter{UpdatedBefore: mid}, []string{"a2", "b1"}},
		{"nobody", runstore.Filter{Labels: map[string]string{"owner": "carol"}}, nil},
	} {
		got, err := rs.ListRuns(ctx, tc.f)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !slices.Equal(runIDs(got), tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, runIDs(got), tc.want)
		}
	}
}

func testRunsDeletePrune(t *testing.T, rs runstore.Store) {
	ctx := context.Background()
	createRun(t, rs, runstore.Record{ID: "a1", Thread: "ta", Key: "ka"})
	createRun(t, rs, runstore.Record{ID: "a2", Thread: "ta"})
	createRun(t, rs, runstore.Record{ID: "b1", Thread: "tb", Key: "kb"})
	createRun(t, rs, runstore.Record{ID: "b2", Thread: "tb"})
	createRun(t, rs, runstore.Record{ID: "b3", Thread: "tb"})
	if err := rs.DeleteRuns(ctx, "ta"); err != nil {
		t.Fatal(err)
	}
	if err := rs.DeleteRuns(ctx, "never"); err != nil {
		t.Fatalf("deleting a thread without runs: %v", err)
	}
	if got, _ := rs.ListRuns(ctx, runstore.Filter{}); !slices.Equal(runIDs(got), []string{"b3", "b2", "b1"}) {
		t.Fatalf("after DeleteRuns(ta): %v", runIDs(got))
	}
	// A deleted record's key is free again.
	createRun(t, rs, runstore.Record{ID: "a3", Thread: "ta", Key: "ka"})
	for id, st := range map[string]runstore.Status{"b1": runstore.Done, "b2": runstore.Running} {
		if _, err := rs.UpdateRun(ctx, id, runstore.Update{Status: st}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * time.Millisecond)
	cut := time.Now()
	n, err := rs.PruneRuns(ctx, cut)
	if err != nil || n != 1 {
		t.Fatalf("PruneRuns = %d, %v; want 1 (only b1 is finished)", n, err)
	}
	if got, _ := rs.ListRuns(ctx, runstore.Filter{}); !slices.Equal(runIDs(got), []string{"a3", "b3", "b2"}) {
		t.Fatalf("after prune: %v", runIDs(got))
	}
	if _, err := rs.GetRunByKey(ctx, "kb"); !errors.Is(err, runstore.ErrNotFound) {
		t.Errorf("a pruned record's key is still taken: %v", err)
	}
	if n, err := rs.PruneRuns(ctx, cut.Add(-time.Hour)); err != nil || n != 0 {
		t.Errorf("prune before everything = %d, %v", n, err)
	}
}

func testRunsInvalid(t *testing.T, rs runstore.Store) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		r    runstore.Record
	}{
		{"no id", runstore.Record{Thread: "t"}},
		{"no thread", runstore.Record{ID: "r"}},
		{"bad status", runstore.Record{ID: "r", Thread: "t", Status: "sleeping"}},
		{"bad input", runstore.Record{ID: "r", Thread: "t", Input: json.RawMessage(`{"a":`)}},
		{"nul in thread", runstore.Record{ID: "r", Thread: "t\x00"}},
		{"bad utf-8 key", runstore.Record{ID: "r", Thread: "t", Key: "\xc0\xae"}},
		{"nul label", runstore.Record{ID: "r", Thread: "t", Labels: map[string]string{"a": "b\x00"}}},
		{"empty label key", runstore.Record{ID: "r", Thread: "t", Labels: map[string]string{"": "b"}}},
	} {
		if _, _, err := rs.CreateRun(ctx, tc.r); !errors.Is(err, runstore.ErrInvalid) {
			t.Errorf("%s: CreateRun = %v, want ErrInvalid", tc.name, err)
		}
	}
	if got, _ := rs.ListRuns(ctx, runstore.Filter{}); len(got) != 0 {
		t.Fatalf("refused records were stored: %v", runIDs(got))
	}
	createRun(t, rs, runstore.Record{ID: "r", Thread: "t"})
	for _, u := range []runstore.Update{
		{},
		{Status: "sleeping"},
		{Status: runstore.Done, From: []runstore.Status{"x"}},
		{Status: runstore.Done, Result: json.RawMessage(`nope`)},
		{Status: runstore.Failed, Error: "a\x00b"},
	} {
		if _, err := rs.UpdateRun(ctx, "r", u); !errors.Is(err, runstore.ErrInvalid) {
			t.Errorf("UpdateRun(%+v) = %v, want ErrInvalid", u, err)
		}
	}
	if g, _ := rs.GetRun(ctx, "r"); g.Status != runstore.Queued {
		t.Errorf("a refused update changed the record: %+v", g)
	}
}

// Processes taking the same queued run at once: exactly one gets it.
func testRunsConcurrentTake(t *testing.T, rs runstore.Store) {
	ctx := context.Background()
	const runs, takers = 10, 6
	for i := range runs {
		createRun(t, rs, runstore.Record{ID: fmt.Sprintf("r%d", i), Thread: fmt.Sprintf("t%d", i)})
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		took = map[string][]string{}
	)
	for p := range takers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("p%d", p)
			for i := range runs {
				id := fmt.Sprintf("r%d", i)
				_, err := rs.UpdateRun(ctx, id, runstore.Update{From: []runstore.Status{runstore.Queued}, Status: runstore.Running, Owner: owner, Start: true})
				switch {
				case err == nil:
					mu.Lock()
					took[id] = append(took[id], owner)
					mu.Unlock()
				case !errors.Is(err, runstore.ErrConflict):
					t.Errorf("take %s: %v", id, err)
				}
			}
		}()
	}
	wg.Wait()
	for i := range runs {
		id := fmt.Sprintf("r%d", i)
		r, err := rs.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(took[id]) != 1 || r.Attempt != 1 || r.Owner != took[id][0] {
			t.Errorf("%s taken by %v; record %+v", id, took[id], r)
		}
	}
}

// Requests with the same key at once: one record, every caller gets it.
func testRunsConcurrentKey(t *testing.T, rs runstore.Store) {
	ctx := context.Background()
	const callers = 8
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		created int
		ids     = map[string]bool{}
	)
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, ok, err := rs.CreateRun(ctx, runstore.Record{ID: fmt.Sprintf("r%d", c), Thread: "t", Key: "k"})
			if err != nil {
				t.Errorf("CreateRun: %v", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if ok {
				created++
			}
			ids[r.ID] = true
		}()
	}
	wg.Wait()
	if created != 1 || len(ids) != 1 {
		t.Fatalf("%d records created, callers saw %v; want one", created, ids)
	}
	if all, _ := rs.ListRuns(ctx, runstore.Filter{}); len(all) != 1 {
		t.Fatalf("stored %v", runIDs(all))
	}
}
