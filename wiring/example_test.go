package wiring_test

import (
	"context"
	"fmt"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/logging"
	"github.com/capgraph/capgraph/server"
	"github.com/capgraph/capgraph/wiring"
)

// A server-only deployment: the configuration file, the application's
// capabilities, and the server, without the terminal package.
func Example() {
	cfg, err := config.Parse([]byte("store: memory\nserver:\n  addr: 127.0.0.1:0\n"), "capgraph.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	beam := capabilities.Define(capabilities.Definition{Name: "beam_current", Description: "Read the beam current",
		Provides: []string{"BEAM_CURRENT"},
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("BEAM_CURRENT", 401.5, "the beam current is 401.5 mA"), nil
		}})
	rt, err := wiring.New(cfg, wiring.App{Name: "beamline", Capabilities: func(*config.Config) ([]capabilities.Capability, error) {
		return []capabilities.Capability{beam}, nil
	}}, wiring.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	sc, err := rt.ServerConfig(context.Background(), logging.Nop())
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := server.New(sc); err != nil {
		fmt.Println(err)
		return
	}
	a, _ := rt.Agent(context.Background())
	spec, _ := rt.StoreSpec()
	fmt.Println(a.Application(), spec, sc.Addr)
	// Output: beamline memory 127.0.0.1:0
}
