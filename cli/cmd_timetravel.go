package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/state"
)

// Time travel from the terminal (docs/time-travel.md): a thread's kept
// checkpoints (history), a new thread from one of them (fork), the fork's
// turn run — under the configuration of this command line, which may be
// another than the original's (replay) — and two threads side by side
// (compare). Thread ids are the store's, as chat and run use them.

// cmdHistory lists a thread's kept checkpoints: `history THREAD`.
func cmdHistory(ctx context.Context, c *cmdEnv, args []string) error {
	fs := c.newFlags("[--json] THREAD")
	asJSON := fs.Bool("json", false, "the moments as JSON")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &UsageError{Command: "history", Problem: "one thread id is required"}
	}
	a, err := c.buildAgent(ctx, true)
	if err != nil {
		return &exitError{code: ExitInfrastructure, err: err}
	}
	h, err := a.History(ctx, pos[0])
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSONTo(c, h)
	}
	w := c.env.Stdout
	turn := -1
	for _, m := range h {
		if m.Turn != turn {
			turn = m.Turn
			if turn > 0 {
				fmt.Fprintf(w, "turn %d: %s\n", m.Turn, m.Input)
			}
		}
		line := fmt.Sprintf("  %s  %-10s %s", m.Time.UTC().Format(time.TimeOnly), m.Kind, m.Event)
		if len(m.Nodes) > 0 {
			line += "  [" + strings.Join(m.Nodes, ", ") + "]"
		}
		if m.Target != "" {
			line += "  target " + m.Target
		}
		fmt.Fprintln(w, line)
		fmt.Fprintf(w, "      checkpoint %s", m.Checkpoint)
		if m.Plan != nil {
			fmt.Fprintf(w, "  plan %d: %d step(s), %d result(s)", m.Plan.Number, len(m.Plan.Steps), len(m.Results))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(c.env.Stderr, "%d checkpoint(s) kept; each can be forked (%s fork %s --at CHECKPOINT)\n", len(h), c.env.Program, pos[0])
	return nil
}

// cmdFork makes a new thread from a kept checkpoint: `fork THREAD`.
func cmdFork(ctx context.Context, c *cmdEnv, args []string) error {
	fs := c.newFlags(`[--at CHECKPOINT] [--id NEW] [--input "edited message"] [--plan PLAN.json] [--target NAME] THREAD`)
	at := fs.String("at", "", "the checkpoint to fork from (history lists them; default: the latest)")
	id := fs.String("id", "", "the new thread's id (default: a new one)")
	input := fs.String("input", "", "replace the user message of the checkpoint's turn and start there")
	planFile := fs.String("plan", "", "replace the plan of the checkpoint's turn with this JSON file (a state.Plan)")
	target := fs.String("target", "", "the target its writes act on (default: the simulated one; live only when you name it)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &UsageError{Command: "fork", Problem: "one thread id is required"}
	}
	req := agent.ForkRequest{Thread: pos[0], Checkpoint: *at, NewThread: *id, Input: *input, Target: *target,
		Metadata: map[string]string{agent.MetaOwner: c.who()}}
	if *planFile != "" {
		b, err := os.ReadFile(*planFile)
		if err != nil {
			return &UsageError{Command: "fork", Problem: "--plan: " + err.Error()}
		}
		var p state.Plan
		if err := json.Unmarshal(b, &p); err != nil {
			return &UsageError{Command: "fork", Problem: "--plan " + *planFile + ": not a plan: " + err.Error()}
		}
		req.Plan = &p
	}
	a, err := c.buildAgent(ctx, true)
	if err != nil {
		return &exitError{code: ExitInfrastructure, err: err}
	}
	f, err := a.Fork(ctx, req)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.env.Stdout, f.Thread)
	where := "writes off"
	if f.Writes {
		where = "writes to the " + f.Target + " target"
	} else if f.Target != "" {
		where = "the " + f.Target + " target, whose writes are off"
	}
	next := "its turn ended; send it a new message with: " + c.env.Program + " chat --thread " + f.Thread
	if f.Input != "" || f.Resumable {
		next = "run it with: " + c.env.Program + " replay " + f.Thread
	}
	fmt.Fprintf(c.env.Stderr, "forked %s at %s (%s); %s\n", f.From, f.Checkpoint, where, next)
	return nil
}

// cmdReplay runs a fork's turn under this command line's configuration:
// `replay THREAD`, or with --conversation a new fork that re-runs every
// user message of THREAD.
func cmdReplay(ctx context.Context, c *cmdEnv, args []string) error {
	fs := c.newFlags("[--conversation] [--target NAME] [--answer yes|no] THREAD")
	conversation := fs.Bool("conversation", false, "re-run every user message of THREAD in a new fork")
	target := fs.String("target", "", "with --conversation: the target its writes act on (default: the simulated one)")
	answer := fs.String("answer", "", `answer approval requests with this ("yes" or "no") instead of stopping`)
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &UsageError{Command: "replay", Problem: "one thread id is required"}
	}
	if *answer != "" && !agent.ParseYes(*answer) && !agent.ParseNo(*answer) {
		return &UsageError{Command: "replay", Problem: fmt.Sprintf("--answer %q is neither a yes nor a no (say yes or no)", *answer)}
	}
	a, err := c.buildAgent(ctx, true)
	if err != nil {
		return &exitError{code: ExitInfrastructure, err: err}
	}
	thread := pos[0]
	var out Outcome
	if *conversation {
		f, seq, err := a.ReplayConversation(ctx, agent.ForkRequest{Thread: thread, Target: *target, Metadata: map[string]string{agent.MetaOwner: c.who()}}, c.who())
		if err != nil {
			return err
		}
		thread = f.Thread
		fmt.Fprintf(c.env.Stderr, "replaying %s as %s\n", pos[0], f.Thread)
		out, err = consume(seq, newProgress(c.env, *c.env.Terminal))
		if err != nil {
			return &exitError{code: ExitInfrastructure, err: runError(err)}
		}
	} else {
		if *target != "" {
			return &UsageError{Command: "replay", Problem: "--target is chosen when forking (fork --target); replay runs the fork as made"}
		}
		out, err = consume(a.Replay(ctx, thread, c.who()), newProgress(c.env, *c.env.Terminal))
		if err != nil {
			return &exitError{code: ExitInfrastructure, err: runError(err)}
		}
	}
	for *answer != "" && out.Status == agent.RunInterrupted && out.Approval != nil {
		fmt.Fprintf(c.env.Stderr, "approval needed: %s\nanswering %q\n", approvalQuestion(out.Approval), *answer)
		out, err = consume(a.Resume(ctx, thread, agent.Answer{ApprovalID: out.Approval.ID, Text: *answer, By: c.who()}), newProgress(c.env, *c.env.Terminal))
		if err != nil {
			return &exitError{code: ExitInfrastructure, err: runError(err)}
		}
	}
	printOutcome(c, out)
	fmt.Fprintf(c.env.Stdout, "\nthread %s (compare with: %s compare %s ORIGINAL)\n", thread, c.env.Program, thread)
	if out.Message == nil || out.Message.Kind != state.KindAnswer {
		return &exitError{code: ExitNotAnswered}
	}
	return nil
}

// cmdCompare sets two threads side by side: `compare LEFT RIGHT`.
func cmdCompare(ctx context.Context, c *cmdEnv, args []string) error {
	fs := c.newFlags("[--json] LEFT RIGHT")
	asJSON := fs.Bool("json", false, "the comparison as JSON")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return &UsageError{Command: "compare", Problem: "two thread ids are required: the original and its replay"}
	}
	a, err := c.buildAgent(ctx, true)
	if err != nil {
		return &exitError{code: ExitInfrastructure, err: err}
	}
	cmp, err := a.Compare(ctx, pos[0], pos[1])
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSONTo(c, cmp)
	}
	w := c.env.Stdout
	for _, p := range cmp.Pairs {
		fmt.Fprintf(w, "turn %d", p.Turn)
		if len(p.Differences) == 0 {
			fmt.Fprint(w, "  (the same)")
		} else {
			fmt.Fprint(w, "  differs in: "+strings.Join(p.Differences, ", "))
		}
		fmt.Fprintln(w)
		rows := [][3]string{{"", cmp.Left, cmp.Right}}
		for _, f := range compareFields {
			rows = append(rows, [3]string{f.name, reportField(p.Left, f.get), reportField(p.Right, f.get)})
		}
		width := [3]int{}
		for _, r := range rows {
			for i := range 2 {
				width[i] = max(width[i], displayWidth(r[i]))
			}
		}
		for _, r := range rows {
			fmt.Fprintf(w, "  %-*s  %-*s  %s\n", width[0], r[0], width[1], r[1], r[2])
		}
	}
	return nil
}

// compareFields are the rows of a comparison, in order.
var compareFields = []struct {
	name string
	get  func(*agent.TurnReport) string
}{
	{"input", func(r *agent.TurnReport) string { return r.Input }},
	{"status", func(r *agent.TurnReport) string { return r.Status }},
	{"route", func(r *agent.TurnReport) string { return strings.Join(r.Route, " → ") }},
	{"plans", func(r *agent.TurnReport) string { return fmt.Sprint(r.Plans) }},
	{"severities", func(r *agent.TurnReport) string { return strings.Join(r.Severities, ", ") }},
	{"approvals", func(r *agent.TurnReport) string { return strings.Join(r.Approvals, "; ") }},
	{"outcome", func(r *agent.TurnReport) string { return r.Outcome }},
	{"answer", func(r *agent.TurnReport) string { return answerLine(r.Answer) }},
	{"calls", func(r *agent.TurnReport) string { return fmt.Sprint(r.Calls) }},
	{"tokens", func(r *agent.TurnReport) string { return fmt.Sprint(r.Tokens) }},
	{"time", func(r *agent.TurnReport) string { return r.Duration.Round(time.Millisecond).String() }},
	{"target", func(r *agent.TurnReport) string { return r.Target }},
	{"writes", func(r *agent.TurnReport) string { return strings.Join(r.Writes, " ") }},
}

func reportField(r *agent.TurnReport, get func(*agent.TurnReport) string) string {
	if r == nil {
		return "—"
	}
	v := get(r)
	if v == "" {
		return "-"
	}
	return v
}

// answerLine is an answer's first line, cut to 80 characters.
func answerLine(s string) string {
	l := firstLine(s)
	if r := []rune(l); len(r) > 80 {
		return string(r[:79]) + "…"
	}
	return l
}

func writeJSONTo(c *cmdEnv, v any) error {
	enc := json.NewEncoder(c.env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
