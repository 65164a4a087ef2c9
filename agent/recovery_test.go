package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/errornode"
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/state"
)

// Issue 11: recovery paths that keep their promises. Every test runs the
// compiled agent.

// errorNodeStart returns the time of the error node's node_start event.
func errorNodeStart(t *testing.T, o outcome) time.Time {
	t.Helper()
	for _, e := range o.events {
		if e.Type == agent.EventNodeStart && e.Node == state.NodeError {
			return e.Time
		}
	}
	t.Fatal("the error node did not start")
	return time.Time{}
}

// The error node keeps to its allowance (ErrorNodeGrace) after the turn's
// wall-clock limit and to the explanation timeout: an error model that
// never answers is stopped by its context, and the deterministic
// explanation is used. (Virtual time: the 30 s the node used to wait would
// show as 30 s.)
func TestErrorNodeGraceBoundsAnExplanationThatNeverComes(t *testing.T) {
	tests := []struct {
		name        string
		grace       time.Duration
		explanation time.Duration
		wantNode    time.Duration // time the error node takes
	}{
		{"grace", 700 * time.Millisecond, 0, 700 * time.Millisecond},
		{"explanation timeout within the grace", 700 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond},
		{"grace shorter than the explanation timeout", 100 * time.Millisecond, 5 * time.Second, 100 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld("read_a")
				w.caps["read_a"].errs = []error{errHang} // runs until the turn's deadline
				m := llmtest.New().Script(llm.RoleError, llmtest.Hang()).Only(llm.RoleError)
				cfg := w.config(t)
				cfg.Models = m
				cfg.Limits.MaxExecutionTime = 300 * time.Millisecond
				cfg.ErrorNodeGrace, cfg.ErrorExplanationTimeout = tc.grace, tc.explanation
				a := mustAgent(t, cfg)
				start := time.Now()
				o := run(t, a, "t", "beam current?")
				if el := time.Since(start); el != 300*time.Millisecond+tc.wantNode {
					t.Errorf("the turn took %v, want the 300ms limit + %v", el, tc.wantNode)
				}
				wantReport(t, o, "max_execution_time")
				r := o.message().Report
				if r.ExplainedBy != state.ExplainedByRules || !strings.Contains(r.Explanation, "ran out of time") {
					t.Errorf("want the deterministic explanation: %+v", r)
				}
				calls := m.CallsFor(llm.RoleError)
				if len(calls) != 1 || !errors.Is(calls[0].CtxErr, context.DeadlineExceeded) || calls[0].TimeLeft != tc.wantNode {
					t.Fatalf("error model calls %+v: want one, stopped by its deadline after %v", calls, tc.wantNode)
				}
				if !errorNodeStart(t, o).Equal(start.Add(300 * time.Millisecond)) {
					t.Errorf("the error node started at %v", errorNodeStart(t, o).Sub(start))
				}
				if o.last().Status != agent.RunAnswered {
					t.Errorf("status %s", o.last().Status)
				}
			})
		})
	}
}

// A caller that cancels, or breaks out of the event loop, while the error
// model is asked, stops the call at once: the model sees its context
// canceled, the stream ends, and the report stored uses the deterministic
// explanation.
func TestCancelStopsTheErrorNodeAtOnce(t *testing.T) {
	for _, how := range []string{"cancel", "break"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				w := newWorld("read_a")
				w.caps["read_a"].errs = []error{errCritical}
				m := llmtest.New().On(llmtest.RoleIs(llm.RoleError), func(llm.Request) llmtest.Reply {
					if how == "cancel" {
						cancel() // the caller gives up while the call runs
					}
					return llmtest.Hang()
				}).Only(llm.RoleError)
				cfg := w.config(t)
				cfg.Models = m
				a := mustAgent(t, cfg)
				start := time.Now()
				var last agent.Event
				for ev := range a.Run(ctx, agent.TurnRequest{Thread: "t", Input: "beam current?"}) {
					last = ev
					if how == "break" && ev.Type == agent.EventNodeStart && ev.Node == state.NodeError {
						break
					}
				}
				if el := time.Since(start); el != 0 {
					t.Errorf("the caller waited %v for the error node", el)
				}
				if how == "cancel" && (last.Type != agent.EventDone || last.Status != agent.RunCanceled) {
					t.Errorf("last event %+v, want done/canceled", last)
				}
				// A cancellation before the call starts makes none.
				calls := m.CallsFor(llm.RoleError)
				if (how == "cancel" && len(calls) != 1) || len(calls) > 1 || (len(calls) == 1 && !errors.Is(calls[0].CtxErr, context.Canceled)) {
					t.Fatalf("error model calls %+v: want them stopped by the cancellation", calls)
				}
				s, _, err := a.State(context.Background(), "t")
				if err != nil {
					t.Fatal(err)
				}
				msg, ok := s.LastAssistant()
				if !ok || msg.Report == nil || msg.Report.ExplainedBy != state.ExplainedByRules || !s.Turn.Done {
					t.Fatalf("stored message %+v", msg)
				}
			})
		})
	}
}

// runtime.Goexit in a capability ends that capability, not the caller's
// stream: as the only step and as a parallel branch alike, the turn ends
// with an error report (CRITICAL, kind panic) and a done event.
func TestGoexitInACapabilityIsACleanFailure(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		t.Run(fmt.Sprintf("parallel=%v", parallel), func(t *testing.T) {
			w := newWorld("read_b")
			cfg := w.config(t)
			gx := capabilities.Define(capabilities.Definition{Name: "exits", Description: "calls runtime.Goexit", Provides: []string{"OUT"},
				Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
					runtime.Goexit()
					return capabilities.Output{}, nil
				}})
			if err := cfg.Registry.Register(gx); err != nil {
				t.Fatal(err)
			}
			w.plan = func(int, state.State) []state.PlanStep {
				if parallel {
					return []state.PlanStep{step("exits", "e"), step("read_b", "b"), step(state.NodeRespond, "r", 0, 1)}
				}
				return []state.PlanStep{step("exits", "e"), step(state.NodeRespond, "r", 0)}
			}
			a := mustAgent(t, cfg)
			// The consumer runs on a goroutine of its own, so that a Goexit
			// reaching it shows as a stream that ended without done.
			got := make(chan outcome, 1)
			go func() {
				var o outcome
				defer func() { got <- o }()
				for ev, err := range a.Run(context.Background(), agent.TurnRequest{Thread: "t", Input: "x"}) {
					o.events = append(o.events, ev)
					if err != nil {
						o.err = err
					}
				}
			}()
			o := <-got
			if len(o.events) == 0 || o.last().Type != agent.EventDone {
				t.Fatalf("the stream ended without a done event; last %+v", o.events[len(o.events)-1])
			}
			wantReport(t, o, "(severity: critical)", `"kind":"panic"`, "runtime.Goexit")
			if f := o.message().Report.Failure; f.Capability != "exits" || f.Step != 0 {
				t.Errorf("failure %+v", f)
			}
			if o.last().Status != agent.RunAnswered {
				t.Errorf("status %s", o.last().Status)
			}
		})
	}
}

// A retry event names the capability and plan step it retries; an
// infrastructure node's names neither.
func TestRetryEventsNameTheCapabilityAndStep(t *testing.T) {
	w := newWorld("read_a", "read_b")
	w.caps["read_b"].errs = []error{errTimeout}
	w.orchestrate.errs = []error{errTimeout}
	w.plan = func(int, state.State) []state.PlanStep {
		return []state.PlanStep{step("read_a", "a"), step("read_b", "b", 0), step(state.NodeRespond, "r", 0, 1)}
	}
	a := mustAgent(t, w.config(t))
	o := run(t, a, "t", "x")
	wantAnswer(t, o)
	var retries []agent.Event
	for _, e := range o.events {
		if e.Type == agent.EventRetry {
			retries = append(retries, e)
		}
	}
	if len(retries) != 2 {
		t.Fatalf("%d retry events", len(retries))
	}
	infra, st := retries[0], retries[1]
	if r := infra.Retry; r.Node != state.NodeOrchestrator || r.Capability != "" || r.Step != -1 || infra.Capability != "" || r.What() != state.NodeOrchestrator {
		t.Errorf("orchestrator retry %+v / %+v", infra, r)
	}
	if r := st.Retry; r.Node != "read_b" || r.Capability != "read_b" || r.Step != 1 || st.Capability != "read_b" || st.Step != 1 || r.What() != "step 2 (read_b)" {
		t.Errorf("step retry %+v / %+v", st, r)
	}
	b, _ := json.Marshal(st.Retry)
	if !strings.Contains(string(b), `"capability":"read_b","step":1`) {
		t.Errorf("retry JSON %s", b)
	}
}

// setQ1Done is a side-effecting capability as an application writes one: it
// declares its side effect, describes its action, asks for approval, and
// says what it did.
const setQ1Done = "Set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A (readback verified)"

func changeWorld(t *testing.T, w *world) agent.Config {
	t.Helper()
	cfg := withOptions(w.config(t), writesOn)
	set := capabilities.Define(capabilities.Definition{Name: "channel_write", Description: "Write a setpoint", Provides: []string{"WRITE_RESULT"},
		SideEffects: true,
		Action: func(capabilities.Step) (capabilities.Action, error) {
			return capabilities.Action{Changes: []capabilities.Change{{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0, Unit: "A"}},
				Summary: "set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A"}, nil
		},
		Run: func(_ context.Context, st capabilities.Step) (capabilities.Output, error) {
			if !st.WritesEnabled {
				return capabilities.Output{}, capabilities.ErrWritesDisabled
			}
			w.mu.Lock()
			w.done = append(w.done, st)
			w.mu.Unlock()
			return capabilities.Result("WRITE_RESULT", map[string]any{"channel": "BTS:MAG:Q1:CURRENT", "value": 105.0}, setQ1Done), nil
		}})
	if err := cfg.Registry.Register(set); err != nil {
		t.Fatal(err)
	}
	v := 105.0
	cfg.TaskExtraction = &fnNode{name: state.NodeTaskExtraction, sc: &script{}, run: func(_ context.Context, s state.State) (state.Update, error) {
		tu := s.Turn
		tu.Task = &state.Task{Text: "Set the BTS Q1 current to 105 A, then read the beam current",
			Intent: intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{{Target: "BTS Q1 current", Value: &v, Unit: "A"}}}}
		return state.Update{Turn: &tu}, nil
	}}
	w.plan = func(int, state.State) []state.PlanStep {
		return []state.PlanStep{step("channel_write", "w"), step("read_a", "a", 0), step(state.NodeRespond, "r", 0, 1)}
	}
	return cfg
}

// The approval model's tokens are reported in the turn's usage but not
// counted against its budget: a refusal read by the model for 2,005
// tokens, with a budget of 1,000, ends the turn as rejected, not as out
// of tokens.
func TestApprovalTokensDoNotExhaustTheBudget(t *testing.T) {
	w := newWorld("read_a")
	cfg := changeWorld(t, w)
	m := llmtest.New().Script(llm.RoleApproval, llmtest.Reply{Text: `{"decision": "reject"}`, Usage: llm.Usage{PromptTokens: 1990, CompletionTokens: 15}}).
		Only(llm.RoleApproval)
	cfg.Models = m
	cfg.Limits.MaxTokensPerTurn = 1000
	a := mustAgent(t, cfg)
	ap := approvalOf(t, run(t, a, "t", "set Q1 to 105 A"))
	o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "leave the 105 A for tomorrow"})
	wantRejected(t, o)
	if n := len(w.effects()); n != 0 {
		t.Fatalf("the write ran %d times", n)
	}
	var usage *agent.Usage
	for _, e := range o.events {
		if e.Type == agent.EventUsage {
			usage = e.Usage
		}
	}
	s, _, _ := a.State(context.Background(), "t")
	if usage == nil || usage.TotalTokens != 2005 || s.Turn.Control.TokensByRole[string(llm.RoleApproval)] != 2005 || s.Turn.Control.BudgetTokens() != 0 {
		t.Fatalf("usage %+v, control %+v: the approval tokens must be reported, not budgeted", usage, s.Turn.Control)
	}
}

// A turn whose side effect ran never ends with a report that hides it:
// whatever fails after the change — a later step, or the token budget
// spent by the answer's failed attempt — the report says what was changed
// before what failed.
func TestReportAfterASideEffectSaysWhatWasDone(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(w *world, cfg *agent.Config)
		reason string
	}{
		{"a later step fails", func(w *world, cfg *agent.Config) { w.caps["read_a"].errs = []error{errCritical} }, "permission denied"},
		{"the answer spends the budget", func(w *world, cfg *agent.Config) {
			cfg.Limits.MaxTokensPerTurn = 1000
			cfg.Respond = &fnNode{name: state.NodeRespond, sc: &script{}, run: func(context.Context, state.State) (state.Update, error) {
				return state.Update{Tokens: map[string]int{string(llm.RoleResponse): 2000}}, errTimeout
			}}
		}, "token budget"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld("read_a")
			cfg := changeWorld(t, w)
			tc.setup(w, &cfg)
			a := mustAgent(t, cfg)
			ap := approvalOf(t, run(t, a, "t", "set Q1 to 105 A"))
			o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes"})
			wantReport(t, o, tc.reason)
			if n := len(w.effects()); n != 1 {
				t.Fatalf("the write ran %d times", n)
			}
			msg := o.message()
			ch := msg.Report.Changed()
			if len(ch) != 1 || ch[0].Capability != "channel_write" || ch[0].Outcome != setQ1Done {
				t.Fatalf("changes %+v", ch)
			}
			i, j := strings.Index(msg.Content, setQ1Done), strings.Index(msg.Content, "**What failed:**")
			if i < 0 || j < 0 || i > j {
				t.Fatalf("the change is not said before what failed:\n%s", msg.Content)
			}
			if !strings.HasPrefix(msg.Report.Suggestions[0], "Check the current state of what was changed") {
				t.Errorf("suggestions %q", msg.Report.Suggestions)
			}
		})
	}
}

// The structured report is in the turn's state and in the message event;
// the Markdown is rendered from it, and it survives the checkpoint.
func TestStructuredReportInStateAndEvent(t *testing.T) {
	w := newWorld("read_a", "read_b")
	w.caps["read_b"].errs = repeat(errTimeout, 3)
	w.plan = func(int, state.State) []state.PlanStep {
		return []state.PlanStep{step("read_a", "a"), step("read_b", "b", 0), step(state.NodeRespond, "r", 0, 1)}
	}
	cfg := w.config(t)
	a := mustAgent(t, cfg)
	o := run(t, a, "t", "beam current?")
	msg := o.message()
	if msg == nil || msg.Report == nil {
		t.Fatalf("the message event carries no report: %+v", msg)
	}
	r := *msg.Report
	if msg.Content != errornode.Markdown(r) {
		t.Errorf("the Markdown is not rendered from the report")
	}
	f := r.Failure
	if r.Asked != "task: beam current?" || f.Capability != "read_b" || f.Step != 1 || f.Severity != capabilities.Retriable ||
		f.Limit != router.LimitAttempts || f.Attempts != 3 || r.Details.Cause != string(router.CauseRetriesExhausted) || r.Details.Error == "" {
		t.Errorf("report %+v", r)
	}
	if len(r.Steps) != 2 || r.Steps[0].Status != state.StepDone || r.Steps[0].Outcome != "read_a ok" || r.Steps[1].Status != state.StepFailed {
		t.Errorf("steps %+v", r.Steps)
	}
	// Stored: another agent over the same store reads it back.
	b := mustAgent(t, agent.Config{Registry: cfg.Registry, Store: cfg.Store, TaskExtraction: cfg.TaskExtraction, Classifier: cfg.Classifier,
		Orchestrator: cfg.Orchestrator, Respond: cfg.Respond, Clarify: cfg.Clarify})
	s, _, err := b.State(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	stored, ok := s.LastAssistant()
	if !ok || stored.Report == nil || fmt.Sprint(*stored.Report) != fmt.Sprint(r) {
		t.Errorf("stored report %+v\nwant %+v", stored.Report, r)
	}
	// The event's JSON (what the native API sends) holds it as fields.
	ev, _ := json.Marshal(o.events[len(o.events)-3])
	if !strings.Contains(string(ev), `"report":{"asked":"task: beam current?"`) || !strings.Contains(string(ev), `"severity":"retriable"`) {
		t.Errorf("message event JSON %s", ev)
	}
}

// docs/error-handling.md names the answer's list of recovered steps and
// fallbacks by its heading: "_Recovery notes:_".
func TestRecoveryNotesAsDocumented(t *testing.T) {
	w := newWorld("read_a")
	w.caps["read_a"].errs = []error{errTimeout}
	o := run(t, mustAgent(t, w.config(t)), "t", "x")
	wantAnswer(t, o, "\n\n_Recovery notes:_\n- Step 1 (do read_a_out) succeeded after 2 attempts.")
}
