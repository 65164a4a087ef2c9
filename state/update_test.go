package state

import (
	"slices"
	"testing"
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
