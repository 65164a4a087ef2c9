package docstest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
)

// What docs/writing-capabilities.md says of a capability without a
// classifier guide, on a compiled agent: offline it is judged on its name
// and description — selected for a question that uses their words, not for
// one that does not.
func TestCapabilityWithoutGuideIsSelectedByItsDescription(t *testing.T) {
	define := func(name, desc, typ string) capabilities.Capability {
		c := capabilities.Define(capabilities.Definition{Name: name, Description: desc, Provides: []string{typ},
			Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
				return capabilities.Result(typ, 1.0, name+" ran"), nil
			}})
		return c
	}
	reg := capabilities.NewRegistry()
	if err := reg.Register(
		define("magnet_setpoint", "Read the present setpoint of a magnet (Q1, Q2, B1) in amperes.", "MAGNET_SETPOINT"),
		define("beam_current", "Read the stored beam current of the storage ring in milliamperes.", "BEAM_CURRENT"),
	); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Registry: reg}) // no models: offline
	if err != nil {
		t.Fatal(err)
	}
	selected := func(q string) []string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var caps []string
		for e, err := range a.Run(ctx, agent.TurnRequest{Thread: fmt.Sprint(time.Now().UnixNano()), Input: q}) {
			if err != nil {
				t.Fatalf("%q: %v", q, err)
			}
			if e.Type == agent.EventCapabilities {
				caps = e.Capabilities
			}
		}
		return caps
	}
	for _, q := range []string{"What is the setpoint of magnet Q1?", "setpoint of Q2 please", "what's the magnet setpoint for B1"} {
		if got := selected(q); !slices.Contains(got, "magnet_setpoint") || slices.Contains(got, "beam_current") {
			t.Errorf("%q selected %v, want magnet_setpoint alone", q, got)
		}
	}
	if got := selected("What is the beam current?"); slices.Contains(got, "magnet_setpoint") || !slices.Contains(got, "beam_current") {
		t.Errorf("the beam current question selected %v", got)
	}
}
