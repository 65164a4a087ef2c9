package graph_test

import (
	"context"
	"testing"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// benchState is small on purpose: the benchmarks measure the engine, and JSON
// encoding of the state (one allocation for the output) is the part that
// grows with the application's state.
type benchState struct {
	N int `json:"n"`
}

func benchApply(s benchState, u int) (benchState, error) {
	s.N += u
	return s, nil
}

func one(context.Context, benchState) (int, error) { return 1, nil }

// BenchmarkTransition measures one node→node transition: the node call, the
// update, the route, the state encoding, the checkpoint Put on the memory
// store and the events. One op is one step of a long run consumed as a
// stream.
//
// "memory" trims the thread every 1024 steps (DeleteThread from the consumer;
// the run goes on), so the figure is the cost of a transition rather than of
// one in-memory slice growing to millions of checkpoints; "memory-growing"
// keeps every checkpoint, as a thread would that is never trimmed.
func BenchmarkTransition(b *testing.B) {
	for _, trim := range []bool{true, false} {
		name := "memory"
		if !trim {
			name = "memory-growing"
		}
		b.Run(name, func(b *testing.B) { benchTransition(b, trim) })
	}
}

func benchTransition(b *testing.B, trim bool) {
	n := b.N
	toA, toEnd := []string{"a"}, []string{graph.End}
	store := memory.New()
	g := graph.New(graph.Config[benchState, int]{Apply: benchApply, Store: store, MaxSteps: n + 1})
	g.AddNode("a", one)
	g.AddConditionalEdges("a", func(s benchState) graph.Route {
		if s.N >= n {
			return graph.Route{To: toEnd}
		}
		return graph.Route{To: toA}
	}, "a")
	g.SetEntry("a")
	c, err := g.Compile()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	steps := 0
	for ev, err := range c.Stream(ctx, "bench", benchState{}) {
		if err != nil {
			b.Fatal(err)
		}
		if ev.Kind == graph.EventCheckpoint {
			steps++
			if trim && steps%1024 == 0 {
				if err := store.DeleteThread(ctx, "bench"); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.StopTimer()
	if steps != n+1 {
		b.Fatalf("%d checkpoints for %d steps", steps, n)
	}
}

// BenchmarkRun8Nodes measures a whole run of a hub-and-spoke graph: a router
// node with a conditional edge to 7 workers, each returning to the router,
// visited one after the other (15 steps). One op is one Run, trace included,
// followed by DeleteThread, so the memory store does not grow across ops
// (a thread of 10⁵ runs would measure the store's slice growth instead).
func BenchmarkRun8Nodes(b *testing.B) {
	workers := []string{"w1", "w2", "w3", "w4", "w5", "w6", "w7"}
	routes := make([][]string, len(workers))
	for i, w := range workers {
		routes[i] = []string{w}
	}
	toEnd := []string{graph.End}
	store := memory.New()
	g := graph.New(graph.Config[benchState, int]{Apply: benchApply, Store: store})
	g.AddNode("router", func(context.Context, benchState) (int, error) { return 0, nil })
	g.AddConditionalEdges("router", func(s benchState) graph.Route {
		if s.N >= len(workers) {
			return graph.Route{To: toEnd}
		}
		return graph.Route{To: routes[s.N]}
	}, workers...)
	for _, w := range workers {
		g.AddNode(w, one)
		g.AddEdge(w, "router")
	}
	g.SetEntry("router")
	c, err := g.Compile()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := c.Run(ctx, "bench", benchState{})
		if err != nil || res.State.N != len(workers) || res.Steps != 2*len(workers)+1 {
			b.Fatalf("run: %v, %+v", err, res.State)
		}
		if err := store.DeleteThread(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFanOut7 measures a concurrent step: a router sends the state to 7
// workers at once, whose updates are merged in route order, then ends (3
// steps). One op is one Run plus DeleteThread, as in BenchmarkRun8Nodes.
func BenchmarkFanOut7(b *testing.B) {
	workers := []string{"w1", "w2", "w3", "w4", "w5", "w6", "w7"}
	toEnd := []string{graph.End}
	store := memory.New()
	g := graph.New(graph.Config[benchState, int]{Apply: benchApply, Store: store})
	g.AddNode("router", func(context.Context, benchState) (int, error) { return 0, nil })
	g.AddConditionalEdges("router", func(s benchState) graph.Route {
		if s.N > 0 {
			return graph.Route{To: toEnd}
		}
		return graph.Route{To: workers}
	}, workers...)
	for _, w := range workers {
		g.AddNode(w, one)
		g.AddEdge(w, "router")
	}
	c, err := g.SetEntry("router").Compile()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := c.Run(ctx, "bench", benchState{})
		if err != nil || res.State.N != len(workers) || res.Steps != 3 {
			b.Fatalf("run: %v, %+v", err, res.State)
		}
		if err := store.DeleteThread(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}
