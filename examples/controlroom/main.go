// Command controlroom is the control-room example: the capgraph command's
// default demo application (package demo/controlroom, a simulated
// accelerator operated through channel_finding, channel_read,
// archiver_retrieval and channel_write) driven by a program of its own.
//
// Without arguments it asks the demo questions and prints the answers:
//
//	go run ./examples/controlroom
//
// With arguments it is the full capgraph command line over the same
// capabilities (it is the same application as cmd/capgraph):
//
//	go run ./examples/controlroom chat
//	go run ./examples/controlroom serve
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/demo/controlroom"
	"github.com/capgraph/capgraph/demo/controlroom/plant"
	"github.com/capgraph/capgraph/state"
)

func main() {
	if len(os.Args) > 1 {
		cli.Main(controlroom.App())
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := demo(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "controlroom:", err)
		os.Exit(1)
	}
}

// demo asks every demo question of plant.Demo on its own thread and prints
// the answer. Writes are enabled for the demo (the simulated machine is the
// only thing written to); a write that asks for approval is approved.
func demo(ctx context.Context, w io.Writer) error {
	p, err := plant.New(plant.Config{Seed: controlroom.Seed})
	if err != nil {
		return err
	}
	a, err := agent.New(agent.Config{Capabilities: plant.Capabilities(p), Options: state.Options{ApprovalMode: "selective", WritesEnabled: true}})
	if err != nil {
		return err
	}
	defer a.Close(context.Background()) //nolint:errcheck // every turn has ended by then
	fmt.Fprintf(w, "Simulated machine: %d channels. Offline mode: no LLM is used.\n", len(p.Channels()))
	// Say why this demo writes while serve and chat refuse by default.
	bi, _ := debug.ReadBuildInfo()
	fmt.Fprintf(w, "Writes are enabled in this demo, each one approved by this program: the only thing written to\n"+
		"is the simulated machine. The commands (%s serve|chat|run) refuse writes until\n"+
		"control_system.writes_enabled: true is set in capgraph.yaml, and then ask a human to approve each change.\n", cli.Invocation(os.Args[0], bi))
	for i, d := range plant.Demo {
		thread := fmt.Sprintf("demo-%d", i)
		fmt.Fprintf(w, "\n> %s\n", d.Question)
		out, err := cli.Ask(ctx, a, agent.TurnRequest{Thread: thread, Input: d.Question}, nil)
		for err == nil && out.Status == agent.RunInterrupted && out.Approval != nil {
			fmt.Fprintf(w, "approval needed: %s\napprove? yes\n", out.Approval.Summary)
			out, err = cli.Answer(ctx, a, thread, out.Approval, "yes", nil)
		}
		if err != nil {
			return fmt.Errorf("%q: %w", d.Question, err)
		}
		if out.Message == nil {
			return fmt.Errorf("%q: the turn ended (%s) without an answer", d.Question, out.Status)
		}
		fmt.Fprintf(w, "%s\n", strings.TrimSpace(out.Message.Content))
	}
	return nil
}
