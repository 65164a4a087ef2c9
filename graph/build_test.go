package graph_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/graph"
)

func nop(context.Context, tstate) (tupd, error) { return tupd{}, nil }

func toEnd(tstate) graph.Route { return graph.Route{To: []string{graph.End}} }

func TestCompileProblems(t *testing.T) {
	tests := []struct {
		name  string
		build func() *graph.Graph[tstate, tupd]
		want  []graph.BuildProblem
	}{
		{"no entry", func() *graph.Graph[tstate, tupd] {
			return newGraph(nil).AddNode("a", nop).AddEdge("a", graph.End)
		}, []graph.BuildProblem{{Kind: graph.ProblemNoEntry}}},
		{"unknown entry", func() *graph.Graph[tstate, tupd] {
			return newGraph(nil).AddNode("a", nop).AddEdge("a", graph.End).SetEntry("x")
		}, []graph.BuildProblem{{Kind: graph.ProblemUnknownEntry, Node: "x"}}},
		{"duplicate node", func() *graph.Graph[tstate, tupd] {
			return newGraph(nil).AddNode("a", nop).AddNode("a", nop).AddEdge("a", graph.End).SetEntry("a")
		}, []graph.BuildProblem{{Kind: graph.ProblemDuplicateNode, Node: "a"}}},
		{"reserved names", func() *graph.Graph[tstate, tupd] {
			return newGraph(nil).AddNode("", nop).AddNode(graph.End, nop).AddNode("a", nop).AddEdge("a", graph.End).SetEntry("a")
		}, []graph.BuildProblem{{Kind: graph.ProblemReservedName}, {Kind: graph.ProblemReservedName, Node: graph.End}}},
		{"nil node", func() *graph.Graph[tstate, tupd] {
			return newGraph(nil).AddNode("a", nil).AddNode("b", nop).AddEdge("b", graph.End).SetEntry("b")
		}, []graph.BuildProblem{{Kind: graph.ProblemNilNode, Node: "a"}}},
		{"unknown source", func() *graph.Graph[tstate, tupd] {
			return newGraph(nil).AddNode("a", nop).AddEdge("a", graph.End).SetEntry("a").
				AddEdge("x", "a").AddConditionalEdges("y", toEnd).SetTerminal("z")
		}, []graph.BuildProblem{
			{Kind: graph.ProblemUnknownSource, Node: "x", Target: "a"},
			{Kind: graph.ProblemUnknownSource, Node: "y"},
			{Kind: graph.ProblemUnknownSource, Node: "z"},
		}},
		{"unknown targets", func() *graph.Graph[tstate, tupd] {
			return newGraph(nil).AddNode("a", nop).AddNode("b", nop).
				AddEdge("a", "nowhere").AddConditionalEdges("b", toEnd, "zz", "a").SetEntry("b")
		}, []graph.BuildProblem{
			{Kind: graph.ProblemUnknownTarget, Node: "a", Target: "nowhere"},
			{Kind: graph.ProblemUnknownTarget, Node: "b", Target: "zz"},
		}},
		{"unreachable", func() *graph.Graph[tstate, tupd] {
			return newGraph(nil).AddNode("a", nop).AddNode("island", nop).
				AddEdge("a", graph.End).AddEdge("island", "a").SetEntry("a")
		}, []graph.BuildProblem{{Kind: graph.ProblemUnreachable, Node: "island"}}},
		{"no outgoing edge", func() *graph.Graph[tstate, tupd] {
			return newGraph(nil).AddNode("a", nop).AddNode("b", nop).AddEdge("a", "b").SetEntry("a")
		}, []graph.BuildProblem{{Kind: graph.ProblemNoOutgoingEdge, Node: "b"}}},
		{"terminal with edge", func() *graph.Graph[tstate, tupd] {
			return newGraph(nil).AddNode("a", nop).AddEdge("a", graph.End).SetTerminal("a").SetEntry("a")
		}, []graph.BuildProblem{{Kind: graph.ProblemTerminalHasEdge, Node: "a"}}},
		{"two edges", func() *graph.Graph[tstate, tupd] {
			return newGraph(nil).AddNode("a", nop).AddEdge("a", graph.End).AddEdge("a", "a").
				AddConditionalEdges("a", toEnd).SetEntry("a")
		}, []graph.BuildProblem{
			{Kind: graph.ProblemTwoEdgeKinds, Node: "a", Target: "a"},
			{Kind: graph.ProblemTwoEdgeKinds, Node: "a"},
		}},
		{"no apply", func() *graph.Graph[tstate, tupd] {
			return graph.New(graph.Config[tstate, tupd]{}).AddNode("a", nop).AddEdge("a", graph.End).SetEntry("a")
		}, []graph.BuildProblem{{Kind: graph.ProblemNoApply}}},
		{"nil route", func() *graph.Graph[tstate, tupd] {
			return newGraph(nil).AddNode("a", nop).AddConditionalEdges("a", nil).SetEntry("a")
		}, []graph.BuildProblem{{Kind: graph.ProblemNilRoute, Node: "a"}}},
	}
	seen := map[graph.BuildProblemKind]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.build().Compile()
			if c != nil || err == nil {
				t.Fatalf("Compile = %v, %v; want a *BuildError", c, err)
			}
			var be *graph.BuildError
			if !errors.As(err, &be) || !errors.Is(err, graph.ErrBuild) {
				t.Fatalf("error %T %v is not a *BuildError matching ErrBuild", err, err)
			}
			if !slices.Equal(be.Problems, tt.want) {
				t.Fatalf("problems\n got %v\nwant %v", be.Problems, tt.want)
			}
			for _, p := range tt.want {
				if !be.Has(p.Kind) {
					t.Errorf("Has(%s) = false", p.Kind)
				}
				if !strings.Contains(err.Error(), string(p.Kind)) {
					t.Errorf("message %q does not name %s", err, p.Kind)
				}
				seen[p.Kind] = true
			}
		})
	}
	all := []graph.BuildProblemKind{graph.ProblemNoEntry, graph.ProblemUnknownEntry, graph.ProblemDuplicateNode,
		graph.ProblemReservedName, graph.ProblemNilNode, graph.ProblemUnknownSource, graph.ProblemUnknownTarget,
		graph.ProblemUnreachable, graph.ProblemNoOutgoingEdge, graph.ProblemTerminalHasEdge,
		graph.ProblemTwoEdgeKinds, graph.ProblemNoApply, graph.ProblemNilRoute}
	for _, k := range all {
		if !seen[k] {
			t.Errorf("no test case covers %s", k)
		}
	}
}

func TestCompileValid(t *testing.T) {
	g := newGraph(nil).AddNode("a", nop).AddNode("b", nop).AddNode("done", nop).
		AddEdge("a", "b").AddConditionalEdges("b", toEnd, "done", graph.End).SetTerminal("done").SetEntry("a")
	c := compile(t, g)
	if got := c.Nodes(); !slices.Equal(got, []string{"a", "b", "done"}) {
		t.Fatalf("Nodes() = %v", got)
	}
	if c.Store() == nil {
		t.Fatal("Store() is nil")
	}
	// A graph without a configured store gets a working in-memory one.
	c2 := compile(t, graph.New(graph.Config[tstate, tupd]{Apply: tapply}).AddNode("a", nop).AddEdge("a", graph.End).SetEntry("a"))
	if _, err := c2.Run(context.Background(), "t", tstate{}); err != nil {
		t.Fatalf("run with default store: %v", err)
	}
}
