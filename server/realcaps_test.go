package server

import (
	"context"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
)

// Capabilities and registries for the tests that serve a real (offline) agent.

// readBeamCurrent answers 401.5 mA; its classifier guide lets the offline
// classifier pick it for "what is the beam current?".
func readBeamCurrent(t *testing.T) capabilities.Capability {
	t.Helper()
	read := capabilities.Define(capabilities.Definition{
		Name: "read_beam_current", Description: "Read the beam current of the storage ring",
		Provides: []string{"BEAM_CURRENT"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use for questions about the beam current.",
			Examples: []capabilities.ClassifierExample{{Query: "what is the beam current?", Result: true, Reason: "asks for the beam current"}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("BEAM_CURRENT", 401.5, "beam current is 401.5 mA"), nil
		},
	})
	return read
}

// newRegistry registers caps, failing the test on any error.
func newRegistry(t *testing.T, caps ...capabilities.Capability) *capabilities.Registry {
	t.Helper()
	reg := capabilities.NewRegistry()
	for _, c := range caps {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}
