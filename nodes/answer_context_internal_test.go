package nodes

import (
	"slices"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

func TestAnswerContext(t *testing.T) {
	entry := func(typ, key string, turn int) capabilities.ContextEntry {
		return capabilities.ContextEntry{Type: typ, Key: key, Turn: turn, Summary: key, Created: testNow}
	}
	step := func(key, capability, out string, inputs ...capabilities.InputRef) state.PlanStep {
		return state.PlanStep{PlannedStep: capabilities.PlannedStep{ContextKey: key, Capability: capability, ExpectedOutput: out, Inputs: inputs},
			Status: state.StepDone}
	}
	chans := capabilities.InputRef{Type: "CHANNEL_ADDRESSES", Key: "ch2"}
	oldChans := capabilities.InputRef{Type: "CHANNEL_ADDRESSES", Key: "ch1"}
	respond := state.PlanStep{PlannedStep: respondStep("t"), Status: state.StepPending}
	store := capabilities.ContextStore{}.Put(
		entry("CHANNEL_ADDRESSES", "ch1", 1), entry("CHANNEL_VALUES", "val1", 1), // turn 1
		entry("ARCHIVER_DATA", "hist2", 2), entry("CHANNEL_ADDRESSES", "ch2", 2), entry("CHANNEL_VALUES", "val2", 2))
	tests := []struct {
		name          string
		steps         []state.PlanStep
		history       bool
		this, earlier []string
	}{
		{"plan order, not type order: the channels before the archive", []state.PlanStep{
			step("ch2", "channel_finding", "CHANNEL_ADDRESSES"), step("hist2", "archiver_retrieval", "ARCHIVER_DATA", chans), respond},
			false, []string{"ch2", "hist2", "val2"}, nil},
		{"earlier turns are left out without history dependence", []state.PlanStep{
			step("hist2", "archiver_retrieval", "ARCHIVER_DATA", oldChans), respond},
			false, []string{"hist2", "ch2", "val2"}, nil},
		{"with history dependence only what a step read", []state.PlanStep{
			step("hist2", "archiver_retrieval", "ARCHIVER_DATA", oldChans), respond},
			true, []string{"hist2", "ch2", "val2"}, []string{"ch1"}},
		{"a replaced plan's output comes before the step reading it", []state.PlanStep{
			step("val2", "channel_read", "CHANNEL_VALUES", chans), step("hist2", "archiver_retrieval", "ARCHIVER_DATA"), respond},
			false, []string{"ch2", "val2", "hist2"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := state.State{Context: store, Turn: state.Turn{Number: 2, Task: &state.Task{Text: "t", DependsOnHistory: tt.history},
				Plan: &state.Plan{Number: 1, Steps: tt.steps}}}
			this, earlier := answerContext(s)
			var gotThis, gotEarlier []string
			for _, c := range this {
				gotThis = append(gotThis, c.Key)
			}
			for _, c := range earlier {
				gotEarlier = append(gotEarlier, c.Key)
			}
			if !slices.Equal(gotThis, tt.this) || !slices.Equal(gotEarlier, tt.earlier) {
				t.Errorf("this %v earlier %v; want %v and %v", gotThis, gotEarlier, tt.this, tt.earlier)
			}
		})
	}
}
