package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/state"
)

type setpointArgs struct {
	Magnet string `json:"magnet" jsonschema:"the magnet's name: Q1, Q2 or B1"`
}

var setpointKey = capabilities.Key[float64]("MAGNET_SETPOINT")

// A typed capability on the compiled agent: the planner's prompt shows the
// parameters' schema; a plan whose parameters do not match it (a model's
// misspelt field, in a fenced reply with prose around it) fails the step
// REPLANNING before the capability runs, and the new plan's prompt names
// the field; the corrected plan runs and answers.
func TestTypedCapabilityParametersAreCheckedOnTheCompiledAgent(t *testing.T) {
	var ran []string
	read := capabilities.New(capabilities.Definition{Name: "magnet_setpoint", Description: "Read the present setpoint of a magnet in amperes."},
		setpointKey, func(_ context.Context, _ capabilities.Step, a setpointArgs) (float64, string, error) {
			ran = append(ran, a.Magnet)
			return 92, a.Magnet + " setpoint: 92.0 A", nil
		})
	bad := "Here is the plan:\n```json\n" + `{"steps": [
	 {"context_key": "sp", "capability": "magnet_setpoint", "task_objective": "read Q1", "parameters": {"magnet_name": "Q1"}},
	 {"context_key": "answer", "capability": "respond", "task_objective": "answer"}]}` + "\n```\nLet me know if you need more."
	good := `{"steps": [
	 {"context_key": "sp", "capability": "magnet_setpoint", "task_objective": "read Q1", "parameters": {"magnet": "Q1"}},
	 {"context_key": "answer", "capability": "respond", "task_objective": "answer"}]}`
	m := llmtest.New().Script(llm.RoleOrchestrator, llmtest.Text(bad), llmtest.Text(good)).Only(llm.RoleOrchestrator)
	a := mustAgent(t, agent.Config{Capabilities: []capabilities.Capability{read}, Models: m})
	o := run(t, a, "t", "What is the setpoint of magnet Q1?")
	if o.err != nil {
		t.Fatal(o.err)
	}
	if msg := o.message(); msg == nil || msg.Kind != state.KindAnswer || !strings.Contains(msg.Content, "92.0 A") {
		t.Fatalf("message %+v", msg)
	}
	if len(ran) != 1 || ran[0] != "Q1" {
		t.Fatalf("the capability ran for %v; want once, for Q1 (never with the wrong parameters)", ran)
	}
	calls := m.CallsFor(llm.RoleOrchestrator)
	if len(calls) != 2 {
		t.Fatalf("%d orchestrator calls, want 2 (the plan, the new plan)", len(calls))
	}
	if p := calls[0].Prompt(); !strings.Contains(p, `"magnet":{"description":"the magnet's name: Q1, Q2 or B1","type":"string"}`) {
		t.Errorf("the planner was not shown the parameters' schema:\n%s", p)
	}
	if p := calls[1].Prompt(); !strings.Contains(p, `there is no parameter \"magnet_name\"`) && !strings.Contains(p, `there is no parameter "magnet_name"`) {
		t.Errorf("the replanning prompt does not name the field:\n%s", p)
	}
}
