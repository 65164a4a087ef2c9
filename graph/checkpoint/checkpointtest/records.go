package checkpointtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

var recordCases = []struct {
	name string
	fn   func(t *testing.T, s checkpoint.Store, rl checkpoint.RecordLog)
}{
	{"RecordsAppendList", testRecordsAppendList},
	{"RecordsFilter", testRecordsFilter},
	{"RecordsInvalid", testRecordsInvalid},
	{"RecordsOutliveThreads", testRecordsOutliveThreads},
	{"RecordsConcurrent", testRecordsConcurrent},
	{"RecordsPagingSeesEveryAppend", testRecordsPagingSeesEveryAppend},
	{"RecordsCanceledContext", testRecordsCanceledContext},
}

func appendRecords(t *testing.T, rl checkpoint.RecordLog, recs ...checkpoint.Record) []checkpoint.Record {
	t.Helper()
	out, err := rl.AppendRecords(context.Background(), recs...)
	if err != nil {
		t.Fatalf("AppendRecords: %v", err)
	}
	if len(out) != len(recs) {
		t.Fatalf("AppendRecords returned %d records for %d", len(out), len(recs))
	}
	return out
}

func listRecords(t *testing.T, rl checkpoint.RecordLog, f checkpoint.RecordFilter) []checkpoint.Record {
	t.Helper()
	out, err := rl.Records(context.Background(), f)
	if err != nil {
		t.Fatalf("Records(%+v): %v", f, err)
	}
	return out
}

func seqs(rs []checkpoint.Record) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.Seq
	}
	return out
}

func recordDiff(want, got checkpoint.Record) string {
	switch {
	case got.Seq != want.Seq:
		return fmt.Sprintf("seq %d, want %d", got.Seq, want.Seq)
	case got.Kind != want.Kind || got.Thread != want.Thread:
		return fmt.Sprintf("kind/thread %q/%q, want %q/%q", got.Kind, got.Thread, want.Kind, want.Thread)
	case !bytes.Equal(got.Data, want.Data):
		return fmt.Sprintf("data %s, want %s", got.Data, want.Data)
	case !maps.Equal(got.Labels, want.Labels):
		return fmt.Sprintf("labels %v, want %v", got.Labels, want.Labels)
	}
	return timeDiff(want.Time, got.Time)
}

func testRecordsAppendList(t *testing.T, _ checkpoint.Store, rl checkpoint.RecordLog) {
	if got := listRecords(t, rl, checkpoint.RecordFilter{}); len(got) != 0 {
		t.Fatalf("a new store lists %d records", len(got))
	}
	at := time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.FixedZone("CET", 3600))
	// Data bytes come back unchanged: key order and spacing are kept.
	data := json.RawMessage(`{"z": 1,  "a": [1.50, "é"]}`)
	before := time.Now().Add(-time.Second)
	got := appendRecords(t, rl,
		checkpoint.Record{Kind: "audit", Thread: "t1", Time: at, Labels: map[string]string{"outcome": "executed"}, Data: data},
		checkpoint.Record{Kind: "audit", Data: json.RawMessage(`"no time, no thread"`)},
	)
	if got[0].Seq <= 0 || got[1].Seq <= got[0].Seq {
		t.Fatalf("seqs %v: want positive and increasing", seqs(got))
	}
	if got[1].Time.Before(before) || got[1].Time.After(time.Now().Add(time.Second)) {
		t.Errorf("a zero Time became %s, want the time of the append", got[1].Time)
	}
	want := []checkpoint.Record{
		{Seq: got[0].Seq, Kind: "audit", Thread: "t1", Time: at, Labels: map[string]string{"outcome": "executed"}, Data: data},
		{Seq: got[1].Seq, Kind: "audit", Time: got[1].Time, Data: json.RawMessage(`"no time, no thread"`)},
	}
	for i, g := range got {
		if d := recordDiff(want[i], g); d != "" {
			t.Errorf("AppendRecords result %d: %s", i, d)
		}
	}
	list := listRecords(t, rl, checkpoint.RecordFilter{})
	if len(list) != 2 {
		t.Fatalf("listed %d records, want 2", len(list))
	}
	for i, g := range list {
		if d := recordDiff(want[i], g); d != "" {
			t.Errorf("listed record %d: %s", i, d)
		}
		if g.Time.Location() != time.UTC {
			t.Errorf("listed record %d: time in %s, want UTC", i, g.Time.Location())
		}
	}
	// Another append continues the sequence.
	more := appendRecords(t, rl, checkpoint.Record{Kind: "audit", Data: json.RawMessage(`3`)})
	if more[0].Seq <= got[1].Seq {
		t.Errorf("third record seq %d after %d", more[0].Seq, got[1].Seq)
	}
	// The caller's slices are not shared with the store.
	list[0].Data[0] = 'X'
	list[0].Labels["outcome"] = "changed"
	again := listRecords(t, rl, checkpoint.RecordFilter{Limit: 1})
	if d := recordDiff(want[0], again[0]); d != "" {
		t.Errorf("after changing a listed record: %s", d)
	}
}

func testRecordsFilter(t *testing.T, _ checkpoint.Store, rl checkpoint.RecordLog) {
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var in []checkpoint.Record
	for i := range 6 {
		thread := "a"
		if i%2 == 1 {
			thread = "b"
		}
		kind := "audit"
		if i == 5 {
			kind = "other"
		}
		outcome := []string{"refused", "executed"}[i%3/2]
		in = append(in, checkpoint.Record{Kind: kind, Thread: thread, Time: base.Add(time.Duration(i) * time.Minute),
			Labels: map[string]string{"outcome": outcome, "tenant": "t"}, Data: json.RawMessage(fmt.Sprint(i))})
	}
	all := appendRecords(t, rl, in...)
	pick := func(idx ...int) []int64 {
		out := []int64{}
		for _, i := range idx {
			out = append(out, all[i].Seq)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    checkpoint.RecordFilter
		want []int64
	}{
		{"all", checkpoint.RecordFilter{}, pick(0, 1, 2, 3, 4, 5)},
		{"kind", checkpoint.RecordFilter{Kind: "other"}, pick(5)},
		{"thread", checkpoint.RecordFilter{Thread: "b"}, pick(1, 3, 5)},
		{"since", checkpoint.RecordFilter{Since: base.Add(4 * time.Minute)}, pick(4, 5)},
		{"until", checkpoint.RecordFilter{Until: base.Add(2 * time.Minute)}, pick(0, 1)},
		{"since and until", checkpoint.RecordFilter{Since: base.Add(time.Minute), Until: base.Add(3 * time.Minute)}, pick(1, 2)},
		{"label", checkpoint.RecordFilter{Labels: map[string]string{"outcome": "executed"}}, pick(2, 5)},
		{"labels", checkpoint.RecordFilter{Labels: map[string]string{"outcome": "refused", "tenant": "t"}}, pick(0, 1, 3, 4)},
		{"label absent", checkpoint.RecordFilter{Labels: map[string]string{"outcome": "nothing"}}, pick()},
		{"after", checkpoint.RecordFilter{After: all[3].Seq}, pick(4, 5)},
		{"limit", checkpoint.RecordFilter{Limit: 2}, pick(0, 1)},
		{"newest", checkpoint.RecordFilter{Newest: true, Limit: 2}, pick(5, 4)},
		{"newest of a thread", checkpoint.RecordFilter{Newest: true, Thread: "a"}, pick(4, 2, 0)},
		{"combined", checkpoint.RecordFilter{Kind: "audit", Thread: "a", Labels: map[string]string{"outcome": "refused"}}, pick(0, 4)},
	} {
		got := seqs(listRecords(t, rl, tc.f))
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: seqs %v, want %v", tc.name, got, tc.want)
		}
	}
}

func testRecordsInvalid(t *testing.T, _ checkpoint.Store, rl checkpoint.RecordLog) {
	ok := checkpoint.Record{Kind: "audit", Data: json.RawMessage(`{}`)}
	for _, tc := range []struct {
		name string
		r    checkpoint.Record
	}{
		{"no kind", checkpoint.Record{Data: json.RawMessage(`{}`)}},
		{"no data", checkpoint.Record{Kind: "audit"}},
		{"data not JSON", checkpoint.Record{Kind: "audit", Data: json.RawMessage(`{"a":`)}},
		{"two JSON values", checkpoint.Record{Kind: "audit", Data: json.RawMessage(`1 2`)}},
		{"NUL in thread", checkpoint.Record{Kind: "audit", Thread: "a\x00b", Data: json.RawMessage(`{}`)}},
		{"invalid UTF-8 kind", checkpoint.Record{Kind: "a\xff", Data: json.RawMessage(`{}`)}},
		{"empty label key", checkpoint.Record{Kind: "audit", Labels: map[string]string{"": "x"}, Data: json.RawMessage(`{}`)}},
		{"NUL in label", checkpoint.Record{Kind: "audit", Labels: map[string]string{"k": "\x00"}, Data: json.RawMessage(`{}`)}},
	} {
		// A batch with one bad record stores none of it.
		_, err := rl.AppendRecords(context.Background(), ok, tc.r)
		var ie *checkpoint.InvalidError
		if !errors.Is(err, checkpoint.ErrInvalid) || !errors.As(err, &ie) {
			t.Errorf("%s: err = %v, want an *InvalidError", tc.name, err)
		}
	}
	if got := listRecords(t, rl, checkpoint.RecordFilter{}); len(got) != 0 {
		t.Errorf("refused batches left %d records", len(got))
	}
}

func testRecordsOutliveThreads(t *testing.T, s checkpoint.Store, rl checkpoint.RecordLog) {
	g := newGen(t)
	cp := g.cp("gone", uuid.Nil, nil)
	put(t, s, cp)
	appendRecords(t, rl, checkpoint.Record{Kind: "audit", Thread: "gone", Data: json.RawMessage(`{"outcome":"executed"}`)})
	if err := s.DeleteThread(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	if got := listRecords(t, rl, checkpoint.RecordFilter{Thread: "gone"}); len(got) != 1 {
		t.Errorf("after DeleteThread the thread's records are %d, want 1 (the log is append-only)", len(got))
	}
}

// appendConcurrently starts writers goroutines, each appending each
// records of kind one at a time (Thread: the writer, Data: its count), and
// returns a wait for them that reports the first error.
func appendConcurrently(rl checkpoint.RecordLog, kind string, writers, each int) (wait func() error) {
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := rl.AppendRecords(context.Background(), checkpoint.Record{Kind: kind, Thread: fmt.Sprint(w),
					Data: json.RawMessage(fmt.Sprint(i))}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	return func() error {
		wg.Wait()
		close(errs)
		return <-errs
	}
}

func testRecordsConcurrent(t *testing.T, _ checkpoint.Store, rl checkpoint.RecordLog) {
	const writers, each = 8, 10
	if err := appendConcurrently(rl, "audit", writers, each)(); err != nil {
		t.Fatal(err)
	}
	got := listRecords(t, rl, checkpoint.RecordFilter{})
	if len(got) != writers*each {
		t.Fatalf("%d records, want %d", len(got), writers*each)
	}
	seen := map[int64]bool{}
	for i, r := range got {
		if seen[r.Seq] || (i > 0 && r.Seq <= got[i-1].Seq) {
			t.Fatalf("seqs not unique and ascending: %v", seqs(got))
		}
		seen[r.Seq] = true
	}
	for w := range writers {
		rs := listRecords(t, rl, checkpoint.RecordFilter{Thread: fmt.Sprint(w)})
		for i, r := range rs {
			if string(r.Data) != fmt.Sprint(i) {
				t.Fatalf("writer %d: record %d holds %s: one writer's records out of order", w, i, r.Data)
			}
		}
	}
}

// A reader paging with After while writers append sees every record: a
// record never commits below the Seq a reader has already passed (on
// PostgreSQL, appends of several connections took their Seq in one order
// and could commit in another, and a page could skip one for good).
func testRecordsPagingSeesEveryAppend(t *testing.T, _ checkpoint.Store, rl checkpoint.RecordLog) {
	const writers, each = 6, 40
	wait := appendConcurrently(rl, "paged", writers, each)
	done := make(chan struct{})
	var werr error
	go func() { werr = wait(); close(done) }()
	seen := map[int64]bool{}
	var after int64
	page := func() int {
		recs, err := rl.Records(context.Background(), checkpoint.RecordFilter{Kind: "paged", After: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if seen[r.Seq] {
				t.Fatalf("record %d paged twice", r.Seq)
			}
			seen[r.Seq] = true
			after = max(after, r.Seq)
		}
		return len(recs)
	}
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		page()
	}
	page() // what committed after the last look
	if werr != nil {
		t.Fatal(werr)
	}
	if all := listRecords(t, rl, checkpoint.RecordFilter{Kind: "paged"}); len(seen) != len(all) || len(all) != writers*each {
		var missed []int64
		for _, r := range all {
			if !seen[r.Seq] {
				missed = append(missed, r.Seq)
			}
		}
		t.Fatalf("a reader paging with After saw %d of %d records; it skipped %v", len(seen), len(all), missed)
	}
}

func testRecordsCanceledContext(t *testing.T, _ checkpoint.Store, rl checkpoint.RecordLog) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := rl.AppendRecords(ctx, checkpoint.Record{Kind: "audit", Data: json.RawMessage(`1`)}); !errors.Is(err, context.Canceled) {
		t.Errorf("AppendRecords with a canceled context: err = %v", err)
	}
	if _, err := rl.Records(ctx, checkpoint.RecordFilter{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Records with a canceled context: err = %v", err)
	}
	if got := listRecords(t, rl, checkpoint.RecordFilter{}); len(got) != 0 {
		t.Errorf("a canceled append stored %d records", len(got))
	}
}
