// Command weather is capgraph's hello world: it starts a mock weather service
// on a loopback port that fails 30% of requests with 503, gives an offline
// agent one capability (current_weather) with its own retry policy, asks the
// demo questions and shows the retries recovering.
//
//	go run ./examples/weather
//
// With arguments it is the whole capgraph command line over the same
// capability and service, so the retries (and the failures no retry
// fixes) can be tried in a chat or on the web page:
//
//	go run ./examples/weather chat
//	go run ./examples/weather serve
//	go run ./examples/weather run "Is it raining in London?"
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/examples/weather/weather"
)

// seed decides which requests the mock service fails; with this one the
// demo questions meet several 503s.
const seed = 7

// appSeed is the service's seed for the commands (App): the first request
// fails, so even a single `run` shows a retry; the sixth and seventh fail
// too (two retries in a row, the second after the service's Retry-After).
const appSeed = 12

func main() {
	if len(os.Args) > 1 {
		cli.Main(App())
		return
	}
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

	// No models: the agent runs offline (lexical classifier, dependency
	// planner, template answers). Threads live in memory.
	a, err := agent.New(agent.Config{Capabilities: []capabilities.Capability{weather.NewCapability(&weather.Client{BaseURL: svc.URL()})}})
	if err != nil {
		return err
	}
	defer a.Close(context.Background()) //nolint:errcheck // every turn has ended by then
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
	fmt.Fprintf(w, "Try it yourself: %s chat (or serve, for the web page).\n", invocation())
	return nil
}

// Questions for chat and the web page: the demo questions (503s the
// retries absorb), then a city the service does not know (404: no retry,
// an error report listing the known cities) and a question without a city
// (the planner is asked again; offline it cannot find one, so the turn ends
// with a report that says so).
var questions = append(demoQuestions(), "What is the weather in Atlantis?", "What is the weather like?")

func demoQuestions() []string {
	out := make([]string, len(weather.Demo))
	for i, d := range weather.Demo {
		out[i] = d.Question
	}
	return out
}

// App is the weather example as a capgraph application: current_weather
// over a mock service this process starts on a loopback port (on first
// use, once), which fails 30% of requests with 503.
func App() cli.App {
	var (
		once   sync.Once
		client *weather.Client
		err    error
	)
	return cli.App{
		Name:     "weather",
		Summary:  "weather — capgraph's hello world: a flaky mock weather service whose 503s the retries absorb.",
		Examples: questions,
		Capabilities: func(*config.Config) ([]capabilities.Capability, error) {
			once.Do(func() {
				var svc *weather.Service
				// The service lives as long as the process: the commands
				// end with it.
				svc, err = weather.NewService(weather.ServiceConfig{Seed: appSeed})
				if err == nil {
					client = &weather.Client{BaseURL: svc.URL()}
				}
			})
			if err != nil {
				return nil, err
			}
			return []capabilities.Capability{weather.NewCapability(client)}, nil
		},
	}
}

// invocation is how this program was started, for the hint.
func invocation() string {
	bi, _ := debug.ReadBuildInfo()
	return cli.Invocation(os.Args[0], bi)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
