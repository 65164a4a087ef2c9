package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/router"
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

// shape is the agent graph as drawn: every node but the error node returns
// to the router (a pure function of the state), which picks the next node.
// The agent compiles exactly this (agent.New); the router's edges are
// labelled with the causes router.Decide gives for them.
type shape struct {
	infra []string // task_extraction, classifier, orchestrator, respond, clarify
	caps  []string
}

func agentGraph(a *agent.Agent) shape {
	var sh shape
	infra := map[string]bool{router.TaskExtraction: true, router.Classifier: true, router.Orchestrator: true, router.Respond: true, router.Clarify: true}
	for _, n := range a.Graph().Nodes() {
		switch {
		case n == router.Error:
		case infra[n]:
			sh.infra = append(sh.infra, n)
		default:
			sh.caps = append(sh.caps, n)
		}
	}
	return sh
}

// edge is one drawn edge.
type edge struct{ from, to, label string }

func (sh shape) edges() []edge {
	e := []edge{{"START", router.TaskExtraction, ""}}
	for _, n := range sh.infra {
		e = append(e, edge{n, "router", ""})
	}
	for _, n := range sh.caps {
		e = append(e, edge{n, "router", ""})
	}
	e = append(e,
		edge{"router", router.TaskExtraction, "no task"},
		edge{"router", router.Classifier, "no capabilities / RECLASSIFICATION"},
		edge{"router", router.Orchestrator, "no plan / REPLANNING"},
	)
	for _, n := range sh.caps {
		e = append(e, edge{"router", n, "ready step / RETRIABLE"})
	}
	e = append(e,
		edge{"router", router.Respond, "plan finished"},
		edge{"router", router.Clarify, "plan step"},
		edge{"router", router.Error, "CRITICAL / budget or limit exhausted"},
		edge{"router", "END", "turn done"},
		edge{router.Error, "END", ""},
	)
	return e
}

func (sh shape) mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	b.WriteString("  START([start])\n  END([end])\n  router{router}\n")
	for _, n := range sh.infra {
		fmt.Fprintf(&b, "  %s[%s]\n", n, n)
	}
	for _, n := range sh.caps {
		fmt.Fprintf(&b, "  %s[[%s]]\n", mermaidID(n), n)
	}
	fmt.Fprintf(&b, "  %s[/%s/]\n", router.Error, router.Error)
	for _, e := range sh.edges() {
		if e.label == "" {
			fmt.Fprintf(&b, "  %s --> %s\n", mermaidID(e.from), mermaidID(e.to))
		} else {
			fmt.Fprintf(&b, "  %s -->|%s| %s\n", mermaidID(e.from), e.label, mermaidID(e.to))
		}
	}
	return b.String()
}

func (sh shape) dot() string {
	var b strings.Builder
	b.WriteString("digraph capgraph {\n  rankdir=TB;\n  START [shape=oval]; END [shape=oval]; router [shape=diamond];\n")
	for _, n := range sh.infra {
		fmt.Fprintf(&b, "  %q [shape=box];\n", n)
	}
	for _, n := range sh.caps {
		fmt.Fprintf(&b, "  %q [shape=box, style=rounded];\n", n)
	}
	fmt.Fprintf(&b, "  %q [shape=parallelogram];\n", router.Error)
	for _, e := range sh.edges() {
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
