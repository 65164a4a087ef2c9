package graph_test

import (
	"context"
	"errors"
	"testing"

	"github.com/capgraph/capgraph/graph"
)

type counter struct {
	N    int      `json:"n"`
	Seen []string `json:"seen"`
}

type inc struct {
	By   int    `json:"by"`
	Node string `json:"node"`
}

func apply(s counter, u inc) (counter, error) {
	s.N += u.By
	if u.Node != "" {
		s.Seen = append(append([]string(nil), s.Seen...), u.Node)
	}
	return s, nil
}

func TestQuickFanOut(t *testing.T) {
	g := graph.New(graph.Config[counter, inc]{Apply: apply})
	g.AddNode("hub", func(ctx context.Context, s counter) (inc, error) { return inc{Node: "hub"}, nil })
	for _, n := range []string{"a", "b", "c"} {
		g.AddNode(n, func(ctx context.Context, s counter) (inc, error) { return inc{By: 1, Node: n}, nil })
		g.AddEdge(n, "hub")
	}
	fan := []string{"c", "a", "b"}
	g.AddConditionalEdges("hub", func(s counter) graph.Route {
		if s.N == 0 {
			return graph.Route{To: fan}
		}
		return graph.Route{To: []string{graph.End}}
	}, "a", "b", "c")
	g.SetEntry("hub")
	c, err := g.Compile()
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(context.Background(), "t1", counter{})
	if err != nil {
		t.Fatal(err)
	}
	if res.State.N != 3 || res.Status != graph.StatusDone {
		t.Fatalf("got %+v", res.State)
	}
	want := []string{"hub", "c", "a", "b", "hub"}
	if len(res.State.Seen) != len(want) {
		t.Fatalf("seen %v", res.State.Seen)
	}
	for i := range want {
		if res.State.Seen[i] != want[i] {
			t.Fatalf("seen %v want %v", res.State.Seen, want)
		}
	}
	_, err = c.Resume(context.Background(), "t1", nil)
	if !errors.Is(err, graph.ErrNoRun) {
		t.Fatalf("resume finished: %v", err)
	}
}
