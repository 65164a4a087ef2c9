// Command weather is capgraph's hello world: it starts a mock weather service
// on a loopback port that fails 30% of requests with 503, gives an offline
// agent one capability (current_weather) with its own retry policy, asks the
// demo questions and shows the retries recovering.
//
//	go run ./examples/weather
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/examples/weather/weather"
)

// seed decides which requests the mock service fails; with this one the
// demo questions meet several 503s.
const seed = 7

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, seed); err != nil {
		fmt.Fprintln(os.Stderr, "weather:", err)
		os.Exit(1)
	}
}

// run starts the service, asks every demo question and prints what happened.
func run(ctx context.Context, w io.Writer, seed int64) error {
	svc, err := weather.NewService(weather.ServiceConfig{Seed: seed})
	if err != nil {
		return err
	}
	defer svc.Close()
	fmt.Fprintf(w, "Mock weather service on %s (fails %.0f%% of requests with 503).\n", svc.URL(), weather.DefaultFailureRate*100)

	reg := capabilities.NewRegistry()
	if err := reg.Register(weather.NewCapability(&weather.Client{BaseURL: svc.URL()})); err != nil {
		return err
	}
	// No models: the agent runs offline (lexical classifier, dependency
	// planner, template answers). Threads live in memory.
	a, err := agent.New(agent.Config{Registry: reg})
	if err != nil {
		return err
	}
	for i, d := range weather.Demo {
		fmt.Fprintf(w, "\n> %s\n", d.Question)
		out, err := cli.Ask(ctx, a, agent.TurnRequest{Thread: fmt.Sprintf("weather-%d", i), Input: d.Question}, w)
		if err != nil {
			return err
		}
		if out.Message == nil {
			return fmt.Errorf("%q: the turn ended (%s) without an answer", d.Question, out.Status)
		}
		fmt.Fprintf(w, "%s\n", strings.TrimSpace(out.Message.Content))
		if out.Retries > 0 {
			fmt.Fprintf(w, "(recovered after %d %s)\n", out.Retries, plural(out.Retries, "retry", "retries"))
		}
	}
	reqs, fails := svc.Stats()
	fmt.Fprintf(w, "\nThe service answered %d requests, %d of them with 503; every question got its answer.\n", reqs, fails)
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
