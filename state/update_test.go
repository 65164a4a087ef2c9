package state

import (
	"slices"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
)

// An ended turn's steps that never started are closed as skipped; a turn
// that goes on keeps them pending.
func TestEndedTurnClosesItsPlan(t *testing.T) {
	plan := &Plan{Number: 1, Steps: []PlanStep{{Status: StepDone}, {Status: StepRejected}, {Status: StepPending}}}
	s := State{Turn: Turn{Plan: plan}}
	going, err := Apply(s, Update{NodeSteps: 1})
	if err != nil || going.Turn.Plan.Steps[2].Status != StepPending {
		t.Fatalf("a turn that goes on: %+v (err %v)", going.Turn.Plan.Steps, err)
	}
	ended, err := Apply(s, Update{Done: true})
	if err != nil {
		t.Fatal(err)
	}
	got := []StepStatus{}
	for _, st := range ended.Turn.Plan.Steps {
		got = append(got, st.Status)
	}
	if want := []StepStatus{StepDone, StepRejected, StepSkipped}; !slices.Equal(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
	if plan.Steps[2].Status != StepPending {
		t.Error("Apply changed the state it was given")
	}
}

// A State is a value (ValueState): Apply never writes to the state it is
// given, nor to what an earlier Apply from the same state returned — even
// when the state's slices have room to grow in place, which is where an
// append would write. Each update below is applied twice to one base; the
// base and the first result must encode as before.
func TestApplyLeavesItsInputsAsTheyWere(t *testing.T) {
	roomy := func() State {
		msgs := make([]Message, 1, 8)
		msgs[0] = Message{Role: RoleUser, Content: "What is the beam current?"}
		steps := make([]PlanStep, 2, 8)
		steps[0].Status, steps[1].Status = StepDone, StepPending
		results := make([]StepResult, 1, 8)
		results[0] = StepResult{StepIndex: 0, Capability: "read", Success: true}
		approvals := make([]ApprovalDecision, 1, 8)
		approvals[0] = ApprovalDecision{ID: "a0", Approved: true}
		return State{
			Messages: msgs,
			Context:  capabilities.ContextStore{}.Put(capabilities.ContextEntry{Type: "PV", Key: "k0"}),
			Turn: Turn{Plan: &Plan{Number: 1, Steps: steps}, Results: results, Approvals: approvals,
				Control: Control{Tokens: 3, TokensByRole: map[string]int{"classifier": 3},
					Error: &ErrorInfo{Node: "read", StepIndex: 1}}},
			Metadata: map[string]string{"owner": "alice"},
		}
	}
	step := func(i int, res string) *StepUpdate {
		return &StepUpdate{Plan: 1, Index: 1, Step: PlanStep{Status: StepDone},
			Result: &StepResult{StepIndex: 1, Capability: res, Success: true}, ClearError: i == 0,
			Error: map[bool]*ErrorInfo{true: {Node: res, StepIndex: 1}}[i == 1]}
	}
	for _, tc := range []struct {
		name   string
		u1, u2 Update
	}{
		{"messages", Update{Messages: []Message{{Role: RoleAssistant, Content: "one"}}}, Update{Messages: []Message{{Role: RoleAssistant, Content: "two"}}}},
		{"context", Update{Context: []capabilities.ContextEntry{{Type: "PV", Key: "k1"}}}, Update{Context: []capabilities.ContextEntry{{Type: "PV", Key: "k0", Summary: "again"}}}},
		{"step results and errors", Update{Step: step(0, "first")}, Update{Step: step(1, "second")}},
		{"approvals", Update{Approvals: []ApprovalDecision{{ID: "a1", Tokens: 2}}}, Update{Approvals: []ApprovalDecision{{ID: "a2", Tokens: 5}}}},
		{"tokens and steps", Update{Tokens: map[string]int{"classifier": 1}, NodeSteps: 1}, Update{Tokens: map[string]int{"orchestrator": 7}, NodeSteps: 2}},
		{"done and limits", Update{Done: true, LimitExceeded: "tokens"}, Update{Paused: 5, LimitExceeded: "steps"}},
		{"a whole turn", Update{Turn: &Turn{ID: "t2"}}, Update{Turn: &Turn{ID: "t3"}, Done: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := roomy()
			encode := func(s State) string {
				b, err := s.AppendJSON(nil)
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			before := encode(base)
			first, err := Apply(base, tc.u1)
			if err != nil {
				t.Fatal(err)
			}
			firstWas := encode(first)
			if _, err := Apply(base, tc.u2); err != nil {
				t.Fatal(err)
			}
			if _, err := Apply(first, tc.u2); err != nil {
				t.Fatal(err)
			}
			if got := encode(base); got != before {
				t.Errorf("Apply changed the state it was given:\n was %s\n now %s", before, got)
			}
			if got := encode(first); got != firstWas {
				t.Errorf("a later Apply changed what an earlier one returned:\n was %s\n now %s", firstWas, got)
			}
		})
	}
}
