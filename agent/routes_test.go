package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/state"
)

var (
	errTimeout  = fmt.Errorf("read: %w", context.DeadlineExceeded)
	errReplan   = capabilities.NewError(capabilities.Replanning, capabilities.KindNotFound, "channel not found", nil)
	errReclass  = capabilities.NewError(capabilities.Reclassification, capabilities.KindInvalidInput, "wrong capability for this", nil)
	errCritical = capabilities.NewError(capabilities.Critical, capabilities.KindAuth, "permission denied", nil)
	errFatal    = capabilities.NewError(capabilities.Fatal, capabilities.KindLimitViolation, "interlock tripped", nil)
	errResource = fmt.Errorf("disk: %w", capabilities.ErrResourceExhausted)
)

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

// finalState returns the thread's state and checks the one-message rule.
func finalState(t *testing.T, a *agent.Agent, thread string) state.State {
	t.Helper()
	s, _, err := a.State(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	if n := countAssistant(s, s.Turn.Number); n != 1 {
		t.Fatalf("turn has %d assistant messages, want exactly 1", n)
	}
	return s
}

func wantReport(t *testing.T, o outcome, contains ...string) {
	t.Helper()
	if o.err != nil {
		t.Fatalf("unexpected error %v", o.err)
	}
	m := o.message()
	if m == nil || m.Kind != state.KindErrorReport || m.Report == nil {
		t.Fatalf("want an error report with its structured report, got %+v", m)
	}
	// The operator's Markdown and the structured report (its developer
	// details included) together hold the facts.
	b, err := json.Marshal(m.Report)
	if err != nil {
		t.Fatal(err)
	}
	all := m.Content + "\n" + string(b)
	for _, c := range contains {
		if !strings.Contains(all, c) {
			t.Fatalf("report lacks %q:\n%s\n%s", c, m.Content, b)
		}
	}
}

func wantAnswer(t *testing.T, o outcome, contains ...string) {
	t.Helper()
	if o.err != nil {
		t.Fatalf("unexpected error %v", o.err)
	}
	m := o.message()
	if m == nil || m.Kind != state.KindAnswer {
		t.Fatalf("want an answer, got %+v", m)
	}
	for _, c := range contains {
		if !strings.Contains(m.Content, c) {
			t.Fatalf("answer lacks %q:\n%s", c, m.Content)
		}
	}
}

func TestRoutes(t *testing.T) {
	tests := []struct {
		name  string
		setup func(w *world, cfg *agent.Config)
		check func(t *testing.T, w *world, a *agent.Agent, o outcome)
	}{
		{"retriable recovers and the answer says so", func(w *world, cfg *agent.Config) {
			w.caps["read_a"].errs = repeat(errTimeout, 2)
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			wantAnswer(t, o, "succeeded after 3 attempts")
			if n := w.caps["read_a"].count(); n != 3 {
				t.Fatalf("read_a ran %d times", n)
			}
			if n := o.count(agent.EventRetry); n != 2 {
				t.Fatalf("%d retry events", n)
			}
			s := finalState(t, a, "t")
			if st := s.Turn.Plan.Steps[0]; !st.Recovered || st.Attempts != 3 || st.Error != nil || s.Turn.Control.Error != nil {
				t.Fatalf("step %+v control %+v", st, s.Turn.Control)
			}
		}},
		{"retriable exhausts max_attempts", func(w *world, cfg *agent.Config) {
			w.caps["read_a"].errs = repeat(errTimeout, 10)
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			wantReport(t, o, "(severity: retriable)", "max_attempts", "read_a")
			if n := w.caps["read_a"].count(); n != 3 {
				t.Fatalf("read_a ran %d times, policy allows 3", n)
			}
		}},
		{"replanning until the planning budget is spent", func(w *world, cfg *agent.Config) {
			w.caps["read_a"].errs = repeat(errReplan, 10)
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			wantReport(t, o, "(severity: replanning)", "max_planning_attempts", "channel not found")
			s := finalState(t, a, "t")
			if s.Turn.Control.PlansCreated != 2 || w.orchestrate.count() != 2 || w.caps["read_a"].count() != 2 {
				t.Fatalf("plans %d orchestrator %d read_a %d", s.Turn.Control.PlansCreated, w.orchestrate.count(), w.caps["read_a"].count())
			}
		}},
		{"replanning recovers", func(w *world, cfg *agent.Config) {
			w.caps["read_a"].errs = []error{errReplan}
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			wantAnswer(t, o, "read_a ok")
			if s := finalState(t, a, "t"); s.Turn.Plan.Number != 2 {
				t.Fatalf("plan number %d", s.Turn.Plan.Number)
			}
		}},
		{"reclassification until its budget is spent", func(w *world, cfg *agent.Config) {
			w.caps["read_a"].errs = repeat(errReclass, 10)
			cfg.Limits.MaxPlanningAttempts = 5
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			wantReport(t, o, "(severity: reclassification)", "max_reclassifications")
			s := finalState(t, a, "t")
			if s.Turn.Control.Reclassifications != 1 || w.classify.count() != 2 {
				t.Fatalf("reclassifications %d classifier runs %d", s.Turn.Control.Reclassifications, w.classify.count())
			}
			if s.Turn.Control.ReclassificationReason == "" {
				t.Fatal("reclassification reason not kept")
			}
		}},
		{"reclassification shares the planning budget", func(w *world, cfg *agent.Config) {
			w.caps["read_a"].errs = repeat(errReclass, 10)
			cfg.Limits.MaxPlanningAttempts = 1
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			wantReport(t, o, "max_planning_attempts")
			if n := w.orchestrate.count(); n != 1 {
				t.Fatalf("orchestrator ran %d times", n)
			}
		}},
		{"critical goes straight to the error node", func(w *world, cfg *agent.Config) {
			w.caps["read_a"].errs = []error{errCritical}
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			wantReport(t, o, "(severity: critical)", "**What failed:** Step 1 (do read_a_out): permission denied")
			if n := w.caps["read_a"].count(); n != 1 {
				t.Fatalf("read_a ran %d times", n)
			}
		}},
		{"a capability panic is critical", func(w *world, cfg *agent.Config) {
			w.caps["read_a"].errs = []error{errPanic}
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			wantReport(t, o, "(severity: critical)", `"error":"panic: scripted capability panic"`)
		}},
		{"fatal returns a typed error and no message", func(w *world, cfg *agent.Config) {
			w.caps["read_a"].errs = []error{errFatal}
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			var fe *agent.FatalError
			if !errors.As(o.err, &fe) || !errors.Is(o.err, agent.ErrFatal) || fe.Capability != "read_a" {
				t.Fatalf("err %v", o.err)
			}
			if o.message() != nil || o.last().Type != agent.EventDone || o.last().Status != agent.RunFailed {
				t.Fatalf("events %+v", o.events)
			}
			s, st, _ := a.State(context.Background(), "t")
			if st != agent.RunFailed || countAssistant(s, s.Turn.Number) != 0 {
				t.Fatalf("status %s", st)
			}
		}},
		{"fatal from an infrastructure node", func(w *world, cfg *agent.Config) {
			w.classify.errs = []error{errFatal}
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			var fe *agent.FatalError
			if !errors.As(o.err, &fe) || fe.Node != state.NodeClassifier {
				t.Fatalf("err %v", o.err)
			}
		}},
		{"infrastructure retries are counted and bounded", func(w *world, cfg *agent.Config) {
			w.orchestrate.errs = repeat(errTimeout, 10)
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			wantReport(t, o, "orchestrator", "max_attempts")
			if n := w.orchestrate.count(); n != 3 {
				t.Fatalf("orchestrator ran %d times", n)
			}
		}},
		{"the error flag is cleared after a success", func(w *world, cfg *agent.Config) {
			w.task.errs = []error{errTimeout}
			w.classify.errs = []error{errTimeout}
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			wantAnswer(t, o)
			s := finalState(t, a, "t")
			if s.Turn.Control.Error != nil || len(s.Turn.Control.Retries) != 0 || w.task.count() != 2 || w.classify.count() != 2 {
				t.Fatalf("control %+v task %d classify %d", s.Turn.Control, w.task.count(), w.classify.count())
			}
		}},
		{"an invalid plan uses up the planning budget", func(w *world, cfg *agent.Config) {
			w.orchestrate.errs = repeat(capabilities.NewError(capabilities.Replanning, capabilities.KindFormat, "plan names unknown inputs", nil), 10)
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			wantReport(t, o, "max_planning_attempts")
			if n := w.orchestrate.count(); n != 2 {
				t.Fatalf("orchestrator ran %d times", n)
			}
		}},
		{"clarify failure is retried, then the error node", func(w *world, cfg *agent.Config) {
			w.plan = func(int, state.State) []state.PlanStep { return []state.PlanStep{step(state.NodeClarify, "q")} }
			w.clarify.errs = repeat(errTimeout, 10)
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			wantReport(t, o, "clarify")
			if n := w.clarify.count(); n != 3 {
				t.Fatalf("clarify ran %d times", n)
			}
		}},
		{"clarify recovers after a retry", func(w *world, cfg *agent.Config) {
			w.plan = func(int, state.State) []state.PlanStep { return []state.PlanStep{step(state.NodeClarify, "q")} }
			w.clarify.errs = []error{errTimeout}
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			if m := o.message(); m == nil || m.Kind != state.KindClarification {
				t.Fatalf("message %+v", m)
			}
		}},
		{"respond that writes nothing ends in the error node", func(w *world, cfg *agent.Config) {
			cfg.Respond = &fnNode{name: state.NodeRespond, run: func(context.Context, state.State) (state.Update, error) { return state.Update{}, nil }}
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			wantReport(t, o, "respond finished without writing a message")
		}},
		{"nothing runs after a terminal step mid-plan", func(w *world, cfg *agent.Config) {
			w.plan = func(int, state.State) []state.PlanStep {
				return []state.PlanStep{step("read_a", "a"), step(state.NodeClarify, "q"), step("read_b", "b"), step(state.NodeRespond, "r")}
			}
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			if m := o.message(); m == nil || m.Kind != state.KindClarification {
				t.Fatalf("message %+v", m)
			}
			if w.caps["read_b"].count() != 0 || w.caps["read_a"].count() != 1 {
				t.Fatalf("read_a %d read_b %d", w.caps["read_a"].count(), w.caps["read_b"].count())
			}
		}},
		{"a plan without a terminal step ends in respond", func(w *world, cfg *agent.Config) {
			w.plan = func(int, state.State) []state.PlanStep { return []state.PlanStep{step("read_a", "a")} }
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			wantAnswer(t, o, "read_a ok")
		}},
		{"an unknown capability in a plan goes to the error node", func(w *world, cfg *agent.Config) {
			w.plan = func(int, state.State) []state.PlanStep {
				return []state.PlanStep{step("made_up", "a"), step(state.NodeRespond, "r")}
			}
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			wantReport(t, o, "made_up")
		}},
		{"a fallback stands in and the answer names it", func(w *world, cfg *agent.Config) {
			w.caps["read_a"].errs = repeat(errCritical, 10)
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			wantAnswer(t, o, "used the fallback read_b because read_a failed")
			s := finalState(t, a, "t")
			if st := s.Turn.Plan.Steps[0]; st.Fallback != "read_b" || st.Status != state.StepDone {
				t.Fatalf("step %+v", st)
			}
		}},
		{"node step limit", func(w *world, cfg *agent.Config) {
			cfg.Limits.MaxNodeSteps = 4
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			wantReport(t, o, "max_node_steps")
			if s := finalState(t, a, "t"); s.Turn.Control.NodeSteps != 5 {
				t.Fatalf("node steps %d (4 + the error node)", s.Turn.Control.NodeSteps)
			}
		}},
		{"token budget", func(w *world, cfg *agent.Config) {
			w.tokens = 100
			cfg.Limits.MaxTokensPerTurn = 250
		}, func(t *testing.T, w *world, a *agent.Agent, o outcome) {
			wantReport(t, o, "max_tokens")
			if w.caps["read_a"].count() != 0 {
				t.Fatal("a capability ran after the token budget was spent")
			}
			if last := o.events[len(o.events)-2]; last.Type != agent.EventUsage || last.Usage.TotalTokens != 300 {
				t.Fatalf("usage event %+v", last)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld("read_a", "read_b")
			if strings.Contains(tc.name, "fallback") {
				w.fallback["read_a"] = []string{"read_b"}
				w.plan = func(int, state.State) []state.PlanStep {
					return []state.PlanStep{step("read_a", "a"), step(state.NodeRespond, "r")}
				}
			}
			cfg := w.config(t)
			cfg.KeepIntermediate = -1 // checkReplay reads every step's checkpoint
			tc.setup(w, &cfg)
			a := mustAgent(t, cfg)
			o := run(t, a, "t", "do it")
			tc.check(t, w, a, o)
			checkReplay(t, a, "t")
		})
	}
}

// checkReplay re-decides the route from every checkpoint of the thread and
// compares it with what the engine recorded: the state is the whole truth.
func checkReplay(t tb, a *agent.Agent, thread string) {
	t.Helper()
	store := a.Graph().Store()
	cps, err := store.List(context.Background(), thread, checkpoint.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(cps, func(cp checkpoint.Checkpoint) bool { return cp.Step == 0 }) {
		t.Fatalf("no input checkpoint among %d: pruned, but checkReplay needs every step's (Config.KeepIntermediate negative)", len(cps))
	}
	for _, cp := range cps {
		if cp.Step == 0 {
			continue // a run's input checkpoint: the entry node, not a route
		}
		var s state.State
		if err := jsonUnmarshal(cp.State, &s); err != nil {
			t.Fatal(err)
		}
		d := router.Decide(s, a.RouterConfig())
		want := d.Next
		if len(want) == 1 && want[0] == router.End {
			want = nil
		}
		if fmt.Sprint(want) != fmt.Sprint(cp.Next) || d.NotBefore.Sub(cp.NotBefore).Abs() >= time.Microsecond {
			t.Fatalf("checkpoint %d: recorded next %v at %v, re-decided %v at %v", cp.Step, cp.Next, cp.NotBefore, want, d.NotBefore)
		}
	}
}

func TestWallClockLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld("read_a", "read_b")
		w.caps["read_a"].errs = []error{errHang}
		cfg := w.config(t)
		cfg.Limits.MaxExecutionTime = 2 * time.Second
		cfg.KeepIntermediate = -1 // checkReplay reads every step's checkpoint
		a := mustAgent(t, cfg)
		start := time.Now()
		o := run(t, a, "t", "do it")
		wantReport(t, o, "max_execution_time")
		if el := time.Since(start); el != 2*time.Second {
			t.Fatalf("turn took %v of virtual time", el)
		}
		checkReplay(t, a, "t")
	})
}

func TestRetryWaitsAreDurableData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld("read_a")
		w.caps["read_a"].errs = repeat(errTimeout, 2)
		w.policy = capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Second, Jitter: capabilities.JitterNone}
		a := mustAgent(t, w.config(t))
		start := time.Now()
		o := run(t, a, "t", "x")
		wantAnswer(t, o)
		// 1 s before the second attempt, 2 s before the third.
		if el := time.Since(start); el != 3*time.Second {
			t.Fatalf("retries waited %v, want 3s", el)
		}
		var delays []time.Duration
		for _, e := range o.events {
			if e.Type == agent.EventRetry {
				delays = append(delays, e.Retry.Delay)
			}
		}
		if fmt.Sprint(delays) != "[1s 2s]" {
			t.Fatalf("retry delays %v", delays)
		}
	})
}

func TestCancelDuringWaitThenResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld("read_a")
		w.caps["read_a"].errs = []error{errTimeout}
		w.policy = capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: 10 * time.Second, Jitter: capabilities.JitterNone}
		a := mustAgent(t, w.config(t))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		start := time.Now()
		var err error
		for ev, e := range a.Run(ctx, agent.TurnRequest{Thread: "t", Input: "x"}) {
			if ev.Type == agent.EventStatus && strings.HasPrefix(ev.Text, "waiting") {
				go func() { time.Sleep(4 * time.Second); cancel() }()
			}
			if e != nil {
				err = e
			}
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
		if _, st, _ := a.State(context.Background(), "t"); st != agent.RunCanceled {
			t.Fatalf("status %s", st)
		}
		var o outcome
		for ev, e := range a.Resume(context.Background(), "t", agent.Answer{}) {
			o.events = append(o.events, ev)
			if e != nil {
				o.err = e
			}
		}
		wantAnswer(t, o)
		if el := time.Since(start); el != 10*time.Second {
			t.Fatalf("resumed run waited until %v, want the original not-before (10s)", el)
		}
		if n := w.caps["read_a"].count(); n != 2 {
			t.Fatalf("read_a ran %d times", n)
		}
	})
}

func TestResourceExhaustionEscalates(t *testing.T) {
	for _, approve := range []bool{true, false} {
		t.Run(fmt.Sprint("approve=", approve), func(t *testing.T) {
			w := newWorld("read_a")
			w.caps["read_a"].errs = []error{errResource}
			a := mustAgent(t, w.config(t))
			o := run(t, a, "t", "x")
			if o.err != nil || o.last().Status != agent.RunInterrupted {
				t.Fatalf("err %v last %+v", o.err, o.last())
			}
			var ap *state.Approval
			for _, e := range o.events {
				if e.Type == agent.EventApprovalRequired {
					ap = e.Approval
				}
			}
			if ap == nil || ap.Kind != state.ApprovalEscalation || ap.Capability != "read_a" {
				t.Fatalf("approval %+v", ap)
			}
			if _, st, _ := a.State(context.Background(), "t"); st != agent.RunInterrupted {
				t.Fatalf("status %s", st)
			}
			var r outcome
			for ev, e := range a.Resume(context.Background(), "t", agent.Answer{ApprovalID: ap.ID, Approved: &approve}) {
				r.events = append(r.events, ev)
				if e != nil {
					r.err = e
				}
			}
			if approve {
				wantAnswer(t, r, "read_a ok")
			} else {
				wantReport(t, r, "gave up")
			}
			finalState(t, a, "t")
		})
	}
}

func TestIndependentStepsRunTogether(t *testing.T) {
	w := newWorld("read_a", "read_b", "combine")
	w.plan = func(int, state.State) []state.PlanStep {
		return []state.PlanStep{step("read_a", "a"), step("read_b", "b"), step("combine", "c", 0, 1), step(state.NodeRespond, "r")}
	}
	w.caps["read_b"].errs = []error{errTimeout}
	cfg := w.config(t)
	cfg.KeepIntermediate = -1 // the test reads every step's checkpoint
	a := mustAgent(t, cfg)
	o := run(t, a, "t", "x")
	wantAnswer(t, o, "combine ok")
	cps, _ := a.Graph().Store().List(context.Background(), "t", checkpoint.ListOptions{})
	together := false
	for _, cp := range cps {
		if fmt.Sprint(cp.Next) == "[read_a read_b]" {
			together = true
		}
		for _, n := range cp.Next {
			if n == "combine" && len(cp.Next) > 1 {
				t.Fatalf("combine ran beside %v before its inputs were done", cp.Next)
			}
		}
	}
	if !together {
		t.Fatal("independent steps never ran in one step")
	}
	checkReplay(t, a, "t")
}

func TestConfigErrors(t *testing.T) {
	w := newWorld("read_a")
	cfg := w.config(t)
	cfg.Clarify = &fnNode{name: "wrong"}
	cfg.Limits.MaxNodeSteps = -1
	_, err := agent.New(cfg)
	var ce *agent.ConfigError
	if !errors.As(err, &ce) || !errors.Is(err, agent.ErrConfig) || !strings.Contains(err.Error(), "Limits") || !strings.Contains(err.Error(), `"wrong"`) {
		t.Fatalf("err %v", err)
	}
	if _, err := agent.New(agent.Config{}); !errors.Is(err, agent.ErrConfig) {
		t.Fatalf("empty config: %v", err)
	}
}

func TestBadRequests(t *testing.T) {
	w := newWorld("read_a")
	a := mustAgent(t, w.config(t))
	o := run(t, a, "", "x")
	if !errors.Is(o.err, agent.ErrBadRequest) || o.last().Status != agent.RunFailed {
		t.Fatalf("empty thread: %v", o.err)
	}
	if _, _, err := a.State(context.Background(), "nope"); !errors.Is(err, agent.ErrUnknownThread) || !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("unknown thread: %v", err)
	}
	run(t, a, "t", "x")
	var err error
	for _, e := range a.Resume(context.Background(), "t", agent.Answer{Text: "yes"}) {
		err = e
	}
	if !errors.Is(err, agent.ErrBadRequest) {
		t.Fatalf("answer without a pending approval: %v", err)
	}
	if err := a.DeleteThread(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.State(context.Background(), "t"); !errors.Is(err, agent.ErrUnknownThread) {
		t.Fatalf("deleted thread: %v", err)
	}
}
