package router

import (
	"context"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/state"
)

// Route returns the route function of every node of the agent graph: the
// decision's next nodes and not-before time, and the decision itself as the
// route's metadata, which the engine hands to each node it starts
// (graph.RouteMeta), so that a node learns its plan step, and the error node
// its cause, without deciding again (see Carried).
func Route(cfg Config) graph.RouteFunc[state.State] {
	cfg = cfg.WithDefaults()
	return func(s state.State) graph.Route {
		d := Decide(s, cfg)
		return graph.Route{To: d.Next, NotBefore: d.NotBefore, Meta: &d}
	}
}

// Carried returns the decision that started the running node: the one the
// engine carried from Route, or, for a node the engine started without one
// (a run resumed from its checkpoint, maybe by another process), Decide(s,
// cfg) — the same decision, since Decide is pure and the checkpoint holds the
// state it was taken on.
func Carried(ctx context.Context, s state.State, cfg Config) Decision {
	if m, ok := graph.RouteMeta(ctx); ok {
		if d, ok := m.(*Decision); ok {
			return *d
		}
	}
	return Decide(s, cfg)
}
