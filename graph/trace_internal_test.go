package graph

import (
	"cmp"
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

type trState struct {
	N   int      `json:"n"`
	Log []string `json:"log"`
}

// traceGraph emits every kind of event but wait: one-node steps, two
// concurrent branches (their events go through the branch buffer), a custom
// event with a payload, a failed node and a route that is new each time.
func traceGraph(t *testing.T) *Compiled[trState, trState] {
	t.Helper()
	g := New(Config[trState, trState]{Store: memory.New(), Apply: func(s, u trState) (trState, error) {
		s.N += u.N
		s.Log = append(s.Log[:len(s.Log):len(s.Log)], u.Log...)
		return s, nil
	}})
	g.AddNode("a", func(ctx context.Context, s trState) (trState, error) {
		Emit(ctx, map[string]int{"n": s.N})
		return trState{N: 1, Log: []string{"a"}}, nil
	})
	g.AddConditionalEdges("a", func(s trState) Route {
		switch {
		case s.N < 3:
			return Route{To: []string{"a"}} // a new slice every time
		case s.N == 3:
			return Route{To: []string{"b", "c"}}
		}
		return Route{To: []string{"boom"}}
	}, "a", "b", "c", "boom")
	g.AddNode("b", func(context.Context, trState) (trState, error) { return trState{N: 1, Log: []string{"b"}}, nil })
	g.AddNode("c", func(context.Context, trState) (trState, error) { return trState{N: 1, Log: []string{"c"}}, nil })
	g.AddEdge("b", "a").AddEdge("c", End)
	g.AddNode("boom", func(context.Context, trState) (trState, error) { return trState{}, errors.New("boom") })
	g.AddEdge("boom", End)
	c, err := g.SetEntry("a").Compile()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTraceKeepsEveryEvent checks that a Trace gives back exactly the events
// it was given (times compared with ==, so monotonic readings and locations
// too), whether they fit a record or not, and that Run's trace is what a
// Stream of the same run yields.
func TestTraceKeepsEveryEvent(t *testing.T) {
	c := traceGraph(t)
	var (
		streamed []Event
		tr       = &Trace{nodes: c.order}
	)
	_, err := c.exec(context.Background(), "t1", start[trState]{fresh: true}, func(e Event) bool {
		streamed = append(streamed, e)
		tr.add(&e, -1)
		return true
	}, nil)
	if err == nil || len(streamed) < 20 {
		t.Fatalf("run: %v, %d events", err, len(streamed))
	}
	// Events a record cannot hold: hand-made ones beside the run's.
	at := time.Now()
	odd := []Event{
		{Kind: EventNodeStart, Thread: "other", RunID: streamed[0].RunID, Node: "a", Time: at},
		{Kind: EventRoute, Thread: "t1", RunID: streamed[0].RunID, Node: "unknown", To: []string{}, Time: at.Add(time.Hour)},
		{Kind: EventCheckpoint, Thread: "t1", RunID: streamed[0].RunID, Step: 1 << 40, Checkpoint: uuid.New(), Time: at.UTC()},
		{Kind: EventRunStart, Thread: "t1", RunID: streamed[0].RunID, To: []string{"a"}, Checkpoint: uuid.New(), Time: at.In(time.FixedZone("x", 3600))},
		{Kind: EventWait, Thread: "t1", RunID: streamed[0].RunID, NotBefore: at, To: []string{"a"}},
		{Kind: EventNodeEnd, Thread: "t1", RunID: uuid.New(), Node: "b", Attempt: -1, Duration: -5},
	}
	// And one that fits a record, with an empty destination list (not nil)
	// and a time without a monotonic reading.
	odd = append(odd, Event{Kind: EventRoute, Thread: "t1", RunID: streamed[0].RunID, Node: "a", To: []string{}, Time: at.Round(0)})
	for i := range odd {
		tr.add(&odd[i], 0)
	}
	want := append(streamed, odd...)
	got := tr.Events()
	if len(got) != len(want) || tr.Len() != len(want) {
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) || got[i].Time != want[i].Time {
			t.Fatalf("event %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	whole := len(odd) - 1
	for _, e := range streamed {
		if e.Payload != nil || e.Err != nil {
			whole++
		}
	}
	if n := len(tr.full); n != whole {
		t.Errorf("%d events kept whole, want %d (the hand-made ones, custom events and failures): the run's ordinary events fit records", n, whole)
	}
	for i, e := range tr.All() {
		if !reflect.DeepEqual(e, want[i]) {
			t.Fatalf("All: event %d differs", i)
		}
		if i == 3 {
			break
		}
	}

	// Run's trace against a Stream of the same graph: the same events but
	// for the run's ids and times.
	res, err := c.Run(context.Background(), "t2", trState{})
	if err == nil {
		t.Fatal("run did not fail")
	}
	norm := func(evs []Event) []Event {
		out := make([]Event, len(evs))
		for i, e := range evs {
			e.Thread, e.RunID, e.Checkpoint, e.Time, e.Duration, e.Err = "", uuid.Nil, uuid.Nil, time.Time{}, 0, nil
			out[i] = e
		}
		// Concurrent branches' events interleave in any order within a step.
		slices.SortStableFunc(out, func(x, y Event) int {
			return cmp.Or(cmp.Compare(x.Step, y.Step), cmp.Compare(x.Node, y.Node), cmp.Compare(x.Kind, y.Kind))
		})
		return out
	}
	if a, b := norm(res.Trace.Events()), norm(streamed); !reflect.DeepEqual(a, b) {
		t.Fatalf("Run's trace differs from the stream:\n%+v\n%+v", a, b)
	}
	if (Trace{}).Len() != 0 || (Trace{}).Events() != nil {
		t.Fatal("the zero Trace is not empty")
	}
}
