package cli

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/state"
)

// cmdGraph prints the compiled agent graph, or a thread's last plan.
func cmdGraph(ctx context.Context, c *cmdEnv, args []string) error {
	fs := c.newFlags("[--format mermaid|dot] [--thread ID]")
	format := fs.String("format", "mermaid", "mermaid or dot")
	thread := fs.String("thread", "", "show this thread's last plan with step outcomes")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &UsageError{Command: "graph", Problem: fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	if *format != "mermaid" && *format != "dot" {
		return &UsageError{Command: "graph", Problem: fmt.Sprintf("--format %q: want mermaid or dot", *format)}
	}
	a, err := c.buildAgent(ctx, *thread != "")
	if err != nil {
		return err
	}
	if *thread == "" {
		g := agentGraph(a)
		if *format == "dot" {
			fmt.Fprint(c.env.Stdout, g.dot())
		} else {
			fmt.Fprint(c.env.Stdout, g.mermaid())
		}
		return nil
	}
	s, status, err := a.State(ctx, *thread)
	if err != nil {
		return err
	}
	if s.Turn.Plan == nil {
		fmt.Fprintf(c.env.Stdout, "thread %s: the last turn (%s) made no plan\n", *thread, status)
		return nil
	}
	if *format == "dot" {
		fmt.Fprint(c.env.Stdout, planDOT(s))
	} else {
		fmt.Fprint(c.env.Stdout, planMermaid(s))
	}
	fmt.Fprintf(c.env.Stdout, "\n%s", planText(s))
	return nil
}

// causes labels the router's edges by the kind of node they go to, with
// the causes router.Decide gives for going there. Any other node is a
// capability step.
var causes = map[string]string{
	state.NodeTaskExtraction: "no task",
	state.NodeClassifier:     "no capabilities / RECLASSIFICATION",
	state.NodeOrchestrator:   "no plan / REPLANNING",
	state.NodePlanApproval:   "plan not approved yet",
	state.NodeRespond:        "plan finished",
	state.NodeClarify:        "plan step",
	state.NodeError:          "CRITICAL / budget or limit exhausted",
	graph.End:                "turn done",
}

// causeOf labels an edge of a route going to target.
func causeOf(target string) string {
	if c, ok := causes[target]; ok {
		return c
	}
	return "ready step / RETRIABLE"
}

// infraNodes are the agent's own nodes; the others are capabilities (drawn
// as subroutines) or terminal (drawn as parallelograms).
var infraNodes = map[string]bool{state.NodeTaskExtraction: true, state.NodeClassifier: true, state.NodeOrchestrator: true,
	state.NodePlanApproval: true, state.NodeRespond: true, state.NodeClarify: true}

// nodeShape is how a drawn node looks.
type nodeShape uint8

const (
	shapeEnd      nodeShape = iota // START, END
	shapeHub                       // a route several nodes share
	shapeInfra                     // one of the agent's own nodes
	shapeCap                       // a capability step
	shapeTerminal                  // a node that ends the run
)

type drawnNode struct {
	id    string // graph node name, hub route name, START or END
	shape nodeShape
}

// edge is one drawn edge; START and END stand for the run's start and
// graph.End.
type edge struct{ from, to, label string }

// drawing is the agent graph as drawn, derived from the compiled graph's
// topology: every node, the entry, every declared edge. Nodes sharing a
// named route (all but the error node share the router) lead to that route
// drawn once as a hub, whose edges go to every target they declare (and
// END, which a route may always return), labelled with the router's causes.
type drawing struct {
	nodes []drawnNode
	edges []edge
}

func agentGraph(a *agent.Agent) drawing { return drawGraph(a.Graph().Topology()) }

func drawGraph(t graph.Topology) drawing {
	shared := map[string]int{}
	for _, n := range t.Nodes {
		if n.Edge == graph.EdgeConditional && n.Route != "" {
			shared[n.Route]++
		}
	}
	names := map[string]bool{"START": true, "END": true}
	for _, n := range t.Nodes {
		names[n.Name] = true
	}
	// hubID is the drawn id of a route name shared by several nodes, "" for
	// a route drawn edge by edge; it never collides with a node's name.
	hubID := func(n graph.NodeTopology) string {
		if n.Edge != graph.EdgeConditional || shared[n.Route] < 2 {
			return ""
		}
		id := n.Route
		for names[id] {
			id += "_route"
		}
		return id
	}
	end := func(to string) string {
		if to == graph.End {
			return "END"
		}
		return to
	}
	d := drawing{nodes: []drawnNode{{"START", shapeEnd}, {"END", shapeEnd}}}
	d.edges = append(d.edges, edge{"START", t.Entry, ""})
	var hubs []string
	hubTargets := map[string][]string{}
	for _, n := range t.Nodes {
		switch {
		case n.Terminal:
			d.nodes = append(d.nodes, drawnNode{n.Name, shapeTerminal})
		case infraNodes[n.Name]:
			d.nodes = append(d.nodes, drawnNode{n.Name, shapeInfra})
		default:
			d.nodes = append(d.nodes, drawnNode{n.Name, shapeCap})
		}
		switch hub := hubID(n); {
		case n.Terminal:
			d.edges = append(d.edges, edge{n.Name, "END", ""})
		case n.Edge == graph.EdgeStatic:
			for _, to := range n.Targets {
				d.edges = append(d.edges, edge{n.Name, end(to), ""})
			}
		case hub != "":
			if _, seen := hubTargets[hub]; !seen {
				hubs = append(hubs, hub)
				hubTargets[hub] = nil
			}
			for _, to := range n.Targets {
				if !slices.Contains(hubTargets[hub], to) {
					hubTargets[hub] = append(hubTargets[hub], to)
				}
			}
			d.edges = append(d.edges, edge{n.Name, hub, ""})
		default:
			for _, to := range withEnd(n.Targets) {
				d.edges = append(d.edges, edge{n.Name, end(to), causeOf(to)})
			}
		}
	}
	for _, hub := range hubs {
		d.nodes = append(d.nodes, drawnNode{hub, shapeHub})
		for _, to := range withEnd(hubTargets[hub]) {
			d.edges = append(d.edges, edge{hub, end(to), causeOf(to)})
		}
	}
	return d
}

// withEnd adds graph.End to a route's targets: a route may always end the run.
func withEnd(targets []string) []string {
	if slices.Contains(targets, graph.End) {
		return targets
	}
	return append(slices.Clone(targets), graph.End)
}

func (d drawing) mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	for _, n := range d.nodes {
		id := mermaidID(n.id)
		switch n.shape {
		case shapeEnd:
			fmt.Fprintf(&b, "  %s([%s])\n", id, strings.ToLower(n.id))
		case shapeHub:
			fmt.Fprintf(&b, "  %s{%s}\n", id, n.id)
		case shapeInfra:
			fmt.Fprintf(&b, "  %s[%s]\n", id, n.id)
		case shapeCap:
			fmt.Fprintf(&b, "  %s[[%s]]\n", id, n.id)
		case shapeTerminal:
			fmt.Fprintf(&b, "  %s[/%s/]\n", id, n.id)
		}
	}
	for _, e := range d.edges {
		if e.label == "" {
			fmt.Fprintf(&b, "  %s --> %s\n", mermaidID(e.from), mermaidID(e.to))
		} else {
			fmt.Fprintf(&b, "  %s -->|%s| %s\n", mermaidID(e.from), e.label, mermaidID(e.to))
		}
	}
	return b.String()
}

func (d drawing) dot() string {
	var b strings.Builder
	b.WriteString("digraph capgraph {\n  rankdir=TB;\n")
	shapes := map[nodeShape]string{shapeEnd: "shape=oval", shapeHub: "shape=diamond", shapeInfra: "shape=box",
		shapeCap: "shape=box, style=rounded", shapeTerminal: "shape=parallelogram"}
	for _, n := range d.nodes {
		fmt.Fprintf(&b, "  %q [%s];\n", n.id, shapes[n.shape])
	}
	for _, e := range d.edges {
		if e.label == "" {
			fmt.Fprintf(&b, "  %q -> %q;\n", e.from, e.to)
		} else {
			fmt.Fprintf(&b, "  %q -> %q [label=%q];\n", e.from, e.to, e.label)
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// mermaidID keeps node ids Mermaid accepts (letters, digits, underscore).
func mermaidID(n string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, n)
}

// stepOutcome is one plan step's outcome in words.
func stepOutcome(s state.State, i int, st state.PlanStep) string {
	out := string(st.Status)
	var attempts []string
	for _, r := range s.Turn.Results {
		if r.StepIndex == i && r.Plan == s.Turn.Plan.Number {
			if r.Success {
				attempts = append(attempts, fmt.Sprintf("attempt %d ok", r.Attempt))
			} else {
				attempts = append(attempts, fmt.Sprintf("attempt %d %s: %s", r.Attempt, strings.ToLower(r.Severity), r.Error))
			}
		}
	}
	if st.Fallback != "" {
		out += ", by fallback " + st.Fallback
	}
	if st.Recovered {
		out += ", recovered"
	}
	if len(attempts) > 0 {
		out += " (" + strings.Join(attempts, "; ") + ")"
	}
	return out
}

// planText lists the last plan's steps with their outcomes.
func planText(s state.State) string {
	p := s.Turn.Plan
	if p == nil {
		return "no plan in the last turn\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "plan %d of the last turn:\n", p.Number)
	for i, st := range p.Steps {
		dep := ""
		if len(st.DependsOn) > 0 {
			ds := make([]string, len(st.DependsOn))
			for j, d := range st.DependsOn {
				ds[j] = fmt.Sprint(d + 1)
			}
			dep = " after " + strings.Join(ds, ",")
		}
		fmt.Fprintf(&b, "  %d. %s%s — %s\n", i+1, st.Capability, dep, stepOutcome(s, i, st))
		if st.TaskObjective != "" {
			fmt.Fprintf(&b, "     objective: %s\n", st.TaskObjective)
		}
	}
	return b.String()
}

func planMermaid(s state.State) string {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	for i, st := range s.Turn.Plan.Steps {
		fmt.Fprintf(&b, "  s%d[\"%d. %s: %s\"]\n", i+1, i+1, st.Capability, st.Status)
	}
	for i, st := range s.Turn.Plan.Steps {
		for _, d := range dependencies(i, st) {
			fmt.Fprintf(&b, "  s%d --> s%d\n", d+1, i+1)
		}
	}
	return b.String()
}

func planDOT(s state.State) string {
	var b strings.Builder
	b.WriteString("digraph plan {\n  rankdir=LR;\n")
	for i, st := range s.Turn.Plan.Steps {
		fmt.Fprintf(&b, "  s%d [shape=box, label=%q];\n", i+1, fmt.Sprintf("%d. %s: %s", i+1, st.Capability, st.Status))
	}
	for i, st := range s.Turn.Plan.Steps {
		for _, d := range dependencies(i, st) {
			fmt.Fprintf(&b, "  s%d -> s%d;\n", d+1, i+1)
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// dependencies returns the earlier steps a step depends on, sorted.
func dependencies(i int, st state.PlanStep) []int {
	out := make([]int, 0, len(st.DependsOn))
	for _, d := range st.DependsOn {
		if d >= 0 && d < i {
			out = append(out, d)
		}
	}
	sort.Ints(out)
	return out
}
