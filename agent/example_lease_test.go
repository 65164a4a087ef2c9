package agent_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// Two replicas share one store (here a memory store; in production a
// postgres.Store per replica on one database). While replica-b holds a
// thread's lease, replica-a finds the thread busy and learns who holds it.
func ExampleLeaseConfig() {
	echo := capabilities.Define(capabilities.Definition{
		Name: "read_beam_current", Description: "Read the beam current", Provides: []string{"BEAM_CURRENT"},
		Run: func(ctx context.Context, step capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("BEAM_CURRENT", 401.5, "401.5 mA"), nil
		},
	})
	reg := capabilities.NewRegistry()
	_ = reg.Register(echo)
	store := memory.New()
	a, err := agent.New(agent.Config{Registry: reg, Store: store,
		Leases: agent.LeaseConfig{Owner: "replica-a", TTL: 30 * time.Second}})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	held, _ := store.AcquireLease(ctx, "operator-1", "replica-b", time.Minute) // replica-b is running it

	for _, err := range a.Run(ctx, agent.TurnRequest{Thread: "operator-1", Input: "beam current?"}) {
		var lh *checkpoint.LeaseHeldError
		if errors.Is(err, graph.ErrThreadBusy) && errors.As(err, &lh) {
			fmt.Println("busy; held by", lh.Holder)
		}
	}
	_ = store.ReleaseLease(ctx, held) // replica-b's run ended
	for ev, err := range a.Run(ctx, agent.TurnRequest{Thread: "operator-1", Input: "beam current?"}) {
		if err == nil && ev.Type == agent.EventDone {
			fmt.Println("done:", ev.Status)
		}
	}
	// Output:
	// busy; held by replica-b
	// done: answered
}
