package graph_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/capgraph/capgraph/graph"
)

func noteNode(line string) graph.NodeFunc[Doc, Note] {
	return func(ctx context.Context, d Doc) (Note, error) { return Note{Line: line}, nil }
}

// A review loop: two nodes share the "review" route, one goes on by a
// static edge, one is terminal.
func ExampleCompiled_Topology() {
	review := func(d Doc) graph.Route { return graph.Route{To: []string{"publish"}} }
	g := graph.New(graph.Config[Doc, Note]{Apply: addLine})
	g.AddNode("draft", noteNode("draft"))
	g.AddNode("edit", noteNode("edit"))
	g.AddNode("publish", noteNode("published"))
	g.AddNode("archive", noteNode("archived"))
	g.AddNamedConditionalEdges("draft", "review", review, "edit", "publish")
	g.AddNamedConditionalEdges("edit", "review", review, "edit", "publish")
	g.AddEdge("publish", "archive")
	g.SetTerminal("archive")
	g.SetEntry("draft")
	c, err := g.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	t := c.Topology()
	fmt.Println("entry:", t.Entry)
	for _, n := range t.Nodes {
		fmt.Printf("%s: %s %v route=%q terminal=%v\n", n.Name, n.Edge, n.Targets, n.Route, n.Terminal)
	}
	fmt.Println(t.Declares("edit", graph.End), t.Declares("publish", graph.End))
	// Output:
	// entry: draft
	// draft: conditional [edit publish] route="review" terminal=false
	// edit: conditional [edit publish] route="review" terminal=false
	// publish: static [archive] route="" terminal=false
	// archive: none [] route="" terminal=true
	// true false
}

func TestTopology(t *testing.T) {
	route := func(d Doc) graph.Route { return graph.Route{} }
	tests := []struct {
		name  string
		build func(g *graph.Graph[Doc, Note])
		want  graph.Topology
	}{
		{"unnamed route keeps declaration order without repeats", func(g *graph.Graph[Doc, Note]) {
			g.AddNode("a", noteNode("a")).AddNode("c", noteNode("c")).AddNode("b", noteNode("b"))
			g.AddConditionalEdges("a", route, "c", "b", "c", graph.End)
			g.AddEdge("c", graph.End).AddEdge("b", "a").SetEntry("a")
		}, graph.Topology{Entry: "a", Nodes: []graph.NodeTopology{
			{Name: "a", Edge: graph.EdgeConditional, Targets: []string{"c", "b", graph.End}},
			{Name: "c", Edge: graph.EdgeStatic, Targets: []string{graph.End}},
			{Name: "b", Edge: graph.EdgeStatic, Targets: []string{"a"}},
		}}},
		{"named route and terminal", func(g *graph.Graph[Doc, Note]) {
			g.AddNode("x", noteNode("x")).AddNode("stop", noteNode("stop"))
			g.AddNamedConditionalEdges("x", "hub", route, "stop")
			g.SetTerminal("stop").SetEntry("x")
		}, graph.Topology{Entry: "x", Nodes: []graph.NodeTopology{
			{Name: "x", Edge: graph.EdgeConditional, Targets: []string{"stop"}, Route: "hub"},
			{Name: "stop", Terminal: true, Edge: graph.EdgeNone},
		}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := graph.New(graph.Config[Doc, Note]{Apply: addLine})
			tc.build(g)
			c, err := g.Compile()
			if err != nil {
				t.Fatal(err)
			}
			got := c.Topology()
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Topology() =\n%+v\nwant\n%+v", got, tc.want)
			}
			// A copy: changing it leaves the graph as it was.
			got.Nodes[0].Targets = append(got.Nodes[0].Targets[:0], "changed")
			if again := c.Topology(); !reflect.DeepEqual(again, tc.want) {
				t.Fatalf("Topology() after changing a copy = %+v", again)
			}
		})
	}
}

func TestTopologyDeclares(t *testing.T) {
	route := func(d Doc) graph.Route { return graph.Route{} }
	g := graph.New(graph.Config[Doc, Note]{Apply: addLine})
	g.AddNode("a", noteNode("a")).AddNode("b", noteNode("b"))
	g.AddConditionalEdges("a", route, "b")
	g.AddEdge("b", "a").SetEntry("a")
	c, err := g.Compile()
	if err != nil {
		t.Fatal(err)
	}
	top := c.Topology()
	for _, tc := range []struct {
		from, to string
		want     bool
	}{
		{"a", "b", true}, {"a", graph.End, true}, {"a", "a", false},
		{"b", "a", true}, {"b", graph.End, false}, {"nope", "a", false},
	} {
		if got := top.Declares(tc.from, tc.to); got != tc.want {
			t.Errorf("Declares(%q, %q) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
	if _, ok := top.Node("nope"); ok {
		t.Error("Node(nope) found a node")
	}
}
