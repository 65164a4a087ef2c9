package prompts

import (
	"cmp"
	"encoding/json"
	"math/rand/v2"
	"slices"

	"github.com/capgraph/capgraph/capabilities"
)

// ShuffledExamples returns a guide's examples in an order drawn from seed.
// The order is shuffled so the model does not learn a position bias from
// always-positive-first lists; the source is seeded so prompts are
// reproducible (golden tests, cached prompts).
func ShuffledExamples(g *capabilities.ClassifierGuide, seed uint64) []Example {
	if g == nil {
		return nil
	}
	out := make([]Example, len(g.Examples))
	for i, e := range g.Examples {
		out[i] = Example{Query: e.Query, Result: e.Result, Reason: e.Reason}
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// PlannerCapabilities describes active capabilities for the planner, sorted
// by guide priority (lower first), then name; examples are numbered from 1.
func PlannerCapabilities(caps []capabilities.Capability) []PlannerCapability {
	type item struct {
		pc       PlannerCapability
		priority int
	}
	items := make([]item, 0, len(caps))
	for _, c := range caps {
		pc := PlannerCapability{Name: c.Name(), Description: c.Description(), Provides: c.Provides(), SideEffects: capabilities.HasSideEffects(c)}
		for _, q := range c.Requires() {
			pc.Requires = append(pc.Requires, q.Type)
		}
		prio := 0
		if gp, ok := c.(capabilities.OrchestratorGuideProvider); ok {
			if g := gp.OrchestratorGuide(); g != nil {
				prio = g.Priority
				pc.Instructions = g.Instructions
				pc.Parameters = string(g.Parameters)
				for i, ex := range g.Examples {
					pc.Examples = append(pc.Examples, PlanExample{Number: i + 1, Scenario: ex.Scenario, Step: stepJSON(ex.Step), Notes: ex.Notes})
				}
			}
		}
		items = append(items, item{pc, prio})
	}
	slices.SortStableFunc(items, func(a, b item) int {
		return cmp.Or(cmp.Compare(a.priority, b.priority), cmp.Compare(a.pc.Name, b.pc.Name))
	})
	out := make([]PlannerCapability, len(items))
	for i, it := range items {
		out[i] = it.pc
	}
	return out
}

// planStep is a step in the plan format the orchestrator must reply with:
// inputs as {"TYPE": "key"} objects, not the Go struct's {type, key}.
type planStep struct {
	ContextKey      string              `json:"context_key"`
	Capability      string              `json:"capability"`
	TaskObjective   string              `json:"task_objective"`
	SuccessCriteria string              `json:"success_criteria,omitempty"`
	ExpectedOutput  string              `json:"expected_output,omitempty"`
	Parameters      map[string]any      `json:"parameters,omitempty"`
	Inputs          []map[string]string `json:"inputs,omitempty"`
}

// stepJSON renders a planned step in the plan reply format, so examples
// show the model exactly what the parser accepts.
func stepJSON(st capabilities.PlannedStep) string {
	ps := planStep{ContextKey: st.ContextKey, Capability: st.Capability, TaskObjective: st.TaskObjective,
		SuccessCriteria: st.SuccessCriteria, ExpectedOutput: st.ExpectedOutput, Parameters: st.Parameters}
	for _, in := range st.Inputs {
		ps.Inputs = append(ps.Inputs, map[string]string{in.Type: in.Key})
	}
	b, err := json.Marshal(ps)
	if err != nil {
		return "{}" // parameters that cannot be encoded; the example is dropped, not the prompt
	}
	return string(b)
}
