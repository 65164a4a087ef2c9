package agent_test

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// A run cut mid-step (here: its caller canceled it; in production, a crash)
// is claimed under its thread's lease and resumed from its last checkpoint.
// While claimed, no other agent on the store can claim or run the thread.
func ExampleAgent_ClaimUnfinished() {
	var calls atomic.Int32
	read := capabilities.Define(capabilities.Definition{
		Name: "read_beam_current", Description: "Read the beam current", Provides: []string{"BEAM_CURRENT"},
		Run: func(ctx context.Context, step capabilities.Step) (capabilities.Output, error) {
			if calls.Add(1) == 1 { // the first execution is cut
				<-ctx.Done()
				return capabilities.Output{}, ctx.Err()
			}
			return capabilities.Result("BEAM_CURRENT", 401.5, "401.5 mA"), nil
		},
	})
	reg := capabilities.NewRegistry()
	_ = reg.Register(read)
	store := memory.New()
	a, _ := agent.New(agent.Config{Registry: reg, Store: store})
	other, _ := agent.New(agent.Config{Registry: reg, Store: store}) // another replica

	ctx, cancel := context.WithCancel(context.Background())
	for ev := range a.Run(ctx, agent.TurnRequest{Thread: "operator-1", Input: "beam current?"}) {
		if ev.Type == agent.EventStepStart && ev.Capability == "read_beam_current" {
			cancel()
		}
	}
	cancel()

	for cr, err := range a.ClaimUnfinished(context.Background()) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("claimed", cr.Thread)
		n := 0
		for range other.ClaimUnfinished(context.Background()) {
			n++
		}
		fmt.Println("the other replica claims", n)
		for ev, err := range cr.Resume(context.Background()) {
			if err == nil && ev.Type == agent.EventDone {
				fmt.Println("done:", ev.Status)
			}
		}
	}
	// Output:
	// claimed operator-1
	// the other replica claims 0
	// done: answered
}
