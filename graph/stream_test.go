package graph_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/capgraph/capgraph/graph"
)

func TestStreamBreakCancelsTheRun(t *testing.T) {
	cnt := newCounter()
	var bErr error
	c := chain(cnt, nil, func(ctx context.Context, s tstate) (tupd, error) {
		cnt.inc("b")
		if cnt.get("b") == 1 {
			<-ctx.Done() // released only by the consumer's break
			bErr = ctx.Err()
			return tupd{}, ctx.Err()
		}
		return tupd{Log: "b", N: 1}, nil
	})
	var got []string
	for ev, err := range c.Stream(context.Background(), "t", tstate{}) {
		if err != nil {
			t.Fatalf("stream error: %v", err)
		}
		got = append(got, kinds([]graph.Event{ev})...)
		if ev.Kind == graph.EventNodeStart && ev.Node == "b" {
			break
		}
	}
	if !errors.Is(bErr, context.Canceled) {
		t.Fatalf("b's ctx after the break: %v", bErr)
	}
	if want := []string{"run_start", "checkpoint", "node_start:a", "node_end:a", "route:a", "checkpoint", "node_start:b"}; !slices.Equal(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	if st := graph.StatusOf(latest(t, c, "t")); st != graph.StatusCanceled {
		t.Fatalf("stored status %s", st)
	}
	// The thread is free again and the run resumable.
	res, err := c.Resume(context.Background(), "t", nil)
	if err != nil || !slices.Equal(res.State.Log, []string{"a", "b", "c"}) || cnt.get("a") != 1 {
		t.Fatalf("resume: %v, %+v, executions %v", err, res, cnt.n)
	}
}

func TestStreamBreakBetweenSteps(t *testing.T) {
	cnt := newCounter()
	c := chain(cnt, nil, logNode(cnt, "b"))
	for ev := range c.Stream(context.Background(), "t", tstate{}) {
		if ev.Kind == graph.EventCheckpoint && ev.Step == 1 {
			break
		}
	}
	if cnt.get("a") != 1 || cnt.get("b") != 0 {
		t.Fatalf("executions after a break between steps: %v", cnt.n)
	}
	tu := latest(t, c, "t")
	if tu.Checkpoint.Step != 1 || graph.StatusOf(tu) != graph.StatusCanceled {
		t.Fatalf("stored %+v", tu.Checkpoint)
	}
}

func TestStreamEndsWithTheError(t *testing.T) {
	cnt := newCounter()
	c := chain(cnt, nil, func(context.Context, tstate) (tupd, error) { return tupd{}, errFlaky })
	var (
		last    graph.Event
		lastErr error
		n       int
	)
	for ev, err := range c.Stream(context.Background(), "t", tstate{}) {
		if lastErr != nil {
			t.Fatal("an event after the error pair")
		}
		last, lastErr = ev, err
		n++
	}
	if !errors.Is(lastErr, errFlaky) || last.Kind != graph.EventRunEnd || !errors.Is(last.Err, errFlaky) {
		t.Fatalf("last pair %+v, %v", last, lastErr)
	}
	if last.RunID == [16]byte{} || last.Step != 1 || last.Thread != "t" || last.Time.IsZero() {
		t.Fatalf("run_end event lacks run data: %+v", last)
	}
	// A stream that cannot start yields one pair with the error.
	for ev, err := range c.Stream(context.Background(), "", tstate{}) {
		if !errors.Is(err, graph.ErrNoThread) || ev.Kind != graph.EventRunEnd {
			t.Fatalf("stream on an empty thread: %+v, %v", ev, err)
		}
	}
	for ev, err := range c.ResumeStream(context.Background(), "t", func() {}) {
		if err == nil || ev.Kind != graph.EventRunEnd {
			t.Fatalf("resume stream with a bad value: %+v, %v", ev, err)
		}
	}
}

func TestResumeStreamAnswersAnInterrupt(t *testing.T) {
	cnt := newCounter()
	c := chain(cnt, nil, asker(cnt, "b", "sure?"))
	if _, err := c.Run(context.Background(), "t", tstate{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for ev, err := range c.ResumeStream(context.Background(), "t", "yes") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, kinds([]graph.Event{ev})...)
	}
	want := []string{"run_start", "checkpoint", "node_start:b", "node_end:b", "route:b", "checkpoint",
		"node_start:c", "node_end:c", "checkpoint", "run_end"}
	if !slices.Equal(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	s, tu, err := c.State(context.Background(), "t")
	if err != nil || s.Answer != "yes" || graph.StatusOf(tu) != graph.StatusDone {
		t.Fatalf("State: %+v, %v", s, err)
	}
}

func TestEmitCustomEvents(t *testing.T) {
	g := newGraph(nil)
	g.AddNode("hub", func(ctx context.Context, s tstate) (tupd, error) {
		graph.Emit(ctx, "from hub")
		return tupd{}, nil
	})
	names := []string{"p", "q", "r", "s"}
	g.AddConditionalEdges("hub", func(tstate) graph.Route { return graph.Route{To: names} }, names...)
	for _, n := range names {
		g.AddNode(n, func(ctx context.Context, s tstate) (tupd, error) {
			for range 20 {
				graph.Emit(ctx, n) // concurrently: the race detector checks the engine
			}
			return tupd{Log: n}, nil
		}).AddEdge(n, graph.End)
	}
	c := compile(t, g.SetEntry("hub"))
	res, err := c.Run(context.Background(), "t", tstate{})
	if err != nil {
		t.Fatal(err)
	}
	custom := eventsOf(res.Trace.Events(), graph.EventCustom)
	if len(custom) != 1+20*len(names) {
		t.Fatalf("%d custom events", len(custom))
	}
	if custom[0].Node != "hub" || custom[0].Payload != "from hub" || custom[0].Step != 1 {
		t.Fatalf("hub's event %+v", custom[0])
	}
	for _, e := range custom[1:] {
		if e.Node != e.Payload || e.Step != 2 || e.RunID != res.RunID || e.Thread != "t" || e.Time.IsZero() {
			t.Fatalf("branch event %+v", e)
		}
	}
	graph.Emit(context.Background(), "outside a run is a no-op")
}

// The run_end of a finished run carries its final state, the state of its
// last checkpoint; a failed run's does not.
func TestStreamRunEndCarriesTheFinalState(t *testing.T) {
	cnt := newCounter()
	c := chain(cnt, nil, logNode(cnt, "b"))
	var end graph.Event
	for ev, err := range c.Stream(context.Background(), "t", tstate{}) {
		if err != nil {
			t.Fatal(err)
		}
		end = ev
	}
	stored, _, err := c.State(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := end.Payload.(tstate); end.Kind != graph.EventRunEnd || !ok || !slices.Equal(s.Log, stored.Log) || s.N != stored.N || s.N != 3 {
		t.Fatalf("last event %+v, want run_end with the stored state %+v", end, stored)
	}

	failing := chain(newCounter(), nil, func(context.Context, tstate) (tupd, error) { return tupd{}, errors.New("no") })
	for ev, err := range failing.Stream(context.Background(), "t", tstate{}) {
		if ev.Kind == graph.EventRunEnd && (err == nil || ev.Payload != nil) {
			t.Fatalf("failed run_end %+v, %v: want the error and no state", ev, err)
		}
	}
}
