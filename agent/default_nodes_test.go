package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

// TestDefaultNodesOffline runs the real infrastructure nodes (offline: no
// model configured) with a capability that fails once with a timeout.
func TestDefaultNodesOffline(t *testing.T) {
	calls := 0
	c := capabilities.Define(capabilities.Definition{
		Name: "read_beam_current", Description: "Read the beam current of the storage ring",
		Provides: []string{"BEAM_CURRENT"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use for questions about the beam current.",
			Examples: []capabilities.ClassifierExample{{Query: "what is the beam current?", Result: true, Reason: "asks for the beam current"}}},
		Retry: capabilities.RetryPolicy{MaxAttempts: 2, InitialInterval: 1, Jitter: capabilities.JitterNone},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			calls++
			if calls == 1 {
				return capabilities.Output{}, context.DeadlineExceeded
			}
			return capabilities.Result("BEAM_CURRENT", 401.5, "beam current is 401.5 mA"), nil
		},
	})
	reg := capabilities.NewRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	// KeepIntermediate: checkReplay reads every step's checkpoint.
	a := mustAgent(t, agent.Config{Registry: reg, KeepIntermediate: -1})
	o := run(t, a, "t", "What is the beam current of the storage ring?")
	if o.err != nil {
		t.Fatal(o.err)
	}
	m := o.message()
	if m == nil || m.Kind != state.KindAnswer || !strings.Contains(m.Content, "401.5") {
		t.Fatalf("message %+v\nevents %+v", m, o.events)
	}
	if calls != 2 {
		t.Fatalf("capability ran %d times", calls)
	}
	for _, typ := range []agent.EventType{agent.EventTask, agent.EventCapabilities, agent.EventPlan, agent.EventStatus, agent.EventToken, agent.EventRetry} {
		if o.count(typ) == 0 {
			t.Errorf("no %s event", typ)
		}
	}
	checkReplay(t, a, "t")
}
