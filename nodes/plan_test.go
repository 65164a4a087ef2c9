package nodes

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/prompts"
)

func TestParsePlanTolerance(t *testing.T) {
	step := `{"context_key": "a", "capability": "channel_read", "task_objective": "read", "inputs": [{"CHANNEL_ADDRESSES": "ch"}]}`
	tests := []struct {
		name  string
		reply string
		err   string
	}{
		{"bare", `{"steps": [` + step + `]}`, ""},
		{"fenced with prose", "Plan:\n```json\n{\"steps\": [" + step + "]}\n```\nDone.", ""},
		{"fence without info string", "```\n{\"steps\": [" + step + "]}\n```", ""},
		{"trailing prose", `{"steps": [` + step + `]} I hope this helps {`, ""},
		{"leading prose with braces in fence", "Use {x}.\n```json\n{\"steps\": [" + step + "]}\n```", ""},
		{"miscased key", `{"steps": [{"Context_Key": "a", "capability": "x"}]}`, `unknown key(s) "Context_Key"`},
		{"miscased top key", `{"Steps": []}`, `unknown key(s) "Steps"`},
		{"missing capability", `{"steps": [{"context_key": "a"}]}`, `no "capability"`},
		{"duplicate key", `{"steps": [` + step + `,` + step + `]}`, "repeats the context_key"},
		{"input not string", `{"steps": [{"context_key": "a", "capability": "x", "inputs": [{"T": 1}]}]}`, "must be a string"},
		{"empty input", `{"steps": [{"context_key": "a", "capability": "x", "inputs": [{}]}]}`, "is empty"},
		{"truncated", `{"steps": [{"context_key": "a"`, "invalid JSON"},
		{"array", `[1, 2]`, "no JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps, err := parsePlan(tt.reply)
			if tt.err == "" {
				if err != nil || len(steps) != 1 || steps[0].Inputs[0] != (capabilities.InputRef{Type: "CHANNEL_ADDRESSES", Key: "ch"}) {
					t.Errorf("steps %+v err %v", steps, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("err = %v, want it to mention %q", err, tt.err)
			}
		})
	}
}

func TestPromptExamplesParseAsPlans(t *testing.T) {
	st := capabilities.PlannedStep{ContextKey: "bc", Capability: "channel_read", TaskObjective: "Read", SuccessCriteria: "a value",
		ExpectedOutput: "CHANNEL_VALUES", Parameters: map[string]any{"n": 2.0},
		Inputs: []capabilities.InputRef{{Type: "CHANNEL_ADDRESSES", Key: "bc_channels"}}}
	// The step as the planner prompt shows it, from the capability's guide.
	c := capabilities.Define(capabilities.Definition{Name: "channel_read", Description: "Read channels", Provides: []string{"CHANNEL_VALUES"},
		OrchestratorGuide: &capabilities.OrchestratorGuide{Examples: []capabilities.OrchestratorExample{{Step: st, Scenario: "read"}}},
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Output{}, nil
		}})
	shown := prompts.PlannerCapabilities([]capabilities.Capability{c})[0].Examples[0].Step
	got, err := parsePlan(`{"steps": [` + shown + `]}`)
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], st) {
		t.Errorf("round trip: %+v %v", got, err)
	}
}

func TestTerminalCapabilityNamesAreNormalised(t *testing.T) {
	steps, err := parsePlan(`{"steps": [{"capability": "Respond", "task_objective": "answer"}]}`)
	if err != nil || steps[0].Capability != "respond" || steps[0].ContextKey != "respond" {
		t.Errorf("steps %+v err %v", steps, err)
	}
}

// A plan reply is found in prose and code fences; keys are case-sensitive.
func TestParsePlanReply(t *testing.T) {
	reply := "Here is my plan:\n```json\n" +
		`{"steps": [{"context_key": "ch", "capability": "channel_finding", "task_objective": "find the beam current channel"},` +
		` {"context_key": "v", "capability": "channel_read", "task_objective": "read it", "inputs": [{"CHANNEL_ADDRESSES": "ch"}]}]}` +
		"\n```"
	steps, err := parsePlan(reply)
	if got := fmt.Sprintln(len(steps), steps[1].Inputs, err); got != "2 [{CHANNEL_ADDRESSES ch}] <nil>\n" {
		t.Errorf("parsed %q", got)
	}
	_, err = parsePlan(`{"steps": [{"context_key": "ch", "Capability": "channel_finding"}]}`)
	if want := `step 1 has unknown key(s) "Capability" (keys are case-sensitive; allowed: context_key, capability, task_objective, success_criteria, expected_output, parameters, inputs)`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}
