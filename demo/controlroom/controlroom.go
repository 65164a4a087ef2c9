// Package controlroom is the capgraph command's default application, a
// demo: a simulated accelerator control room (package plant: about 250
// process variables with an archive) operated through channel_finding,
// channel_read, archiver_retrieval and channel_write. cmd/capgraph is this
// App, and so is the control-room example (examples/controlroom), which also
// asks the demo questions without a command line. It is not a library: the
// library's packages and their tests use fixtures of their own; the tests
// here are about this application (its demo questions, the phrasings it
// understands, its offline answers, its safety against injected plans).
package controlroom

import (
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/demo/controlroom/plant"
)

// Seed is the simulator's seed: the same machine (noise, drift) every start,
// so the demo answers are reproducible.
const Seed = 1

// App returns the control-room application. Writes to the simulated machine
// follow control_system.writes_enabled (off by default) and always ask a
// human first. With control_system.targets, each target (the demo's live
// and simulator) is a plant of its own, made alike: channel_read and
// channel_write act on the turn's target (docs/time-travel.md).
func App() cli.App {
	examples := make([]string, len(plant.Demo))
	for i, d := range plant.Demo {
		examples[i] = d.Question
	}
	return cli.App{
		Name:     "capgraph",
		Summary:  "capgraph — an agent for a (simulated) accelerator control room.",
		Examples: examples,
		Capabilities: func(cfg *config.Config) ([]capabilities.Capability, error) {
			if cfg != nil && len(cfg.ControlSystem.Targets) > 0 {
				targets := plant.Targets{}
				for name := range cfg.ControlSystem.Targets {
					p, err := plant.New(plant.Config{Seed: Seed})
					if err != nil {
						return nil, err
					}
					targets[name] = p
				}
				return plant.CapabilitiesOn(targets, cfg.ControlSystem.Target)
			}
			p, err := plant.New(plant.Config{Seed: Seed})
			if err != nil {
				return nil, err
			}
			return plant.Capabilities(p), nil
		},
	}
}
