package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/state"
)

// checkDrawing fails unless d draws exactly top: every node, START to the
// entry, no edge the graph does not declare, and every declared edge
// (directly or through its route's hub).
func checkDrawing(t *testing.T, top graph.Topology, d drawing) {
	t.Helper()
	drawn := map[string]nodeShape{}
	for _, n := range d.nodes {
		drawn[n.id] = n.shape
	}
	members := map[string][]graph.NodeTopology{} // hub id → nodes routed by it
	for _, e := range d.edges {
		if drawn[e.to] == shapeHub {
			if n, ok := top.Node(e.from); ok {
				members[e.to] = append(members[e.to], n)
			}
		}
	}
	for _, n := range top.Nodes {
		if _, ok := drawn[n.Name]; !ok {
			t.Errorf("node %q of the compiled graph is not drawn", n.Name)
		}
	}
	graphName := func(id string) string {
		if id == "END" {
			return graph.End
		}
		return id
	}
	has := map[edge]bool{}
	for _, e := range d.edges {
		has[edge{e.from, e.to, ""}] = true
		if _, ok := drawn[e.from]; !ok {
			t.Errorf("edge %v leaves an undrawn node", e)
		}
		if _, ok := drawn[e.to]; !ok {
			t.Errorf("edge %v enters an undrawn node", e)
		}
		from, _ := top.Node(e.from)
		switch {
		case e.from == "START":
			if e.to != top.Entry {
				t.Errorf("START goes to %q; the entry is %q", e.to, top.Entry)
			}
		case drawn[e.to] == shapeHub:
			if from.Edge != graph.EdgeConditional || from.Route != e.to && !strings.HasPrefix(e.to, from.Route+"_route") {
				t.Errorf("edge %v: %q is not routed by %q", e, e.from, e.to)
			}
		case drawn[e.from] == shapeHub:
			declared := false
			for _, m := range members[e.from] {
				declared = declared || top.Declares(m.Name, graphName(e.to))
			}
			if !declared {
				t.Errorf("hub edge %v: no node of route %q declares %q", e, e.from, e.to)
			}
		case from.Terminal:
			if e.to != "END" {
				t.Errorf("terminal node %q drawn going to %q", e.from, e.to)
			}
		default:
			if !top.Declares(e.from, graphName(e.to)) {
				t.Errorf("edge %v is not declared by the compiled graph", e)
			}
		}
	}
	if !has[edge{"START", top.Entry, ""}] {
		t.Errorf("START --> %s is not drawn", top.Entry)
	}
	for _, n := range top.Nodes {
		if n.Terminal && !has[edge{n.Name, "END", ""}] {
			t.Errorf("terminal %q is not drawn ending the run", n.Name)
		}
		for _, to := range n.Targets {
			id := to
			if to == graph.End {
				id = "END"
			}
			if has[edge{n.Name, id, ""}] {
				continue
			}
			viaHub := false
			for hub, ms := range members {
				if slices.ContainsFunc(ms, func(m graph.NodeTopology) bool { return m.Name == n.Name }) && has[edge{hub, id, ""}] {
					viaHub = true
				}
			}
			if !viaHub {
				t.Errorf("declared edge %s → %s is not drawn", n.Name, to)
			}
		}
	}
	// Both renderings draw every node and edge.
	m, dot := d.mermaid(), d.dot()
	for _, e := range d.edges {
		arrow := fmt.Sprintf("%s --> %s", mermaidID(e.from), mermaidID(e.to))
		if e.label != "" {
			arrow = fmt.Sprintf("%s -->|%s| %s", mermaidID(e.from), e.label, mermaidID(e.to))
		}
		if !strings.Contains(m, arrow+"\n") {
			t.Errorf("mermaid lacks %q", arrow)
		}
		if !strings.Contains(dot, fmt.Sprintf("%q -> %q", e.from, e.to)) {
			t.Errorf("dot lacks %v", e)
		}
	}
	for _, n := range d.nodes {
		if !strings.Contains(dot, fmt.Sprintf("  %q [", n.id)) {
			t.Errorf("dot lacks node %q", n.id)
		}
	}
}

func testCapability(t *testing.T, name string) capabilities.Capability {
	t.Helper()
	c := capabilities.Define(capabilities.Definition{Name: name, Description: "Test capability " + name,
		Provides: []string{strings.ToUpper(name)},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use for " + name + ".",
			Examples: []capabilities.ClassifierExample{{Query: "do " + name, Result: true, Reason: name}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result(strings.ToUpper(name), 1, "done"), nil
		}})
	return c
}

// The drawing of the real agent graph follows its wiring: each node the
// agent adds (plan approval, every capability) is drawn, routed through the
// one router hub, and every drawn edge is one the compiled graph declares.
func TestDrawingFollowsTheAgentGraph(t *testing.T) {
	for _, caps := range [][]string{{"scan"}, {"scan", "archive_write", "beam_tune"}} {
		t.Run(strings.Join(caps, ","), func(t *testing.T) {
			reg := capabilities.NewRegistry()
			for _, c := range caps {
				if err := reg.Register(testCapability(t, c)); err != nil {
					t.Fatal(err)
				}
			}
			a, err := agent.New(agent.Config{Registry: reg})
			if err != nil {
				t.Fatal(err)
			}
			top := a.Graph().Topology()
			d := agentGraph(a)
			checkDrawing(t, top, d)
			hubs := 0
			for _, n := range d.nodes {
				if n.shape == shapeHub {
					hubs++
				}
			}
			if hubs != 1 {
				t.Errorf("%d hubs drawn; want the router alone", hubs)
			}
			m := d.mermaid()
			for _, want := range []string{"router{router}", "START --> task_extraction", "plan_approval --> router",
				"router -->|plan not approved yet| plan_approval", "error[/error/]", "error --> END", "router -->|turn done| END"} {
				if !strings.Contains(m, want) {
					t.Errorf("mermaid lacks %q:\n%s", want, m)
				}
			}
			for _, c := range caps {
				id := mermaidID(c)
				for _, want := range []string{id + "[[" + c + "]]", id + " --> router", "router -->|ready step / RETRIABLE| " + id} {
					if !strings.Contains(m, want) {
						t.Errorf("mermaid lacks %q", want)
					}
				}
			}
		})
	}
}

// Drawing any compiled graph: a node added to a shared route joins its hub,
// an unnamed or unshared route is drawn edge by edge, static edges as they
// are, and a hub never takes a node's name.
func TestDrawGraph(t *testing.T) {
	route := func(s int) graph.Route { return graph.Route{} }
	apply := func(s, u int) (int, error) { return s + u, nil }
	node := func(ctx context.Context, s int) (int, error) { return 1, nil }
	tests := []struct {
		name  string
		build func(g *graph.Graph[int, int])
		want  []edge // edges that must be drawn, labels included
		hubs  int
	}{
		{"a node added to a shared route joins the hub", func(g *graph.Graph[int, int]) {
			g.AddNode(state.NodeTaskExtraction, node).AddNode(state.NodeRespond, node).AddNode("extra", node).AddNode(state.NodeError, node)
			for _, n := range []string{state.NodeTaskExtraction, state.NodeRespond, "extra"} {
				g.AddNamedConditionalEdges(n, "router", route, state.NodeRespond, "extra", state.NodeError)
			}
			g.SetTerminal(state.NodeError).SetEntry(state.NodeTaskExtraction)
		}, []edge{{"START", state.NodeTaskExtraction, ""}, {"extra", "router", ""}, {"router", "extra", "ready step / RETRIABLE"},
			{"router", state.NodeError, causes[state.NodeError]}, {state.NodeError, "END", ""}, {"router", "END", "turn done"}}, 1},
		{"unnamed and unshared routes are drawn edge by edge", func(g *graph.Graph[int, int]) {
			g.AddNode("a", node).AddNode("b", node).AddNode("c", node)
			g.AddConditionalEdges("a", route, "b", "c")
			g.AddNamedConditionalEdges("b", "solo", route, "c")
			g.AddEdge("c", graph.End).SetEntry("a")
		}, []edge{{"a", "b", "ready step / RETRIABLE"}, {"a", "c", "ready step / RETRIABLE"}, {"a", "END", "turn done"},
			{"b", "c", "ready step / RETRIABLE"}, {"c", "END", ""}}, 0},
		{"a hub named like a node gets another id", func(g *graph.Graph[int, int]) {
			g.AddNode("router", node).AddNode("x", node)
			g.AddNamedConditionalEdges("router", "router", route, "x")
			g.AddNamedConditionalEdges("x", "router", route, "router")
			g.SetEntry("router")
		}, []edge{{"router", "router_route", ""}, {"x", "router_route", ""}, {"router_route", "x", "ready step / RETRIABLE"},
			{"router_route", "router", "ready step / RETRIABLE"}}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := graph.New(graph.Config[int, int]{Apply: apply})
			tc.build(g)
			c, err := g.Compile()
			if err != nil {
				t.Fatal(err)
			}
			top := c.Topology()
			d := drawGraph(top)
			checkDrawing(t, top, d)
			for _, e := range tc.want {
				if !slices.Contains(d.edges, e) {
					t.Errorf("edge %+v not drawn; drew %+v", e, d.edges)
				}
			}
			hubs := 0
			for _, n := range d.nodes {
				if n.shape == shapeHub {
					hubs++
				}
			}
			if hubs != tc.hubs {
				t.Errorf("%d hubs; want %d", hubs, tc.hubs)
			}
		})
	}
}
