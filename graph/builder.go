package graph

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// End is the destination that finishes a run. A route may return it; it is
// always a valid destination.
const End = "__end__"

// NodeFunc is a node: it reads the state and returns an update. It must not
// mutate s: concurrent branches share it.
type NodeFunc[S, U any] func(ctx context.Context, s S) (U, error)

// Route is the decision of a conditional edge.
type Route struct {
	// To names the next node(s). Several run concurrently in one step and their
	// updates are applied in this order. Empty or End finishes the run.
	To []string
	// NotBefore delays the next step: the engine waits on its Clock (a timer
	// by default) honouring cancellation, and a resumed run waits only what
	// is left.
	NotBefore time.Time
	// Meta is whatever the route wants the nodes it names to know (why they
	// run, which part of the work is theirs), opaque to the engine: each
	// node the route starts reads it with RouteMeta. It is not checkpointed:
	// a node started by a resume gets none and computes it again from the
	// state, which the route being a pure function of the state makes equal.
	Meta any
}

// RouteFunc decides where a conditional edge goes. It must be a pure function
// of the state: the engine may evaluate it again on resume. The engine keeps
// the returned To slice in the checkpoint without copying it (a transition
// must not allocate), so a route must not modify a slice it has returned;
// returning the same package-level slice every time is fine.
type RouteFunc[S any] func(s S) Route

// ApplyFunc applies an update to the state, returning the new state.
type ApplyFunc[S, U any] func(s S, u U) (S, error)

// Codec encodes states and updates for checkpoints. The default is JSON. The
// engine passes pointers (*S, *U) to Marshal, which avoids boxing a struct
// into an interface on every step.
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// JSONAppender is a state (or update) whose pointer encodes itself without
// reflection. Under the default JSON Codec the engine calls AppendJSON
// instead of json.Marshal; it must append exactly the bytes json.Marshal
// gives, so the stored form does not depend on which encoded it.
type JSONAppender interface {
	AppendJSON(b []byte) ([]byte, error)
}

// ValueState is a state type whose values are never modified in place:
// its ApplyFunc returns a new value sharing with the old one only what it
// did not change (as state.Apply does), and nodes do not modify the state
// they are given (NodeFunc). Under DurabilityAsync the engine then holds
// such a state, not its encoding, for a step's checkpoint that only a
// barrier would write (checkpoint.Transient), and encodes it only if one
// comes: a turn that meets no barrier encodes its last state alone.
type ValueState interface {
	ValueState()
}

type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error) {
	if a, ok := v.(JSONAppender); ok {
		return a.AppendJSON(nil)
	}
	return json.Marshal(v)
}
func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// Config configures a graph. Apply is required; everything else has a default.
type Config[S, U any] struct {
	// Apply merges a node's update into the state. Required.
	Apply ApplyFunc[S, U]
	// Store receives a checkpoint after every step. Default: a new in-memory
	// store. The engine reuses the buffer it encodes the state into, so the
	// Store must not keep the slices it is given after Put returns, as the
	// checkpointtest conformance suite requires of every store.
	Store checkpoint.Store
	// Durability says when a step's checkpoint must be durable: before the
	// next step starts (DurabilitySync, the default) or by the run's next
	// barrier (DurabilityAsync; see Durability and Flush).
	Durability Durability
	// MaxSteps caps the steps of one run (a safety cap). Default 100.
	MaxSteps int
	// MaxConcurrency caps the nodes running at once in one step. Default 8.
	MaxConcurrency int
	// Codec encodes states and updates. Default JSON.
	Codec Codec
	// Metadata, when set, computes the metadata stored with each checkpoint.
	Metadata func(s S) map[string]string
	// Clock stamps events and checkpoints, measures nodes and waits for a
	// route's NotBefore. Default SystemClock; tests replace it (see Clock).
	Clock Clock
	// Now, when Clock is nil, is the clock's Now: events, checkpoints and
	// durations read it, and a wait lasts, on a real timer, the time it says
	// is left. Kept for configurations written before Clock; Clock, when
	// set, takes precedence and Now is not read.
	Now func() time.Time
}

type edgeKind uint8

const (
	edgeNone edgeKind = iota
	edgeStatic
	edgeConditional
)

type nodeDef[S, U any] struct {
	name     string
	idx      int // position in declaration order; indexes per-run counters
	fn       NodeFunc[S, U]
	terminal bool
	edge     edgeKind
	static   []string // single-element destination of a static edge, shared
	route    RouteFunc[S]
	targets  map[string]bool // declared destinations of a conditional edge
	// dests resolves each destination a route may name (the declared
	// targets and End, whose entry is nil) to its node, and staticDest is
	// the node of a static edge (nil for End): set by Compile, so a step
	// finds its next node with the lookup that validates the route.
	dests      map[string]*nodeDef[S, U]
	staticDest *nodeDef[S, U]
	// declared lists targets in declaration order, without repeats, and
	// routeName is the name given with AddNamedConditionalEdges: both only
	// for Topology, the engine never reads them.
	declared  []string
	routeName string
}

// Graph is a graph under construction. Build it with AddNode and the edge
// methods, then Compile it. Problems are collected and reported by Compile, so
// the builder methods never fail or panic.
type Graph[S, U any] struct {
	cfg      Config[S, U]
	nodes    map[string]*nodeDef[S, U]
	order    []string
	entry    string
	problems []BuildProblem
}

// New starts a graph.
func New[S, U any](cfg Config[S, U]) *Graph[S, U] {
	return &Graph[S, U]{cfg: cfg, nodes: make(map[string]*nodeDef[S, U])}
}

// AddNode declares a node. Declare nodes before the edges that leave them:
// an edge or SetTerminal naming an undeclared source is a build problem.
func (g *Graph[S, U]) AddNode(name string, fn NodeFunc[S, U]) *Graph[S, U] {
	switch {
	case name == "" || name == End:
		g.problems = append(g.problems, BuildProblem{Kind: ProblemReservedName, Node: name})
		return g
	case g.nodes[name] != nil:
		g.problems = append(g.problems, BuildProblem{Kind: ProblemDuplicateNode, Node: name})
		return g
	case fn == nil:
		g.problems = append(g.problems, BuildProblem{Kind: ProblemNilNode, Node: name})
		return g
	}
	g.nodes[name] = &nodeDef[S, U]{name: name, fn: fn, idx: len(g.order)}
	g.order = append(g.order, name)
	return g
}

// SetEntry names the node every run starts with.
func (g *Graph[S, U]) SetEntry(name string) *Graph[S, U] {
	g.entry = name
	return g
}

// SetTerminal marks nodes that end the run when they finish.
func (g *Graph[S, U]) SetTerminal(names ...string) *Graph[S, U] {
	for _, n := range names {
		if d := g.nodes[n]; d != nil {
			d.terminal = true
		} else {
			g.problems = append(g.problems, BuildProblem{Kind: ProblemUnknownSource, Node: n})
		}
	}
	return g
}

// AddEdge adds a static edge from → to (to may be End). A node has one
// outgoing edge, static or conditional; fan-out is a conditional edge.
func (g *Graph[S, U]) AddEdge(from, to string) *Graph[S, U] {
	d := g.nodes[from]
	if d == nil {
		g.problems = append(g.problems, BuildProblem{Kind: ProblemUnknownSource, Node: from, Target: to})
		return g
	}
	if d.edge != edgeNone {
		g.problems = append(g.problems, BuildProblem{Kind: ProblemTwoEdgeKinds, Node: from, Target: to})
		return g
	}
	d.edge, d.static = edgeStatic, []string{to}
	return g
}

// AddConditionalEdges routes from a node with route, which may return any of
// targets (and End). A route to anything else is an InvalidTransitionError.
func (g *Graph[S, U]) AddConditionalEdges(from string, route RouteFunc[S], targets ...string) *Graph[S, U] {
	return g.AddNamedConditionalEdges(from, "", route, targets...)
}

// AddNamedConditionalEdges is AddConditionalEdges with a name for the route,
// which Topology reports: nodes added with the same name share one routing
// decision, so a drawing can show that route once, as a hub. The name has
// no effect on running; "" is no name.
func (g *Graph[S, U]) AddNamedConditionalEdges(from, name string, route RouteFunc[S], targets ...string) *Graph[S, U] {
	d := g.nodes[from]
	if d == nil {
		g.problems = append(g.problems, BuildProblem{Kind: ProblemUnknownSource, Node: from})
		return g
	}
	if d.edge != edgeNone {
		g.problems = append(g.problems, BuildProblem{Kind: ProblemTwoEdgeKinds, Node: from})
		return g
	}
	if route == nil {
		// Recorded, and the edge still counts as declared so Compile does not
		// also report the node as having no outgoing edge.
		g.problems = append(g.problems, BuildProblem{Kind: ProblemNilRoute, Node: from})
	}
	d.edge, d.route, d.routeName = edgeConditional, route, name
	d.targets = make(map[string]bool, len(targets))
	for _, t := range targets {
		if !d.targets[t] {
			d.declared = append(d.declared, t)
		}
		d.targets[t] = true
	}
	return g
}

// Compile validates the graph and returns a runnable graph, or a *BuildError
// listing every problem.
func (g *Graph[S, U]) Compile() (*Compiled[S, U], error) {
	problems := slices.Clone(g.problems)
	if g.cfg.Apply == nil {
		problems = append(problems, BuildProblem{Kind: ProblemNoApply})
	}
	if !g.cfg.Durability.Valid() {
		problems = append(problems, BuildProblem{Kind: ProblemUnknownDurability, Target: string(g.cfg.Durability)})
	}
	switch {
	case g.entry == "":
		problems = append(problems, BuildProblem{Kind: ProblemNoEntry})
	case g.nodes[g.entry] == nil:
		problems = append(problems, BuildProblem{Kind: ProblemUnknownEntry, Node: g.entry})
	}
	for _, name := range g.order {
		d := g.nodes[name]
		switch {
		case d.terminal && d.edge != edgeNone:
			problems = append(problems, BuildProblem{Kind: ProblemTerminalHasEdge, Node: name})
		case !d.terminal && d.edge == edgeNone:
			problems = append(problems, BuildProblem{Kind: ProblemNoOutgoingEdge, Node: name})
		}
		for _, t := range d.destinations() {
			if t != End && g.nodes[t] == nil {
				problems = append(problems, BuildProblem{Kind: ProblemUnknownTarget, Node: name, Target: t})
			}
		}
	}
	if g.entry != "" && g.nodes[g.entry] != nil {
		reached := map[string]bool{g.entry: true}
		queue := []string{g.entry}
		for len(queue) > 0 {
			d := g.nodes[queue[0]]
			queue = queue[1:]
			for _, t := range d.destinations() {
				if g.nodes[t] != nil && !reached[t] {
					reached[t] = true
					queue = append(queue, t)
				}
			}
		}
		for _, name := range g.order {
			if !reached[name] {
				problems = append(problems, BuildProblem{Kind: ProblemUnreachable, Node: name})
			}
		}
	}
	if len(problems) > 0 {
		return nil, &BuildError{Problems: problems}
	}
	c := &Compiled[S, U]{cfg: g.cfg, nodes: make(map[string]*nodeDef[S, U], len(g.nodes)), entry: []string{g.entry}}
	var zero S
	_, c.valueState = any(zero).(ValueState)
	for k, v := range g.nodes {
		cp := *v
		c.nodes[k] = &cp
	}
	for _, d := range c.nodes {
		switch d.edge {
		case edgeStatic:
			d.staticDest = c.nodes[d.static[0]]
		case edgeConditional:
			d.dests = make(map[string]*nodeDef[S, U], len(d.targets)+1)
			for t := range d.targets {
				d.dests[t] = c.nodes[t]
			}
			d.dests[End] = nil
		}
	}
	c.order = slices.Clone(g.order)
	if c.cfg.Store == nil {
		c.cfg.Store = memoryStore()
	}
	if c.cfg.MaxSteps <= 0 {
		c.cfg.MaxSteps = 100
	}
	if c.cfg.MaxConcurrency <= 0 {
		c.cfg.MaxConcurrency = 8
	}
	if c.cfg.Codec == nil {
		c.cfg.Codec = jsonCodec{}
	}
	switch {
	case c.cfg.Clock != nil:
		c.clock = c.cfg.Clock
	case c.cfg.Now != nil:
		c.clock = funcClock{now: c.cfg.Now}
	default:
		c.clock = SystemClock{}
	}
	_, c.systemClock = c.clock.(SystemClock)
	return c, nil
}

// destinations lists the declared destinations, sorted for stable reports.
func (d *nodeDef[S, U]) destinations() []string {
	switch d.edge {
	case edgeStatic:
		return d.static
	case edgeConditional:
		out := make([]string, 0, len(d.targets))
		for t := range d.targets {
			out = append(out, t)
		}
		slices.Sort(out)
		return out
	}
	return nil
}
