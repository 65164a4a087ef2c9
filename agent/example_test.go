package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

// An agent over one capability, with the default infrastructure nodes
// running offline (no model configured). The capability fails FATAL when
// asked about the interlock, so the second turn ends with a typed error.
func ExampleAgent_Run() {
	beam := capabilities.Define(capabilities.Definition{
		Name: "read_beam_current", Description: "Read the beam current of the storage ring",
		Provides: []string{"BEAM_CURRENT"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Questions about the beam current or the interlock.",
			Examples: []capabilities.ClassifierExample{{Query: "what is the beam current?", Result: true, Reason: "beam current"}}},
		Run: func(ctx context.Context, step capabilities.Step) (capabilities.Output, error) {
			if strings.Contains(step.Task, "interlock") {
				return capabilities.Output{}, capabilities.NewError(capabilities.Fatal, capabilities.KindLimitViolation, "the interlock is tripped", nil)
			}
			return capabilities.Result("BEAM_CURRENT", 401.5, "beam current is 401.5 mA"), nil
		},
	})
	a, err := agent.New(agent.Config{Capabilities: []capabilities.Capability{beam}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, input := range []string{"What is the beam current of the storage ring?", "Check the beam current interlock of the storage ring"} {
		for ev, err := range a.Run(context.Background(), agent.TurnRequest{Thread: "operator-1", Input: input}) {
			switch {
			case err != nil:
				var fe *agent.FatalError
				fmt.Println("fatal:", errors.As(err, &fe), fe.Capability, fe.Classification.UserMessage)
			case ev.Type == agent.EventMessage:
				fmt.Println("message:", ev.Message.Kind)
			case ev.Type == agent.EventDone:
				fmt.Println("done:", ev.Status)
			}
		}
	}
	// Output:
	// message: answer
	// done: answered
	// fatal: true read_beam_current the interlock is tripped
}

// A write that needs a human's approval: the run stops (nothing waits in
// memory), the approval is read from the thread's state, and Resume carries
// the answer. Answering the same approval again is refused: the write runs once.
func ExampleAgent_Resume() {
	writes := 0
	setpoint := capabilities.Define(capabilities.Definition{
		Name: "set_rf_voltage", Description: "Set the RF voltage of the storage ring",
		Provides: []string{"SETPOINT"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Requests to set or change the RF voltage.",
			Examples: []capabilities.ClassifierExample{{Query: "set the rf voltage to 5 kV", Result: true, Reason: "a setpoint"}}},
		Approval: func(capabilities.Step) (bool, string) { return true, "set SR:RF:VOLT from 4.80 kV to 5.00 kV" },
		Run: func(ctx context.Context, step capabilities.Step) (capabilities.Output, error) {
			if !step.WritesEnabled {
				return capabilities.Output{}, capabilities.ErrWritesDisabled
			}
			writes++
			return capabilities.Result("SETPOINT", 5.0, "SR:RF:VOLT set to 5.00 kV"), nil
		},
	})
	reg := capabilities.NewRegistry()
	if err := reg.Register(setpoint); err != nil {
		fmt.Println(err)
		return
	}
	a, err := agent.New(agent.Config{Registry: reg, Options: state.Options{WritesEnabled: true}})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for ev := range a.Run(ctx, agent.TurnRequest{Thread: "operator-2", Input: "Set the RF voltage of the storage ring to 5 kV"}) {
		if ev.Type == agent.EventDone {
			fmt.Println("done:", ev.Status)
		}
	}
	s, _, _ := a.State(ctx, "operator-2")
	ap := s.Turn.PendingApproval
	fmt.Println("asks:", ap.Kind, ap.Summary)
	for ev := range a.Resume(ctx, "operator-2", agent.Answer{ApprovalID: ap.ID, Text: "yes"}) {
		if ev.Type == agent.EventDone {
			fmt.Println("done:", ev.Status)
		}
	}
	for _, err := range a.Resume(ctx, "operator-2", agent.Answer{ApprovalID: ap.ID, Text: "yes"}) {
		if err != nil {
			fmt.Println("again:", errors.Is(err, agent.ErrApprovalAnswered))
		}
	}
	fmt.Println("writes:", writes)
	// Output:
	// done: interrupted
	// asks: step set SR:RF:VOLT from 4.80 kV to 5.00 kV
	// done: answered
	// again: true
	// writes: 1
}
