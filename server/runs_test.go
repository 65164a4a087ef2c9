package server

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/logging"
	lifecycle "github.com/capgraph/capgraph/server/internal/run"
	"github.com/capgraph/capgraph/server/internal/sse"
)

// logRuns is a manager of no server, to move the runs of the event log's
// tests through their lifecycle.
var logRuns = &runManager{s: &Server{cfg: Config{Logger: logging.Nop()}}}

// started returns r, a run made for a test, running.
func started(r *run) *run {
	logRuns.must(r, lifecycle.Accept)
	logRuns.must(r, lifecycle.Launch)
	return r
}

func TestRunEventLogIsBounded(t *testing.T) {
	r := started(&run{ID: "r", notify: make(chan struct{}), max: 3})
	for range 5 {
		r.append(agent.Event{Type: agent.EventToken, Text: "x"})
	}
	tests := []struct {
		after int
		want  []int
	}{
		{0, []int{3, 4, 5}}, // 1 and 2 were dropped
		{3, []int{4, 5}},
		{5, nil},
		{9, nil},
	}
	for _, tc := range tests {
		evs, _, finished := r.since(tc.after)
		var got []int
		for _, e := range evs {
			got = append(got, e.Seq)
		}
		if finished || len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
			t.Fatalf("after %d: %v, finished %v; want %v", tc.after, got, finished, tc.want)
		}
	}
	logRuns.finish(r, nil, endedHere)
	if _, _, finished := r.since(5); !finished {
		t.Fatal("not finished")
	}
}

// A run past its bound keeps its last events at a constant cost per event
// (the log was copied whole at every event beyond the bound, quadratic in a
// long streamed answer), and what a follower was handed stays as it was.
func TestRunEventLogPastItsBound(t *testing.T) {
	const bound = 64
	r := &run{ID: "r", notify: make(chan struct{}), max: bound}
	for range 3 * bound {
		r.append(agent.Event{Type: agent.EventToken, Text: "x"})
	}
	held, _, _ := r.since(0)
	heldSeqs := func() []int {
		var s []int
		for _, e := range held {
			s = append(s, e.Seq)
		}
		return s
	}
	before := heldSeqs()
	allocs := testing.AllocsPerRun(10*bound, func() {
		r.append(agent.Event{Type: agent.EventToken, Text: "x"})
	})
	// One allocation is the follower's wake-up channel; the array's copy
	// comes once per bound events.
	if allocs > 1.1 {
		t.Errorf("%.2f allocations per event past the bound; want the wake-up channel's and a share of one copy per %d events", allocs, bound)
	}
	if got := heldSeqs(); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("events handed out changed under later appends: %v, were %v", got, before)
	}
	evs, _, _ := r.since(0)
	last := r.lastSeq
	if len(evs) != bound || evs[0].Seq != last-bound+1 || evs[bound-1].Seq != last {
		t.Fatalf("kept %d events from %d to %d; want the last %d, %d to %d", len(evs), evs[0].Seq, evs[len(evs)-1].Seq, bound, last-bound+1, last)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq != evs[i-1].Seq+1 {
			t.Fatalf("gap in the kept log at %d: %d then %d", i, evs[i-1].Seq, evs[i].Seq)
		}
	}
}

// A run's log starts as long as the last finished run's, so a turn's log
// is not grown by doubling.
func TestRunEventLogStartsAtTheLastRunsSize(t *testing.T) {
	var hint atomic.Int64
	first := started(&run{ID: "a", notify: make(chan struct{}), max: 4096, sizeHint: &hint})
	for range 50 {
		first.append(agent.Event{Type: agent.EventToken})
	}
	logRuns.finish(first, nil, endedHere)
	next := &run{ID: "b", notify: make(chan struct{}), max: 4096, sizeHint: &hint}
	next.append(agent.Event{Type: agent.EventToken})
	if c := cap(next.events); c < 50 || c > 64 {
		t.Fatalf("the next run's log starts with room for %d events; want the last run's 50 and a little more", c)
	}
}

func BenchmarkChatCompletionStream(b *testing.B) {
	env := newTestEnv(b, nil)
	body, _ := json.Marshal(chatBody("capgraph", true, user("What is the beam current?")))
	b.ReportAllocs()
	for b.Loop() {
		resp, out := env.do(b, "POST", "/v1/chat/completions", keyAlice, body)
		if resp.StatusCode != 200 || !strings.Contains(string(out), "[DONE]") {
			b.Fatalf("%d %s", resp.StatusCode, out)
		}
	}
}

// A client that saw a run end can start the next run on the thread at
// once: the thread is free before the run shows as finished. The test holds
// the run manager's lock while the run ends, so a run that showed as
// finished before giving the thread up is caught in between.
func TestThreadIsFreeWhenTheRunShowsFinished(t *testing.T) {
	env := newTestEnv(t, nil)
	m := env.srv.runs
	c := caller{Principal: Principal{Name: "alice", Tenant: "lab"}}
	release := make(chan struct{})
	r, err := startFn(m, c, "quick", "internal-quick", func(ctx context.Context) iter.Seq2[agent.Event, error] {
		return func(yield func(agent.Event, error) bool) {
			<-release
			yield(agent.Event{Type: agent.EventDone, Status: agent.RunAnswered}, nil)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	sawEnd := env.srv.follow(ctx, r, 0, nil, func(agent.Event) {}, nil)
	cancel()
	_, busy := m.byThread["internal-quick"]
	m.mu.Unlock()
	if sawEnd && busy {
		t.Fatal("the run shows finished but still holds the thread")
	}
	if !env.srv.follow(context.Background(), r, 0, nil, func(agent.Event) {}, nil) {
		t.Fatal("follow did not see the end")
	}
	if _, busy := m.activeOn("internal-quick"); busy {
		t.Fatal("a finished run still holds the thread")
	}
}

// startFn starts a run of fn directly on the run manager (no record).
func startFn(m *runManager, c caller, clientThread, thread string, fn func(ctx context.Context) iter.Seq2[agent.Event, error]) (*run, error) {
	r, err := m.reserve(runSpec{c: c, clientThread: clientThread, thread: thread, id: "run-" + clientThread})
	if err != nil {
		return nil, err
	}
	m.launch(r, fn)
	return r, nil
}

// flushCounter is a ResponseWriter that counts the flushes reaching the
// connection.
type flushCounter struct {
	*httptest.ResponseRecorder
	flushes int
}

func (f *flushCounter) Flush() { f.flushes++ }

// The frames of the events a follower finds waiting are written in one
// flush, not one per event (a write system call each): a run of 50 token
// events, followed after it ended, reaches the client in a handful of
// flushes, every frame in order.
func TestFollowFlushesTheEventsAtHandTogether(t *testing.T) {
	env := newTestEnv(t, nil)
	m := env.srv.runs
	c := caller{Principal: Principal{Name: "alice", Tenant: "lab"}}
	r, err := startFn(m, c, "tokens", "internal-tokens", func(ctx context.Context) iter.Seq2[agent.Event, error] {
		return func(yield func(agent.Event, error) bool) {
			for i := range 50 {
				if !yield(agent.Event{Type: agent.EventToken, Text: fmt.Sprintf("t%d ", i)}, nil) {
					return
				}
			}
			yield(agent.Event{Type: agent.EventDone, Status: agent.RunAnswered}, nil)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !env.srv.follow(context.Background(), r, 0, nil, func(agent.Event) {}, nil) {
		t.Fatal("the run did not end")
	}
	w := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	sse := sse.Start(w, time.Now, 0)
	var n int
	if !env.srv.follow(context.Background(), r, 0, sse, func(ev agent.Event) {
		n++
		sse.Frame(strconv.Itoa(ev.Seq), string(ev.Type), ev)
	}, nil) {
		t.Fatal("follow did not see the end")
	}
	body := w.Body.String()
	if n != 51 || strings.Count(body, "event: token") != 50 || !strings.Contains(body, "t0 ") || strings.Index(body, `"t49 "`) < strings.Index(body, `"t0 "`) {
		t.Fatalf("%d events; body has %d token frames", n, strings.Count(body, "event: token"))
	}
	if w.flushes > 3 {
		t.Errorf("%d flushes for 51 frames found waiting; want them flushed together (the headers, the batch)", w.flushes)
	}
}
