// Package controlroom is the capgraph command's default application: the
// control-room example's simulated accelerator and its four capabilities
// (channel_finding, channel_read, archiver_retrieval, channel_write) as a
// cli.App. cmd/capgraph and examples/controlroom are both this App.
package controlroom

import (
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/examples/controlroom/plant"
)

// Seed is the simulator's seed: the same machine (noise, drift) every start,
// so the demo answers are reproducible.
const Seed = 1

// App returns the control-room application. Writes to the simulated machine
// follow control_system.writes_enabled (off by default) and always ask a
// human first.
func App() cli.App {
	examples := make([]string, len(plant.Demo))
	for i, d := range plant.Demo {
		examples[i] = d.Question
	}
	return cli.App{
		Name:     "capgraph",
		Summary:  "capgraph — an agent for a (simulated) accelerator control room.",
		Examples: examples,
		Capabilities: func(*config.Config) ([]capabilities.Capability, error) {
			p, err := plant.New(plant.Config{Seed: Seed})
			if err != nil {
				return nil, err
			}
			return plant.Capabilities(p), nil
		},
	}
}
