package nodes_test

import (
	"context"
	"fmt"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/state"
)

// With no model configured every node runs offline: the classifier matches
// words, the planner follows provides/requires.
func ExampleNew() {
	finding := capabilities.Define(capabilities.Definition{Name: "location_lookup", Provides: []string{"LOCATION"},
		Description: "Resolve a city name to coordinates.",
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Output{}, nil
		}})
	weather := capabilities.Define(capabilities.Definition{Name: "current_weather", Provides: []string{"WEATHER"},
		Requires:    []capabilities.Requirement{{Type: "LOCATION"}},
		Description: "Current weather (temperature, wind, rain) at a location.",
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Output{}, nil
		}})
	reg := capabilities.NewRegistry()
	_ = reg.Register(finding, weather)

	set, err := nodes.New(nodes.Config{Registry: reg})
	if err != nil {
		fmt.Println(err)
		return
	}
	s := state.NewTurn(state.State{}, "What's the weather in Berlin?", state.Options{}, time.Time{})
	for _, n := range []nodes.Node{set.TaskExtraction, set.Classifier, set.Orchestrator} {
		u, err := n.Run(context.Background(), s)
		if err != nil {
			fmt.Println(err)
			return
		}
		s, _ = state.Apply(s, u)
	}
	for i, st := range s.Turn.Plan.Steps {
		fmt.Println(i, st.Capability, st.Inputs, st.DependsOn)
	}
	// Output:
	// 0 location_lookup [] []
	// 1 current_weather [{LOCATION location_lookup_1}] [0]
	// 2 respond [] [0 1]
}
