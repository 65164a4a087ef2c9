package nodes

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/state"
)

// Numbers that are not numbers in plans (issue 26, part 7): a plan whose
// parameters hold ±Inf or NaN — one a human edited, one an application's
// planner read from "1e400" with strconv — is refused before anything runs
// (REPLANNING, naming the parameter); a model's plan holding 1e400, which
// JSON decodes into no float, is re-asked with a message saying so.

func TestValidatePlanRefusesNonFiniteParameters(t *testing.T) {
	reg := controlRoom(t)
	turn := state.Turn{Task: &state.Task{Text: "Read the beam current", Intent: intent.Intent{Kind: intent.KindRead}}}
	for _, tc := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"query": "beam current", "limit": math.Inf(1)}, "parameters.limit is +Inf"},
		{map[string]any{"window": []any{1.0, math.NaN()}}, "parameters.window[1] is NaN"},
		{map[string]any{"range": map[string]any{"low": math.Inf(-1)}}, "parameters.range.low is -Inf"},
	} {
		steps := []capabilities.PlannedStep{
			{ContextKey: "ch", Capability: "channel_finding", TaskObjective: "find the beam current", Parameters: tc.params},
			{ContextKey: "v", Capability: "channel_read", TaskObjective: "read it", Inputs: []capabilities.InputRef{{Type: "CHANNEL_ADDRESSES", Key: "ch"}}},
		}
		_, err := ValidatePlan(steps, reg, capabilities.ContextStore{}, turn)
		var pe *PlanError
		if !errors.As(err, &pe) || !errors.Is(err, ErrNotFinite) || pe.Step != 0 {
			t.Fatalf("%v: %v; want a *PlanError ErrNotFinite of step 1", tc.params, err)
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "not a finite number") {
			t.Errorf("%v: %q lacks %q", tc.params, err, tc.want)
		}
		if c := pe.capabilityError().Classification(); c.Severity != capabilities.Replanning {
			t.Errorf("%v: classified %s, want replanning", tc.params, c.Severity)
		}
	}
	// A plan with finite numbers only is accepted as before.
	ok := []capabilities.PlannedStep{{ContextKey: "ch", Capability: "channel_finding", TaskObjective: "find", Parameters: map[string]any{"limit": 1e308}}}
	if _, err := ValidatePlan(ok, reg, capabilities.ContextStore{}, turn); err != nil {
		t.Fatalf("a finite plan: %v", err)
	}
}

// A model's plan that holds 1e400 (or -1e400) is a format error whose
// message, shown to the model on the next attempt, says the number is out
// of range — not that "parameters" must be some Go type.
func TestOrchestratorPlanWithOutOfRangeNumber(t *testing.T) {
	reg := controlRoom(t)
	for _, n := range []string{"1e400", "-1e400", "1E+999"} {
		reply := `{"steps": [{"context_key": "w", "capability": "channel_finding", "task_objective": "find Q1", "parameters": {"value": ` + n + `}}]}`
		m := llmtest.New().Script(llm.RoleOrchestrator, llmtest.Text(reply))
		node, _ := NewOrchestrator(llmCfg(reg, m))
		_, _, err := runNode(t, node, withTask("Set Q1 to "+n+" A", "channel_finding", "respond", "clarify"))
		c := classification(t, node, err)
		if c.Severity != capabilities.Retriable || !errors.Is(err, ErrFormat) {
			t.Fatalf("%s: %s %v; want a retriable format error", n, c.Severity, err)
		}
		parseErr, _ := c.Metadata[MetaParseError].(string)
		if !strings.Contains(parseErr, "holds the number "+n) || !strings.Contains(parseErr, "beyond the range of a 64-bit float") {
			t.Errorf("%s: parse error %q does not say the number is out of range", n, parseErr)
		}
	}
}
