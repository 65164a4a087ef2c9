package graph_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// fanOut builds hub → (c, a, b) → hub → End. The branches finish in an order
// that changes from run to run (they sleep different, random-ish times), so
// the test sees whether updates are applied in route order regardless.
func fanOut(cnt *counter, store checkpoint.Store, delay func(name string) time.Duration) *graph.Graph[tstate, tupd] {
	g := newGraph(store)
	g.AddNode("hub", logNode(cnt, "hub"))
	for _, n := range []string{"a", "b", "c"} {
		g.AddNode(n, func(ctx context.Context, s tstate) (tupd, error) {
			cnt.inc(n)
			time.Sleep(delay(n))
			return tupd{Log: n, N: 1}, nil
		})
		g.AddEdge(n, "hub")
	}
	fan := []string{"c", "a", "b"}
	g.AddConditionalEdges("hub", func(s tstate) graph.Route {
		if s.N == 1 {
			return graph.Route{To: fan}
		}
		return graph.Route{To: []string{graph.End}}
	}, "a", "b", "c")
	return g.SetEntry("hub")
}

func TestFanOutMergesInRouteOrder(t *testing.T) {
	want := []string{"hub", "c", "a", "b", "hub"}
	for i := range 40 {
		cnt := newCounter()
		c := compile(t, fanOut(cnt, nil, func(n string) time.Duration {
			// Vary which branch finishes first.
			return time.Duration((int(n[0])+i)%3) * 50 * time.Microsecond
		}))
		res, err := c.Run(context.Background(), "t", tstate{})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if res.Status != graph.StatusDone || res.State.N != 5 || !slices.Equal(res.State.Log, want) {
			t.Fatalf("run %d: status %s, state %+v; want log %v", i, res.Status, res.State, want)
		}
		if res.Steps != 3 {
			t.Fatalf("run %d: %d steps, want 3", i, res.Steps)
		}
		// The hub's route event names the branches in route order.
		routes := eventsOf(res.Trace.Events(), graph.EventRoute)
		if len(routes) != 5 || routes[0].Node != "hub" || !slices.Equal(routes[0].To, []string{"c", "a", "b"}) {
			t.Fatalf("run %d: route events %+v", i, routes)
		}
		for _, r := range routes[1:4] {
			if r.Step != 2 || !slices.Equal(r.To, []string{"hub"}) {
				t.Fatalf("run %d: branch route %+v", i, r)
			}
		}
		// Each branch starts and ends once, in step 2.
		for _, n := range []string{"a", "b", "c"} {
			if cnt.get(n) != 1 {
				t.Fatalf("run %d: %s ran %d times", i, n, cnt.get(n))
			}
		}
	}
}

func TestConcurrencyLimit(t *testing.T) {
	for _, limit := range []int{1, 2, 3} {
		synctest.Test(t, func(t *testing.T) {
			var cur, peak atomic.Int32
			names := []string{"w1", "w2", "w3", "w4", "w5", "w6"}
			g := graph.New(graph.Config[tstate, tupd]{Apply: tapply, MaxConcurrency: limit})
			g.AddNode("start", nop)
			g.AddConditionalEdges("start", func(tstate) graph.Route { return graph.Route{To: names} }, names...)
			for _, n := range names {
				g.AddNode(n, func(ctx context.Context, s tstate) (tupd, error) {
					now := cur.Add(1)
					for {
						p := peak.Load()
						if now <= p || peak.CompareAndSwap(p, now) {
							break
						}
					}
					time.Sleep(time.Second) // fake time: every admitted branch is in here together
					cur.Add(-1)
					return tupd{Log: n}, nil
				})
				g.AddEdge(n, graph.End)
			}
			c := compile(t, g.SetEntry("start"))
			t0 := time.Now()
			res, err := c.Run(context.Background(), "t", tstate{})
			if err != nil {
				t.Fatal(err)
			}
			if int(peak.Load()) != limit {
				t.Errorf("limit %d: peak concurrency %d", limit, peak.Load())
			}
			if waves := (len(names) + limit - 1) / limit; time.Since(t0) != time.Duration(waves)*time.Second {
				t.Errorf("limit %d: took %v, want %d waves of 1s", limit, time.Since(t0), waves)
			}
			if !slices.Equal(res.State.Log, names) {
				t.Errorf("limit %d: log %v", limit, res.State.Log)
			}
		})
	}
}

func TestInvalidTransition(t *testing.T) {
	for _, to := range []string{"ghost", "b", ""} {
		g := newGraph(nil).AddNode("a", nop).AddNode("b", nop).AddNode("c", nop).
			AddConditionalEdges("a", func(tstate) graph.Route { return graph.Route{To: []string{"c", to}} }, "c").
			AddEdge("c", "b").AddEdge("b", graph.End).SetEntry("a")
		c := compile(t, g)
		res, err := c.Run(context.Background(), "t", tstate{})
		var it *graph.InvalidTransitionError
		if !errors.As(err, &it) || !errors.Is(err, graph.ErrInvalidTransition) {
			t.Fatalf("to %q: error %v, want *InvalidTransitionError", to, err)
		}
		if it.From != "a" || it.To != to {
			t.Fatalf("to %q: error names %q -> %q", to, it.From, it.To)
		}
		if res.Status != graph.StatusFailed || res.Steps != 0 {
			t.Fatalf("to %q: status %s, steps %d", to, res.Status, res.Steps)
		}
		if end := res.Trace.At(res.Trace.Len() - 1); end.Kind != graph.EventRunEnd || !errors.Is(end.Err, graph.ErrInvalidTransition) {
			t.Fatalf("to %q: last event %+v", to, end)
		}
	}
}

func TestStepLimit(t *testing.T) {
	cnt := newCounter()
	g := graph.New(graph.Config[tstate, tupd]{Apply: tapply, MaxSteps: 5})
	g.AddNode("loop", logNode(cnt, "loop")).AddEdge("loop", "loop").SetEntry("loop")
	c := compile(t, g)
	res, err := c.Run(context.Background(), "t", tstate{})
	var sl *graph.StepLimitError
	if !errors.As(err, &sl) || !errors.Is(err, graph.ErrStepLimit) {
		t.Fatalf("error %v, want *StepLimitError", err)
	}
	if sl.Limit != 5 || !slices.Equal(sl.Next, []string{"loop"}) {
		t.Fatalf("error %+v", sl)
	}
	if cnt.get("loop") != 5 || res.Steps != 5 || res.State.N != 5 || res.Status != graph.StatusFailed {
		t.Fatalf("ran %d times, result %+v", cnt.get("loop"), res)
	}
	if st := graph.StatusOf(latest(t, c, "t")); st != graph.StatusFailed {
		t.Fatalf("stored status %s", st)
	}
	// Attempt counts the node's starts within the call.
	var attempts []int
	for _, e := range eventsOf(res.Trace.Events(), graph.EventNodeEnd) {
		attempts = append(attempts, e.Attempt)
	}
	if !slices.Equal(attempts, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("attempts %v", attempts)
	}
}

func TestPanicInNode(t *testing.T) {
	for _, concurrent := range []bool{false, true} {
		g := newGraph(nil)
		g.AddNode("start", nop)
		g.AddNode("ok", nop).AddEdge("ok", graph.End)
		g.AddNode("boom", func(context.Context, tstate) (tupd, error) {
			var m map[string]int
			//lint:ignore SA5000 the test needs a real runtime panic
			m["x"] = 1 // a real runtime panic: assignment to a nil map
			return tupd{}, nil
		}).AddEdge("boom", graph.End)
		to := []string{"boom"}
		if concurrent {
			to = []string{"ok", "boom"}
		}
		g.AddConditionalEdges("start", func(tstate) graph.Route { return graph.Route{To: to} }, "ok", "boom")
		c := compile(t, g.SetEntry("start"))
		res, err := c.Run(context.Background(), "t", tstate{})
		var pe *graph.PanicError
		if !errors.As(err, &pe) || !errors.Is(err, graph.ErrPanic) {
			t.Fatalf("concurrent=%v: error %v, want *PanicError", concurrent, err)
		}
		if pe.Node != "boom" || !strings.Contains(pe.Stack, "run_test.go") || !strings.Contains(pe.Error(), "nil map") {
			t.Fatalf("concurrent=%v: panic error %q node %q stack:\n%s", concurrent, pe, pe.Node, pe.Stack)
		}
		if res.Status != graph.StatusFailed {
			t.Fatalf("status %s", res.Status)
		}
		if st := graph.StatusOf(latest(t, c, "t")); st != graph.StatusFailed {
			t.Fatalf("concurrent=%v: stored status %s", concurrent, st)
		}
		ends := eventsOf(res.Trace.Events(), graph.EventNodeEnd)
		if !slices.ContainsFunc(ends, func(e graph.Event) bool { return e.Node == "boom" && errors.As(e.Err, &pe) }) {
			t.Fatalf("no node_end with the panic: %v", kinds(res.Trace.Events()))
		}
	}
}

// tick is a clock that advances one millisecond per reading, so durations in
// events are exact.
type tick struct {
	mu sync.Mutex
	t  time.Time
}

func (c *tick) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

var errFlaky = errors.New("flaky")

func TestFailedNodeThenResumeRetriesOnlyIt(t *testing.T) {
	cnt := newCounter()
	clock := &tick{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	store := memory.New()
	g := graph.New(graph.Config[tstate, tupd]{Apply: tapply, Store: store, Now: clock.now})
	g.AddNode("a", logNode(cnt, "a")).AddEdge("a", "b")
	g.AddNode("b", func(ctx context.Context, s tstate) (tupd, error) {
		cnt.inc("b")
		if cnt.get("b") == 1 {
			return tupd{}, errFlaky
		}
		return tupd{Log: "b", N: 1}, nil
	}).AddEdge("b", "c")
	g.AddNode("c", logNode(cnt, "c")).SetTerminal("c")
	c := compile(t, g.SetEntry("a"))

	res, err := c.Run(context.Background(), "t", tstate{})
	var ne *graph.NodeError
	if !errors.As(err, &ne) || !errors.Is(err, graph.ErrNodeFailed) || !errors.Is(err, errFlaky) {
		t.Fatalf("error %v, want *NodeError wrapping errFlaky", err)
	}
	if ne.Node != "b" || ne.Step != 2 || ne.Attempt != 1 {
		t.Fatalf("node error %+v", ne)
	}
	if res.Status != graph.StatusFailed || res.Steps != 1 || !slices.Equal(res.State.Log, []string{"a"}) {
		t.Fatalf("result %+v", res)
	}
	tu := latest(t, c, "t")
	if graph.StatusOf(tu) != graph.StatusFailed || len(tu.Writes) != 1 || tu.Writes[0].Kind != checkpoint.WriteError || tu.Writes[0].Task != "b" {
		t.Fatalf("stored tuple %+v", tu)
	}
	// The trace shows which node, which attempt, what error and how long.
	want := []string{"run_start", "checkpoint", "node_start:a", "node_end:a", "route:a", "checkpoint",
		"node_start:b", "node_end:b", "run_end"}
	if got := kinds(res.Trace.Events()); !slices.Equal(got, want) {
		t.Fatalf("trace\n got %v\nwant %v", got, want)
	}
	end := res.Trace.At(7)
	if end.Attempt != 1 || end.Step != 2 || end.Duration != time.Millisecond || !errors.Is(end.Err, errFlaky) {
		t.Fatalf("node_end of b: %+v", end)
	}
	for _, e := range res.Trace.All() {
		if e.Thread != "t" || e.RunID != res.RunID || e.Time.IsZero() {
			t.Fatalf("event without thread, run id or time: %+v", e)
		}
	}

	res, err = c.Resume(context.Background(), "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cnt.get("a") != 1 || cnt.get("b") != 2 || cnt.get("c") != 1 {
		t.Fatalf("executions a=%d b=%d c=%d, want 1 2 1", cnt.get("a"), cnt.get("b"), cnt.get("c"))
	}
	if res.Status != graph.StatusDone || !slices.Equal(res.State.Log, []string{"a", "b", "c"}) || res.Steps != 3 {
		t.Fatalf("resumed result %+v", res)
	}
	if got := kinds(res.Trace.Events()); !slices.Equal(got, []string{"run_start", "node_start:b", "node_end:b", "route:b",
		"checkpoint", "node_start:c", "node_end:c", "checkpoint", "run_end"}) {
		t.Fatalf("resumed trace %v", got)
	}
	if graph.StatusOf(latest(t, c, "t")) != graph.StatusDone {
		t.Fatal("thread not done")
	}
	if _, err := c.Resume(context.Background(), "t", nil); !errors.Is(err, graph.ErrNoRun) {
		t.Fatalf("resume of a finished thread: %v", err)
	}
}

func TestApplyErrorFailsTheStep(t *testing.T) {
	errBad := errors.New("bad update")
	g := graph.New(graph.Config[tstate, tupd]{Apply: func(s tstate, u tupd) (tstate, error) {
		if u.Log == "b" {
			return s, errBad
		}
		return tapply(s, u)
	}})
	cnt := newCounter()
	g.AddNode("a", logNode(cnt, "a")).AddEdge("a", "b").AddNode("b", logNode(cnt, "b")).SetTerminal("b")
	c := compile(t, g.SetEntry("a"))
	_, err := c.Run(context.Background(), "t", tstate{})
	var ne *graph.NodeError
	if !errors.As(err, &ne) || ne.Node != "b" || ne.Step != 2 || !errors.Is(err, errBad) {
		t.Fatalf("error %v", err)
	}
}

func TestBadInput(t *testing.T) {
	c := compile(t, newGraph(nil).AddNode("a", nop).AddEdge("a", graph.End).SetEntry("a"))
	ctx := context.Background()
	if _, err := c.Run(ctx, "", tstate{}); !errors.Is(err, graph.ErrNoThread) {
		t.Errorf("Run with empty thread: %v", err)
	}
	if _, err := c.Resume(ctx, "none", nil); !errors.Is(err, graph.ErrNoRun) {
		t.Errorf("Resume of unknown thread: %v", err)
	}
	if _, err := c.Resume(ctx, "x", func() {}); err == nil || !strings.Contains(err.Error(), "resume value") {
		t.Errorf("Resume with unencodable value: %v", err)
	}
	if _, err := c.Run(ctx, "x", tstate{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resume(ctx, "x", "answer"); !errors.Is(err, graph.ErrNotInterrupted) {
		t.Errorf("Resume with a value of a finished thread: %v", err)
	}
}

func TestThreadBusy(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	g := newGraph(nil).AddNode("a", func(_ context.Context, s tstate) (tupd, error) {
		if s.Answer == "block" {
			close(entered)
			<-release
		}
		return tupd{}, nil
	}).AddEdge("a", graph.End).SetEntry("a")
	c := compile(t, g)
	done := make(chan error)
	go func() {
		_, err := c.Run(context.Background(), "t", tstate{Answer: "block"})
		done <- err
	}()
	<-entered
	if _, err := c.Run(context.Background(), "t", tstate{}); !errors.Is(err, graph.ErrThreadBusy) {
		t.Errorf("second run on a busy thread: %v", err)
	}
	if _, err := c.Resume(context.Background(), "t", nil); !errors.Is(err, graph.ErrThreadBusy) {
		t.Errorf("resume on a busy thread: %v", err)
	}
	if _, err := c.Run(context.Background(), "other", tstate{}); err != nil {
		t.Errorf("another thread is not blocked: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(context.Background(), "t", tstate{}); err != nil {
		t.Errorf("run after the first finished: %v", err)
	}
}

func TestPanicInApplyRouteOrConsumer(t *testing.T) {
	t.Run("apply", func(t *testing.T) {
		g := graph.New(graph.Config[tstate, tupd]{Apply: func(s tstate, u tupd) (tstate, error) {
			if u.Log == "b" {
				panic("apply broke")
			}
			return tapply(s, u)
		}})
		cnt := newCounter()
		g.AddNode("a", logNode(cnt, "a")).AddEdge("a", "b").AddNode("b", logNode(cnt, "b")).SetTerminal("b")
		res, err := compile(t, g.SetEntry("a")).Run(context.Background(), "t", tstate{})
		var pe *graph.PanicError
		if !errors.As(err, &pe) || pe.Node != "b" || !strings.Contains(pe.Error(), "apply broke") || res.Status != graph.StatusFailed {
			t.Fatalf("run: %v, %+v", err, res)
		}
	})
	t.Run("route", func(t *testing.T) {
		cnt := newCounter()
		g := newGraph(nil).AddNode("a", logNode(cnt, "a")).
			AddConditionalEdges("a", func(s tstate) graph.Route { return graph.Route{To: []string{s.Log[5]}} }, "a")
		res, err := compile(t, g.SetEntry("a")).Run(context.Background(), "t", tstate{})
		var pe *graph.PanicError
		if !errors.As(err, &pe) || pe.Node != "a" || !strings.Contains(pe.Error(), "in route") || pe.Stack == "" || res.Status != graph.StatusFailed {
			t.Fatalf("run: %v, %+v", err, res)
		}
	})
	t.Run("goexit in a branch", func(t *testing.T) {
		cnt := newCounter()
		c := spokes(cnt, nil, func(context.Context, tstate) (tupd, error) {
			runtime.Goexit()
			return tupd{}, nil
		})
		_, err := c.Run(context.Background(), "t", tstate{})
		var ne *graph.NodeError
		if !errors.As(err, &ne) || ne.Node != "y" {
			t.Fatalf("run: %v", err)
		}
	})
	t.Run("consumer", func(t *testing.T) {
		cnt := newCounter()
		c := chain(cnt, nil, logNode(cnt, "b"))
		defer func() {
			if v := recover(); v != "consumer broke" {
				t.Fatalf("recovered %v, want the consumer's own panic", v)
			}
			// The thread is not left busy.
			if _, err := c.Resume(context.Background(), "t", nil); err != nil {
				t.Fatalf("resume after the consumer's panic: %v", err)
			}
		}()
		for ev := range c.Stream(context.Background(), "t", tstate{}) {
			if ev.Kind == graph.EventNodeEnd {
				panic("consumer broke")
			}
		}
		t.Fatal("the loop ended without the panic")
	})
}
