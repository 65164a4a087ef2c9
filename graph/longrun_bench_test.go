package graph_test

import (
	"context"
	"testing"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// hubState and hubApply are the state and update of BenchmarkLongRun: round
// trips made and router executions.
type hubState struct {
	Trips  int `json:"trips"`
	Routes int `json:"routes"`
}

func hubApply(s, u hubState) (hubState, error) {
	s.Trips += u.Trips
	s.Routes += u.Routes
	return s, nil
}

const hubTrips = 50

// hubGraph is the hub-and-spoke graph of the eino comparison (bench/hub): a
// router with a conditional edge to 7 workers, each back to the router, 50
// round trips, 101 node executions.
func hubGraph(tb testing.TB, store checkpoint.Store) *graph.Compiled[hubState, hubState] {
	workers := []string{"w1", "w2", "w3", "w4", "w5", "w6", "w7"}
	routes := make([][]string, len(workers))
	for i, w := range workers {
		routes[i] = []string{w}
	}
	toEnd := []string{graph.End}
	g := graph.New(graph.Config[hubState, hubState]{Apply: hubApply, Store: store, MaxSteps: 2*hubTrips + 10})
	g.AddNode("router", func(context.Context, hubState) (hubState, error) { return hubState{Routes: 1}, nil })
	g.AddConditionalEdges("router", func(s hubState) graph.Route {
		if s.Trips >= hubTrips {
			return graph.Route{To: toEnd}
		}
		return graph.Route{To: routes[s.Trips%len(workers)]}
	}, workers...)
	for _, w := range workers {
		g.AddNode(w, func(context.Context, hubState) (hubState, error) { return hubState{Trips: 1}, nil })
		g.AddEdge(w, "router")
	}
	c, err := g.SetEntry("router").Compile()
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// BenchmarkLongRun measures the 101-step run of the eino comparison
// (bench/eino): one op is one Run (trace kept, a checkpoint after every
// step) followed by DeleteThread, as a server does with a finished
// conversation, so the store holds one run at a time.
func BenchmarkLongRun(b *testing.B) {
	for _, s := range []struct {
		name  string
		store checkpoint.Store
	}{
		{"memory", memory.New()},
		{"latest-only", memory.NewLatestOnly()},
	} {
		b.Run(s.name, func(b *testing.B) {
			c := hubGraph(b, s.store)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := c.Run(ctx, "hub", hubState{})
				if err != nil || res.State.Trips != hubTrips || res.State.Routes != hubTrips+1 || res.Steps != 2*hubTrips+1 {
					b.Fatalf("run: %v, %+v after %d steps", err, res.State, res.Steps)
				}
				if err := s.store.DeleteThread(ctx, "hub"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLongRunStream is BenchmarkLongRun consumed as a stream, as the
// agent runs its graph: the events go to the loop, and no trace is kept.
func BenchmarkLongRunStream(b *testing.B) {
	for _, s := range []struct {
		name  string
		store checkpoint.Store
	}{
		{"memory", memory.New()},
		{"latest-only", memory.NewLatestOnly()},
	} {
		b.Run(s.name, func(b *testing.B) {
			c := hubGraph(b, s.store)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				for ev, err := range c.Stream(ctx, "hub", hubState{}) {
					if err != nil {
						b.Fatal(err)
					}
					if ev.Kind == graph.EventCheckpoint {
						n++
					}
				}
				if n != 2*hubTrips+2 {
					b.Fatalf("%d checkpoints", n)
				}
				if err := s.store.DeleteThread(ctx, "hub"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
