package main

import (
	"context"
	"fmt"

	"github.com/capgraph/capgraph/capabilities"
)

// synthetic is the benchmark's synthetic registry: n capabilities of a
// facility's other systems, each with guides as long as the control
// room's (about 900 characters in the planner's prompt).
func synthetic(n int) ([]capabilities.Capability, error) {
	systems := []string{"magnet", "vacuum pump", "cooling water", "timing", "radiation monitor", "beamline shutter", "cryo plant", "power supply"}
	var out []capabilities.Capability
	for i := range n {
		system := systems[i%len(systems)]
		name, typ := fmt.Sprintf("system_%02d_lookup", i), fmt.Sprintf("SYSTEM_%02d_DATA", i)
		c := capabilities.Define(capabilities.Definition{Name: name, Provides: []string{typ},
			Description: fmt.Sprintf("Look up the configuration, limits and interlock state of %s group %d from the facility database: "+
				"calibrations, limits, the status of its controller and the last time it tripped.", system, i),
			ClassifierGuide: &capabilities.ClassifierGuide{
				Instructions: fmt.Sprintf("Select when the user asks about %s group %d's configuration, limits or interlocks, not about live machine values.", system, i),
				Examples: []capabilities.ClassifierExample{
					{Query: fmt.Sprintf("What are the limits of %s group %d?", system, i), Result: true},
					{Query: fmt.Sprintf("When did %s group %d last trip?", system, i), Result: true},
					{Query: "What is the beam current?", Result: false, Reason: "a live value"}}},
			OrchestratorGuide: &capabilities.OrchestratorGuide{Priority: 5,
				Instructions: fmt.Sprintf("Use %s for anything the facility database holds about %s group %d; it needs no channel names. "+
					"Give the group in parameters.group and what to look up in parameters.what (configuration, limits, interlocks or trips).", name, system, i),
				Examples: []capabilities.OrchestratorExample{{Scenario: fmt.Sprintf("the limits of %s group %d", system, i),
					Step: capabilities.PlannedStep{ContextKey: fmt.Sprintf("group_%d_limits", i), Capability: name,
						TaskObjective: fmt.Sprintf("Look up the limits of %s group %d", system, i), ExpectedOutput: typ,
						Parameters: map[string]any{"group": i, "what": "limits"}}, Notes: "one step per group"}}},
			Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
				return capabilities.Result(typ, i, "looked up"), nil
			}})
		out = append(out, c)
	}
	return out, nil
}
