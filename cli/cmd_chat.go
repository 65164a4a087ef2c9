package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/state"
	"github.com/capgraph/capgraph/wiring"
)

// cmdChat holds a conversation on one thread: `chat [--thread ID]`.
func cmdChat(ctx context.Context, c *cmdEnv, args []string) error {
	fs := c.newFlags("[--thread ID]")
	thread := fs.String("thread", "", "resume this thread (default: a new one)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &UsageError{Command: "chat", Problem: fmt.Sprintf("unexpected argument %q (ask questions at the prompt)", pos[0])}
	}
	a, err := c.buildAgent(ctx, true)
	if err != nil {
		return err
	}
	ch := &chat{c: c, a: a, in: bufio.NewScanner(c.env.Stdin), thread: *thread, opts: wiring.AgentOptions(c.cfg)}
	ch.in.Buffer(make([]byte, 64<<10), 1<<20)
	return ch.loop(ctx)
}

type chat struct {
	c      *cmdEnv
	a      *agent.Agent
	in     *bufio.Scanner
	thread string
	opts   state.Options
	last   Outcome
	// quit is set by /exit, also when typed at an approval prompt.
	quit bool
}

func (ch *chat) out(format string, args ...any) { fmt.Fprintf(ch.c.env.Stdout, format, args...) }

// readLine prompts and reads one line; ok is false at the end of input.
func (ch *chat) readLine(prompt string) (string, bool) {
	ch.out("%s", prompt)
	if !ch.in.Scan() {
		ch.out("\n")
		return "", false
	}
	return ch.in.Text(), true
}

func (ch *chat) loop(ctx context.Context) error {
	resumed := ch.thread != ""
	if ch.thread == "" {
		ch.thread = newThreadID()
	}
	ch.out("%s chat — thread %s\n", ch.c.app.Name, ch.thread)
	writeFacts(ch.c.env.Stdout, "  ", ch.c.facts(ctx), len("configuration:"))
	ch.out("/help for commands and demo questions, /exit to leave.\n")
	if resumed {
		if err := ch.resumeThread(ctx); err != nil {
			return err
		}
	}
	for !ch.quit {
		line, ok := ch.readLine("you> ")
		if !ok {
			return nil
		}
		r, ok := ch.commands(ctx, line)
		if !ok || ch.quit || strings.TrimSpace(r.Message) == "" {
			continue
		}
		if err := ch.turn(ctx, ch.a.Run(ctx, agent.TurnRequest{Thread: ch.thread, Input: r.Message, Options: agent.Exactly(ch.opts), By: ch.c.who()})); err != nil {
			return err
		}
	}
	return nil
}

// commands carries out a line's slash commands and returns what is left
// of it; ok is false when the line was refused (an unknown command, a
// switch the configuration does not allow): nothing of it is sent then.
func (ch *chat) commands(ctx context.Context, line string) (slashResult, bool) {
	r, err := parseSlash(line, ch.opts)
	if err != nil {
		ch.out("%v\n", err)
		return slashResult{}, false
	}
	// The configuration is the ceiling: a switch may only tighten it.
	if _, err := ch.a.TurnOptions(agent.TurnRequest{Options: agent.Exactly(r.Options)}); err != nil {
		ch.out("%v\n(nothing was changed or sent; change the configuration file to loosen a safety setting)\n", err)
		return slashResult{}, false
	}
	ch.opts = r.Options
	for _, n := range r.Notes {
		ch.out("(%s)\n", n)
	}
	for _, act := range r.Actions {
		switch act {
		case slashExit:
			ch.out("bye — resume with: %s chat --thread %s\n", ch.c.env.Program, ch.thread)
			ch.quit = true
			return r, true
		case slashHelp:
			ch.help()
		case slashClear:
			ch.thread, ch.last = newThreadID(), Outcome{}
			ch.out("(new conversation: thread %s)\n", ch.thread)
		case slashStatus:
			ch.status(ctx)
		}
	}
	return r, true
}

// turn shows one run and, while it stops for approval, asks the human and
// resumes it with the answer. An answer that decides nothing (neither a
// yes nor a no, agent.ErrApprovalUnclear) is asked again; one that cannot
// be used (the approval expired, was answered) is said, and the
// conversation goes on.
func (ch *chat) turn(ctx context.Context, events iter.Seq2[agent.Event, error]) error {
	for {
		out, err := consume(events, newProgress(ch.c.env, *ch.c.env.Terminal))
		if err != nil {
			if reason, ok := fatalReason(err); ok {
				// The conversation goes on: a FATAL failure ends the turn, not the session.
				ch.out("FATAL: %s\n", reason)
				return nil
			}
			ae, ok := errors.AsType[*agent.ApprovalError](err)
			if !ok {
				return err
			}
			if !errors.Is(ae, agent.ErrApprovalUnclear) || ae.Approval == nil {
				ch.out("The answer was not carried out: %s.\n", ae.Problem)
				return nil
			}
			ch.out("%q is neither a yes nor a no, so nothing was decided. Still waiting for your approval: %s\n", ae.Answer, ae.Approval.Summary)
			if events, ok = ch.ask(ctx, ae.Approval); !ok {
				return nil
			}
			continue
		}
		ch.last = out
		if out.Message != nil {
			ch.out("%s\n", ch.c.message(out.Message.Content))
		}
		if text := ch.c.artifactText(out.Artifacts); text != "" {
			ch.out("\n%s", text)
		}
		if text := outcomeLines(out.Outcomes); text != "" {
			ch.out("\n%s", text)
		}
		if out.Status != agent.RunInterrupted || out.Approval == nil {
			return nil
		}
		if out.Message == nil {
			ch.out("Approval needed: %s\n", approvalQuestion(out.Approval))
		}
		var ok bool
		if events, ok = ch.ask(ctx, out.Approval); !ok {
			return nil
		}
	}
}

// ask prompts for the answer to approval ap and returns the run resumed
// with it, as this user's; ok is false at the end of input, after /exit or
// /clear (the approval stays pending). A line starting with "/" is a
// command, never an answer: it is carried out (/status, /help, a switch)
// and the question is asked again.
func (ch *chat) ask(ctx context.Context, ap *state.Approval) (iter.Seq2[agent.Event, error], bool) {
	thread := ch.thread
	for {
		ans, ok := ch.readLine("approve? [yes/no] ")
		if !ok {
			ch.out("(the approval stays pending; resume with: %s chat --thread %s)\n", ch.c.env.Program, thread)
			return nil, false
		}
		if !strings.HasPrefix(strings.TrimSpace(ans), "/") {
			return ch.a.Resume(ctx, thread, agent.Answer{ApprovalID: ap.ID, Text: ans, By: ch.c.who()}), true
		}
		r, _ := ch.commands(ctx, ans)
		switch {
		case ch.quit:
			return nil, false
		case ch.thread != thread:
			ch.out("(the approval on thread %s stays pending; answer it with: %s chat --thread %s)\n", thread, ch.c.env.Program, thread)
			return nil, false
		case strings.TrimSpace(r.Message) != "":
			ch.out("(%q was not taken as an answer: answer yes or no on a line of its own)\n", strings.TrimSpace(r.Message))
		}
		ch.out("Still waiting for your approval: %s\n", ap.Summary)
	}
}

// resumeThread picks up a thread given with --thread: it shows where the
// conversation stands, asks a pending approval again, and finishes a run
// that a crash or an interrupt stopped.
func (ch *chat) resumeThread(ctx context.Context) error {
	s, status, err := ch.a.State(ctx, ch.thread)
	if errors.Is(err, agent.ErrUnknownThread) {
		ch.out("(thread %s is new)\n", ch.thread)
		return nil
	}
	if err != nil {
		return err
	}
	ch.out("(resuming a conversation of %d messages)\n", len(s.Messages))
	if m, ok := s.LastAssistant(); ok {
		ch.out("assistant (last): %s\n", firstLine(m.Content))
	}
	switch status {
	case agent.RunInterrupted:
		ap := pendingApproval(ctx, ch.a, ch.thread, s)
		if ap == nil {
			return nil
		}
		if !ap.Expires.IsZero() && !time.Now().Before(ap.Expires) {
			// Nobody answered in time: the approval ends as an expiry,
			// not as a rejection, and nobody is asked.
			if err := ch.a.ExpireApproval(ctx, ch.thread, ap.ID); err != nil {
				return err
			}
			ch.out("The approval (%s) expired at %s before anyone answered: nothing was done.\n", ap.Summary, ap.Expires.Local().Format(time.DateTime))
			return nil
		}
		ch.out("A step waits for your approval: %s\n", approvalQuestion(ap))
		events, ok := ch.ask(ctx, ap)
		if !ok {
			return nil
		}
		return ch.turn(ctx, events)
	case agent.RunCanceled:
		ch.out("(the last run was interrupted; finishing it)\n")
		return ch.turn(ctx, ch.a.Resume(ctx, ch.thread, agent.Answer{}))
	}
	return nil
}

func (ch *chat) help() {
	ch.out("%s\n", chatHelp)
	if len(ch.c.app.Examples) > 0 {
		ch.out("Try:\n")
		for _, q := range ch.c.app.Examples {
			ch.out("  %s\n", q)
		}
	}
}

func (ch *chat) status(ctx context.Context) {
	o := ch.opts
	ch.out("thread: %s\nstore: %s\n", ch.thread, ch.c.spec)
	ch.out("options: plan approval %s, approval mode %s, capability selection %s, task extraction %s, writes %s\n",
		word(o.PlanApproval), orDefault(o.ApprovalMode, "selective"), word(!o.SkipClassification), word(!o.SkipTaskExtraction), word(o.WritesEnabled))
	s, status, err := ch.a.State(ctx, ch.thread)
	if err != nil {
		ch.out("no turn yet on this thread\n")
		return
	}
	ch.out("messages: %d; last run: %s\n", len(s.Messages), status)
	if s.Turn.Task != nil {
		ch.out("last task: %s\n", s.Turn.Task.Text)
	}
	ch.out("%s", planText(s))
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// pendingApproval returns what an interrupted thread waits for: the turn's
// pending approval, else the payload of the interrupt recorded in its last
// checkpoint (escalations are asked that way).
func pendingApproval(ctx context.Context, a *agent.Agent, thread string, s state.State) *state.Approval {
	if s.Turn.PendingApproval != nil {
		return s.Turn.PendingApproval
	}
	_, tuple, err := a.Graph().State(ctx, thread)
	if err != nil {
		return nil
	}
	for _, in := range graph.Interrupts(tuple) {
		var ap state.Approval
		if json.Unmarshal(in.Payload, &ap) == nil && ap.ID != "" {
			return &ap
		}
	}
	return nil
}
