package graph

import "slices"

// EdgeKind is how a node of a compiled graph is left.
type EdgeKind uint8

const (
	// EdgeNone: the node is terminal; the run ends when it finishes.
	EdgeNone EdgeKind = iota
	// EdgeStatic: the node always goes to its one target (AddEdge).
	EdgeStatic
	// EdgeConditional: a route picks among the declared targets, or End
	// (AddConditionalEdges, AddNamedConditionalEdges).
	EdgeConditional
)

// String names the kind for messages and drawings.
func (k EdgeKind) String() string {
	switch k {
	case EdgeNone:
		return "none"
	case EdgeStatic:
		return "static"
	case EdgeConditional:
		return "conditional"
	}
	return "unknown"
}

// NodeTopology is one node of a compiled graph and the edge that leaves it.
type NodeTopology struct {
	Name string
	// Terminal nodes (SetTerminal) end the run; their Edge is EdgeNone.
	Terminal bool
	Edge     EdgeKind
	// Targets are the declared destinations in declaration order: the one
	// target of a static edge (possibly End), every target a conditional
	// edge may take. A conditional route may also return End, which is not
	// listed unless declared.
	Targets []string
	// Route is the name given with AddNamedConditionalEdges; nodes with the
	// same Route share one routing decision. "" for unnamed routes and
	// static edges.
	Route string
}

// Topology is the shape of a compiled graph, for drawings and checks. It is
// a copy: changing it changes nothing in the graph.
type Topology struct {
	// Entry is the node every run starts with.
	Entry string
	// Nodes in declaration order.
	Nodes []NodeTopology
}

// Node returns the named node's topology.
func (t Topology) Node(name string) (NodeTopology, bool) {
	for _, n := range t.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return NodeTopology{}, false
}

// Declares reports whether the graph may go from one node to another:
// a declared target, or End from a conditional edge (always valid there).
func (t Topology) Declares(from, to string) bool {
	n, ok := t.Node(from)
	if !ok {
		return false
	}
	return slices.Contains(n.Targets, to) || n.Edge == EdgeConditional && to == End
}

// Topology returns the graph's entry, nodes and edges.
func (c *Compiled[S, U]) Topology() Topology {
	t := Topology{Entry: c.entry[0], Nodes: make([]NodeTopology, 0, len(c.order))}
	for _, name := range c.order {
		d := c.nodes[name]
		n := NodeTopology{Name: name, Terminal: d.terminal}
		switch d.edge {
		case edgeStatic:
			n.Edge, n.Targets = EdgeStatic, slices.Clone(d.static)
		case edgeConditional:
			n.Edge, n.Targets, n.Route = EdgeConditional, slices.Clone(d.declared), d.routeName
		}
		t.Nodes = append(t.Nodes, n)
	}
	return t
}
