package agent_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

// propertyChecks is how many random failure scripts one CI run tries.
const propertyChecks = 10000

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set {
		// The property test must see at least propertyChecks scripts per run;
		// an explicit -rapid.checks still wins.
		_ = flag.Set("rapid.checks", fmt.Sprint(propertyChecks))
	}
	os.Exit(m.Run())
}

// outcomes a scripted node or capability can produce on one call.
var (
	capOutcomes   = []error{nil, errTimeout, errReplan, errReclass, errCritical, errFatal, errPanic, errResource}
	infraOutcomes = []error{nil, errTimeout, errReclass, errCritical, errFatal, errPanic, errResource}
)

func drawScript(t *rapid.T, label string, outcomes []error) *script {
	idx := rapid.SliceOfN(rapid.IntRange(0, len(outcomes)-1), 0, 6).Draw(t, label)
	sc := &script{}
	for _, i := range idx {
		sc.errs = append(sc.errs, outcomes[i])
	}
	return sc
}

// TestPropertyEveryScriptEndsWell runs random failure scripts through the
// compiled graph and checks the invariants of severity routing.
func TestPropertyEveryScriptEndsWell(t *testing.T) {
	plans := [][]state.PlanStep{
		{step("read_a", "a"), step("read_b", "b"), step(state.NodeRespond, "r")},
		{step("read_a", "a"), step("read_b", "b", 0), step("read_c", "c", 0, 1), step(state.NodeRespond, "r")},
		{step("read_a", "a"), step(state.NodeClarify, "q"), step("read_c", "c")},
		{step("read_c", "c")},
	}
	rapid.Check(t, func(rt *rapid.T) {
		w := newWorld("read_a", "read_b", "read_c")
		w.task = drawScript(rt, "task", infraOutcomes)
		w.classify = drawScript(rt, "classifier", infraOutcomes)
		w.orchestrate = drawScript(rt, "orchestrator", append(infraOutcomes, errReplan))
		w.respond = drawScript(rt, "respond", infraOutcomes)
		w.clarify = drawScript(rt, "clarify", infraOutcomes)
		for _, c := range []string{"read_a", "read_b", "read_c"} {
			w.caps[c] = drawScript(rt, c, capOutcomes)
		}
		if rapid.Bool().Draw(rt, "fallback") {
			w.fallback["read_a"] = []string{"read_c"}
		}
		shape := plans[rapid.IntRange(0, len(plans)-1).Draw(rt, "plan")]
		w.plan = func(int, state.State) []state.PlanStep { return append([]state.PlanStep(nil), shape...) }
		maxAttempts := rapid.IntRange(1, 4).Draw(rt, "max_attempts")
		w.policy = capabilities.RetryPolicy{MaxAttempts: maxAttempts, InitialInterval: time.Microsecond,
			MaxInterval: 4 * time.Microsecond, Jitter: capabilities.JitterFull}
		w.tokens = rapid.IntRange(0, 50).Draw(rt, "tokens")
		// Approvals: read_b asks in selective mode; every step asks in
		// all_capabilities mode; plans may need approval too.
		mode := rapid.SampledFrom([]string{state.ApprovalModeDisabled, state.ApprovalModeSelective, state.ApprovalModeAll}).Draw(rt, "approval_mode")
		planApproval := rapid.Bool().Draw(rt, "plan_approval")
		w.approval = map[string]func(capabilities.Step) (bool, string){"read_b": func(capabilities.Step) (bool, string) { return true, "read b" }}
		w.writes = map[string]bool{"read_b": true}
		cfg := w.config(rt)
		cfg.Options = state.Options{ApprovalMode: mode, PlanApproval: planApproval, WritesEnabled: true}
		cfg.KeepIntermediate = -1 // checkAttempts and checkReplay read every step's checkpoint
		cfg.Limits = agent.Limits{
			MaxPlanningAttempts:  rapid.IntRange(1, 3).Draw(rt, "max_planning_attempts"),
			MaxReclassifications: rapid.IntRange(-1, 2).Draw(rt, "max_reclassifications"),
			MaxNodeSteps:         rapid.IntRange(3, 40).Draw(rt, "max_node_steps"),
			MaxTokensPerTurn:     rapid.IntRange(0, 400).Draw(rt, "max_tokens"),
		}
		a := mustAgent(rt, cfg)
		rc := a.RouterConfig()

		o := run(rt, a, "p", "go")
		rejected := false
		for resumes := 0; o.err == nil && o.last().Status == agent.RunInterrupted; resumes++ {
			if resumes > 40 {
				rt.Fatalf("still interrupted after %d resumes", resumes)
			}
			var ap *state.Approval
			for _, e := range o.events {
				if e.Type == agent.EventApprovalRequired {
					ap = e.Approval
				}
			}
			if ap == nil {
				rt.Fatalf("interrupted without an approval: %+v", o.events)
			}
			ans := agent.Answer{ApprovalID: ap.ID}
			switch {
			case ap.Kind == state.ApprovalEscalation:
				yes := rapid.Bool().Draw(rt, "retry_after_block")
				ans.Approved = &yes
			case ap.Kind == state.ApprovalPlan && !planApproval, ap.Kind == state.ApprovalStep && mode == state.ApprovalModeDisabled,
				ap.Kind == state.ApprovalStep && mode == state.ApprovalModeSelective && ap.Capability != "read_b":
				rt.Fatalf("asked %+v with mode %q, plan approval %v", ap, mode, planApproval)
			default:
				// An unclear answer decides nothing: the human is asked
				// again until they say yes or no.
				for {
					ans.Text = rapid.SampledFrom([]string{"yes", "no", "maybe later"}).Draw(rt, "answer")
					if ans.Text != "maybe later" {
						break
					}
					var err error
					for _, e := range a.Resume(context.Background(), "p", ans) {
						err = e
					}
					if !errors.Is(err, agent.ErrApprovalUnclear) {
						rt.Fatalf("an unclear answer: %v, want ErrApprovalUnclear", err)
					}
				}
				rejected = rejected || ans.Text != "yes"
			}
			o = outcome{}
			for ev, err := range a.Resume(context.Background(), "p", ans) {
				o.events = append(o.events, ev)
				if err != nil {
					o.err = err
				}
			}
		}
		if len(o.events) == 0 || o.last().Type != agent.EventDone {
			rt.Fatalf("run did not end with EventDone: %+v", o.events)
		}
		s, _, err := a.State(context.Background(), "p")
		if err != nil {
			rt.Fatal(err)
		}
		msgs := countAssistant(s, s.Turn.Number)
		if o.err != nil {
			var fe *agent.FatalError
			if !errors.As(o.err, &fe) {
				rt.Fatalf("run failed with a non-FATAL error: %v", o.err)
			}
			if msgs != 0 {
				rt.Fatalf("FATAL run wrote %d messages", msgs)
			}
		} else if msgs != 1 || !s.Turn.Done || o.message() == nil {
			rt.Fatalf("turn wrote %d assistant messages (done=%v)", msgs, s.Turn.Done)
		} else if rejected != (o.message().Kind == state.KindRejected) {
			rt.Fatalf("rejected %v, but the turn's message is %q", rejected, o.message().Kind)
		}
		for _, eff := range w.effects() {
			if !eff.Approved && mode != state.ApprovalModeDisabled {
				rt.Fatalf("read_b ran without an approval in mode %q", mode)
			}
		}
		c := s.Turn.Control
		if c.PlansCreated > rc.MaxPlanningAttempts {
			rt.Fatalf("%d plans, budget %d", c.PlansCreated, rc.MaxPlanningAttempts)
		}
		if c.Reclassifications > rc.ReclassificationBudget() {
			rt.Fatalf("%d reclassifications, budget %d", c.Reclassifications, rc.ReclassificationBudget())
		}
		if c.NodeSteps > rc.MaxNodeSteps+1 {
			rt.Fatalf("%d node steps, limit %d (+1 for the error node)", c.NodeSteps, rc.MaxNodeSteps)
		}
		checkAttempts(rt, a, maxAttempts)
		checkReplay(rt, a, "p")
	})
}

// checkAttempts checks every checkpoint: no step or node ever went past
// its policy's attempts.
func checkAttempts(t *rapid.T, a *agent.Agent, max int) {
	cps, err := a.Graph().Store().List(context.Background(), "p", listAll)
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range cps {
		var s state.State
		if err := jsonUnmarshal(cp.State, &s); err != nil {
			t.Fatal(err)
		}
		if p := s.Turn.Plan; p != nil {
			for i, st := range p.Steps {
				if st.Attempts > max && st.Capability != state.NodeRespond && st.Capability != state.NodeClarify {
					t.Fatalf("step %d made %d attempts, policy allows %d", i, st.Attempts, max)
				}
			}
		}
		for n, rs := range s.Turn.Control.Retries {
			if rs.Attempts > max {
				t.Fatalf("%s made %d attempts, policy allows %d", n, rs.Attempts, max)
			}
		}
	}
}
