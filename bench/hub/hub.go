// Package hub builds the same hub-and-spoke graph in capgraph and in eino, so
// the two engines can be measured side by side (see ../eino and
// docs/performance.md).
//
// The graph: a router node with a conditional edge to 7 workers, each worker
// going back to the router. The router sends trip n to worker n mod 7 and
// ends after Trips round trips: Trips worker executions and Trips+1 router
// executions, 2·Trips+1 node executions in all (101 for 50 trips). The nodes
// do nothing but count, so what is measured is the engines.
package hub

import (
	"context"
	"fmt"

	"github.com/cloudwego/eino/compose"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
)

// Trips is the number of round trips of one run.
const Trips = 50

// Workers names the spokes.
var Workers = []string{"w1", "w2", "w3", "w4", "w5", "w6", "w7"}

// State is what flows through the graph: round trips made (one per worker
// execution) and router executions.
type State struct {
	Trips  int `json:"trips"`
	Routes int `json:"routes"`
}

// Check reports whether s is the result of one whole run.
func Check(s State) error {
	if s.Trips != Trips || s.Routes != Trips+1 {
		return fmt.Errorf("hub: run ended with %d trips and %d router executions, want %d and %d", s.Trips, s.Routes, Trips, Trips+1)
	}
	return nil
}

// next is the router's decision on s, shared by both engines: the index of
// the next worker in Workers, or -1 to end.
func next(s State) int {
	if s.Trips >= Trips {
		return -1
	}
	return s.Trips % len(Workers)
}

// Capgraph compiles the graph on capgraph's engine, writing a checkpoint to
// store after every step. The update is the state delta of a node.
func Capgraph(store checkpoint.Store) (*graph.Compiled[State, State], error) {
	// One destination slice per worker, made once: a route returns it as is.
	routes := make([][]string, len(Workers))
	for i, w := range Workers {
		routes[i] = []string{w}
	}
	toEnd := []string{graph.End}
	g := graph.New(graph.Config[State, State]{
		Store:    store,
		MaxSteps: 2*Trips + 10,
		Apply: func(s State, u State) (State, error) {
			s.Trips += u.Trips
			s.Routes += u.Routes
			return s, nil
		},
	})
	g.AddNode("router", func(context.Context, State) (State, error) { return State{Routes: 1}, nil })
	g.AddConditionalEdges("router", func(s State) graph.Route {
		i := next(s)
		if i < 0 {
			return graph.Route{To: toEnd}
		}
		return graph.Route{To: routes[i]}
	}, Workers...)
	for _, w := range Workers {
		g.AddNode(w, func(context.Context, State) (State, error) { return State{Trips: 1}, nil })
		g.AddEdge(w, "router")
	}
	g.SetEntry("router")
	return g.Compile()
}

// Eino compiles the graph as an eino compose.Graph (Pregel mode, the
// default, which allows the cycle). The value passed from node to node is
// the state; eino writes no checkpoint.
func Eino(ctx context.Context) (compose.Runnable[State, State], error) {
	g := compose.NewGraph[State, State]()
	if err := g.AddLambdaNode("router", compose.InvokableLambda(func(_ context.Context, s State) (State, error) {
		s.Routes++
		return s, nil
	})); err != nil {
		return nil, err
	}
	ends := map[string]bool{compose.END: true}
	for _, w := range Workers {
		if err := g.AddLambdaNode(w, compose.InvokableLambda(func(_ context.Context, s State) (State, error) {
			s.Trips++
			return s, nil
		})); err != nil {
			return nil, err
		}
		if err := g.AddEdge(w, "router"); err != nil {
			return nil, err
		}
		ends[w] = true
	}
	if err := g.AddEdge(compose.START, "router"); err != nil {
		return nil, err
	}
	if err := g.AddBranch("router", compose.NewGraphBranch(func(_ context.Context, s State) (string, error) {
		if i := next(s); i >= 0 {
			return Workers[i], nil
		}
		return compose.END, nil
	}, ends)); err != nil {
		return nil, err
	}
	return g.Compile(ctx, compose.WithMaxRunSteps(2*Trips+10))
}
