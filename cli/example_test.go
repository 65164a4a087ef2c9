package cli_test

import (
	"context"
	"os"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/config"
)

// An application gets every capgraph command (run, chat, serve, graph,
// capabilities, config check) from its own main.go: main would call
// cli.Main(app); here the command line is given explicitly.
func Example() {
	app := cli.App{
		Name: "greeter",
		Capabilities: func(cfg *config.Config) ([]capabilities.Capability, error) {
			greet := capabilities.Define(capabilities.Definition{
				Name:        "greeting",
				Description: "Greet the user warmly",
				Provides:    []string{"GREETING"},
				ClassifierGuide: &capabilities.ClassifierGuide{
					Instructions: "Use when the user says hello or asks for a greeting.",
					Examples:     []capabilities.ClassifierExample{{Query: "say hello", Result: true, Reason: "asks for a greeting"}},
				},
				Run: func(ctx context.Context, step capabilities.Step) (capabilities.Output, error) {
					return capabilities.Result("GREETING", "hello", "Hello from the greeting capability!"), nil
				},
			})
			return []capabilities.Capability{greet}, nil
		},
	}
	app.Run(context.Background(), cli.Env{
		Args:   []string{"--store", "memory", "run", "Please say hello"},
		Stdout: os.Stdout, // progress lines go to Stderr, here discarded
	})
	// Output:
	// (Offline mode: no language model was used; this answer is assembled from the capability results.)
	//
	// Results for: Please say hello
	//
	// • Hello from the greeting capability!
}

// Capabilities lists what an application registered.
func ExampleApp_Run_capabilities() {
	app := cli.App{Capabilities: func(*config.Config) ([]capabilities.Capability, error) {
		c := capabilities.Define(capabilities.Definition{
			Name: "beam_current", Description: "Read the beam current", Provides: []string{"BEAM_CURRENT"},
			Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
				return capabilities.Output{}, nil
			},
		})
		return []capabilities.Capability{c}, nil
	}}
	// A table as wide as the terminal (Width; 80 when it does not say), else a block per capability.
	app.Run(context.Background(), cli.Env{Args: []string{"capabilities"}, Stdout: os.Stdout, Width: 100})
	// Output:
	// NAME          PROVIDES      REQUIRES  RETRY                                          APPROVAL
	// beam_current  BEAM_CURRENT  -         3 attempts, 1s ×2 ≤30s, full jitter (default)  no
}
