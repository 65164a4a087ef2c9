package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/state"
	"github.com/capgraph/capgraph/wiring"
)

// cmdRun answers one question: `run "question"`.
func cmdRun(ctx context.Context, c *cmdEnv, args []string) error {
	fs := c.newFlags(`[--thread ID] [--answer yes|no] "question"`)
	thread := fs.String("thread", "", "continue this thread (default: a new one)")
	answer := fs.String("answer", "", `answer approval requests with this ("yes" or "no") instead of stopping`)
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if *answer != "" && !agent.ParseYes(*answer) && !agent.ParseNo(*answer) {
		// Only an explicit yes approves: an answer given in advance must
		// be one (or a no), never words a model would have to read.
		return &UsageError{Command: "run", Problem: fmt.Sprintf("--answer %q is neither a yes nor a no (say yes or no)", *answer)}
	}
	question := strings.TrimSpace(strings.Join(pos, " "))
	if question == "" {
		return &UsageError{Command: "run", Problem: `a question is required, e.g. run "What is the beam current?"`}
	}
	a, err := c.buildAgent(ctx, true)
	if err != nil {
		return &exitError{code: ExitInfrastructure, err: err}
	}
	id := *thread
	if id == "" {
		id = newThreadID()
	}
	out, err := consume(a.Run(ctx, agent.TurnRequest{Thread: id, Input: question, By: c.who()}), newProgress(c.env, *c.env.Terminal))
	for err == nil && *answer != "" && out.Status == agent.RunInterrupted && out.Approval != nil {
		fmt.Fprintf(c.env.Stderr, "approval needed: %s\nanswering %q\n", approvalQuestion(out.Approval), *answer)
		out, err = consume(a.Resume(ctx, id, agent.Answer{ApprovalID: out.Approval.ID, Text: *answer, By: c.who()}), newProgress(c.env, *c.env.Terminal))
	}
	if err != nil {
		if ctx.Err() != nil && c.spec.Kind != wiring.StoreMemory {
			err = fmt.Errorf("interrupted: the run stopped at its last checkpoint (finish it with: %s chat --thread %s)", c.env.Program, id)
			return &exitError{code: ExitInfrastructure, err: err}
		}
		return &exitError{code: ExitInfrastructure, err: runError(err)}
	}
	printOutcome(c, out)
	switch {
	case out.Status == agent.RunInterrupted && c.spec.Kind == wiring.StoreMemory:
		fmt.Fprintf(c.env.Stderr, "the run waits for approval, but --store memory keeps nothing: use --answer yes|no, or a persistent store and %s chat --thread ID\n", c.env.Program)
	case out.Status == agent.RunInterrupted:
		fmt.Fprintf(c.env.Stderr, "thread %s waits for approval (answer with: %s chat --thread %s)\n", id, c.env.Program, id)
	case c.spec.Kind != wiring.StoreMemory:
		fmt.Fprintf(c.env.Stderr, "thread %s (continue with: %s chat --thread %s)\n", id, c.env.Program, id)
	}
	if out.Message == nil || out.Message.Kind != state.KindAnswer {
		return &exitError{code: ExitNotAnswered} // said on stdout already
	}
	return nil
}

// printOutcome prints the turn's assistant message to stdout.
func printOutcome(c *cmdEnv, out Outcome) {
	if out.Message != nil {
		fmt.Fprintln(c.env.Stdout, c.message(out.Message.Content))
	}
	if text := c.artifactText(out.Artifacts); text != "" {
		fmt.Fprint(c.env.Stdout, "\n"+text)
	}
	if text := outcomeLines(out.Outcomes); text != "" {
		fmt.Fprint(c.env.Stdout, "\n"+text)
	}
	if out.Status == agent.RunInterrupted && out.Message == nil && out.Approval != nil {
		fmt.Fprintf(c.env.Stdout, "Approval needed: %s\n", approvalQuestion(out.Approval))
	}
}

// message renders an assistant message's Markdown for stdout: styled on a
// terminal, plain text otherwise.
func (c *cmdEnv) message(md string) string {
	return renderMarkdown(strings.TrimRight(md, "\n"), *c.env.Terminal, c.env.width(), c.env.Getenv)
}

// runError turns a failed run into the command's error: a FATAL failure
// becomes its one-line reason.
func runError(err error) error {
	if reason, ok := fatalReason(err); ok {
		return errors.New(reason)
	}
	return err
}

func newThreadID() string {
	if id, err := uuid.NewV7(); err == nil {
		return id.String()
	}
	return uuid.NewString()
}
