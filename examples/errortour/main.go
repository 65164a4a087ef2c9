// Command errortour walks through every way a capgraph turn can fail — a
// transient failure that recovers, retries that run out, a failure that needs
// a new plan, one that needs a new capability selection, a critical failure,
// a fatal one, resource exhaustion that asks a human, and a failure a fallback
// absorbs — and prints what the user sees each time, error reports included.
// It runs offline: no LLM is needed.
//
//	go run ./examples/errortour
//
// With arguments it is the whole capgraph command line over the tour's
// capabilities, so each scenario can be tried in a chat or on the web page
// (the resource-exhaustion one asks you whether to try again):
//
//	go run ./examples/errortour chat
//	go run ./examples/errortour serve
//	go run ./examples/errortour run "Read the primary source"
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/examples/errortour/tour"
)

func main() {
	if len(os.Args) > 1 {
		cli.Main(App())
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "errortour:", err)
		os.Exit(1)
	}
}

// approvalAnswer is what the tour answers when a run asks a human (the quota
// scenario): no, so the run ends with its error report.
const approvalAnswer = "no"

// run takes the whole tour, printing each stop.
func run(ctx context.Context, w io.Writer) error {
	a, err := agent.New(agent.Config{Capabilities: tour.New().Capabilities()})
	if err != nil {
		return err
	}
	defer a.Close(context.Background()) //nolint:errcheck // every turn has ended by then
	for i, sc := range tour.Scenarios {
		rule := strings.Repeat("─", 72)
		fmt.Fprintf(w, "%s\n%d. %s — severity %s\n   %s\n   Expect: %s\n\n> %s\n", rule, i+1, sc.Capability, sc.Severity, sc.Description, sc.Outcome, sc.Question)
		thread := fmt.Sprintf("tour-%s", sc.Keyword)
		out, err := cli.Ask(ctx, a, agent.TurnRequest{Thread: thread, Input: sc.Question}, w)
		for err == nil && out.Status == agent.RunInterrupted && out.Approval != nil {
			if out.Message != nil {
				fmt.Fprintf(w, "%s\n", strings.TrimSpace(out.Message.Content))
			}
			fmt.Fprintf(w, "approve? %s\n", approvalAnswer)
			out, err = cli.Answer(ctx, a, thread, out.Approval, approvalAnswer, w)
		}
		if fe := (*agent.FatalError)(nil); errors.As(err, &fe) {
			// FATAL: no error node, no LLM; the caller gets a typed error.
			where := fe.Node
			if fe.Capability != "" {
				where = fe.Capability
			}
			fmt.Fprintf(w, "FATAL — the run stopped: fatal error in %s: %s\n", where, fe.Classification.UserMessage)
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", sc.Keyword, err)
		}
		if out.Message == nil {
			return fmt.Errorf("%s: the turn ended (%s) without a message", sc.Keyword, out.Status)
		}
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(out.Message.Content))
	}
	fmt.Fprintln(w, strings.Repeat("─", 72))
	bi, _ := debug.ReadBuildInfo()
	fmt.Fprintf(w, "Try each scenario yourself: %s chat (or serve, for the web page).\n", cli.Invocation(os.Args[0], bi))
	return nil
}

// App is the error tour as a capgraph application; its demo questions are
// the scenarios' questions, one per severity.
func App() cli.App {
	questions := make([]string, len(tour.Scenarios))
	for i, sc := range tour.Scenarios {
		questions[i] = sc.Question
	}
	return cli.App{
		Name:     "errortour",
		Summary:  "errortour — every way a capgraph turn can fail, one question each: " + strings.Join(questions, "; ") + ".",
		Examples: questions,
		Capabilities: func(*config.Config) ([]capabilities.Capability, error) {
			return tour.New().Capabilities(), nil
		},
	}
}
