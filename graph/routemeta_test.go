package graph_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/capgraph/capgraph/graph"
)

// seen records the route metadata each node execution found.
type seen struct {
	mu sync.Mutex
	by map[string][]string
}

func (s *seen) node(name string, fail func(int) error) graph.NodeFunc[tstate, tupd] {
	n := 0
	return func(ctx context.Context, st tstate) (tupd, error) {
		m, ok := graph.RouteMeta(ctx)
		s.mu.Lock()
		s.by[name] = append(s.by[name], fmt.Sprintf("%v/%v", m, ok))
		n++
		k := n
		s.mu.Unlock()
		if fail != nil {
			if err := fail(k); err != nil {
				return tupd{}, err
			}
		}
		return tupd{Log: name}, nil
	}
}

func (s *seen) of(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.by[name])
}

// A route's Meta reaches the nodes it names, inline and as concurrent
// branches, each node the metadata of the route that named it; the entry,
// a static edge and a route without Meta hand over none.
func TestRouteMetaReachesTheStartedNodes(t *testing.T) {
	sn := &seen{by: map[string][]string{}}
	g := newGraph(nil)
	for _, n := range []string{"start", "one", "a", "b", "c", "join", "last"} {
		g.AddNode(n, sn.node(n, nil))
	}
	g.AddConditionalEdges("start", func(tstate) graph.Route { return graph.Route{To: []string{"one"}, Meta: "for one"} }, "one")
	g.AddConditionalEdges("one", func(tstate) graph.Route {
		return graph.Route{To: []string{"a", "b"}, Meta: map[string]int{"a": 0, "b": 1}}
	}, "a", "b")
	// Two branches route after the same step: each node of the union keeps
	// the metadata of the first route naming it.
	g.AddConditionalEdges("a", func(tstate) graph.Route { return graph.Route{To: []string{"c"}} }, "c")
	g.AddConditionalEdges("b", func(tstate) graph.Route { return graph.Route{To: []string{"join", "c"}, Meta: "from b"} }, "join", "c")
	g.AddEdge("c", "last")
	g.AddEdge("join", "last")
	g.AddConditionalEdges("last", func(tstate) graph.Route { return graph.Route{To: []string{graph.End}, Meta: "end"} }, graph.End)
	g.SetEntry("start")
	c := compile(t, g)
	res, err := c.Run(context.Background(), "t", tstate{})
	if err != nil || res.Status != graph.StatusDone {
		t.Fatalf("run: %v %s", err, res.Status)
	}
	want := map[string][]string{
		"start": {"<nil>/false"},
		"one":   {"for one/true"},
		"a":     {"map[a:0 b:1]/true"},
		"b":     {"map[a:0 b:1]/true"},
		"c":     {"<nil>/false"}, // named first by a's route, which carries none
		"join":  {"from b/true"},
		"last":  {"<nil>/false"}, // static edges
	}
	for n, w := range want {
		if got := sn.of(n); !slices.Equal(got, w) {
			t.Errorf("%s saw %v, want %v", n, got, w)
		}
	}
	if _, ok := graph.RouteMeta(context.Background()); ok {
		t.Error("RouteMeta outside a run reported metadata")
	}
}

// Route metadata is not checkpointed: a node started again by Resume (after
// a failure here; a crash or another process alike) has none and must
// compute it from the state.
func TestRouteMetaIsNotResumed(t *testing.T) {
	sn := &seen{by: map[string][]string{}}
	g := newGraph(nil)
	g.AddNode("start", sn.node("start", nil))
	g.AddNode("work", sn.node("work", func(n int) error {
		if n == 1 {
			return fmt.Errorf("first attempt fails")
		}
		return nil
	}))
	g.AddConditionalEdges("start", func(tstate) graph.Route { return graph.Route{To: []string{"work"}, Meta: 7} }, "work")
	g.AddEdge("work", graph.End)
	g.SetEntry("start")
	c := compile(t, g)
	if _, err := c.Run(context.Background(), "t", tstate{}); err == nil {
		t.Fatal("the first attempt must fail the run")
	}
	if res, err := c.Resume(context.Background(), "t", nil); err != nil || res.Status != graph.StatusDone {
		t.Fatalf("resume: %v %s", err, res.Status)
	}
	if got := sn.of("work"); !slices.Equal(got, []string{"7/true", "<nil>/false"}) {
		t.Fatalf("work saw %v; the resumed attempt must see no metadata", got)
	}
}
