package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
)

// An agent over one capability, with the default infrastructure nodes
// running offline (no model configured). The capability fails FATAL when
// asked about the interlock, so the second turn ends with a typed error.
func ExampleAgent_Run() {
	beam, _ := capabilities.Define(capabilities.Definition{
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
	reg := capabilities.NewRegistry()
	if err := reg.Register(beam); err != nil {
		fmt.Println(err)
		return
	}
	a, err := agent.New(agent.Config{Registry: reg})
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
