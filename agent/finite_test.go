package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/state"
)

// Numbers that are not numbers (issue 26, part 7), on the compiled agent
// over SQLite: ±Inf and NaN in a step's parameters, an action, a
// capability's output, its error's metadata, a reading or an approval's
// arguments end the turn with a refusal or a failure and its report (and,
// for a side effect, an audit record), or ask a human with the value shown
// as text — never an encoding error that kills the turn. The framework does
// not rely on the capability to check: set_value and the capabilities here
// do no checks of their own.

var nonFinite = []float64{math.Inf(1), math.Inf(-1), math.NaN()}

// An action holding ±Inf or NaN — described by the capability, or the
// step's own parameters when it describes none (StepAction) — is refused
// before anyone is asked (not_finite), with a report and a refused audit
// record that names the value, and nothing is written.
func TestNonFiniteActionIsRefusedWithReportAndAudit(t *testing.T) {
	for _, bad := range nonFinite {
		for _, noAction := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/noAction=%v", bad, noAction), func(t *testing.T) {
				store, _ := newSQLite(t)
				w := newGateWorld(bad)
				w.noAction = noAction
				a := w.agent(t, store, writesOnNoApproval)
				o := runReq(t, a, agent.TurnRequest{Thread: "t", Input: setQ1})
				info := refusal(t, a, "t", o, agent.KindRefused, capabilities.ReasonNotFinite)
				text := bad2text(bad)
				if !strings.Contains(info.Message, text) || !strings.Contains(info.Message, "not a finite number") {
					t.Errorf("refusal says %q; want it to name %s as not a finite number", info.Message, text)
				}
				if !strings.Contains(o.message().Content, "not a finite number") {
					t.Errorf("the report does not say why:\n%s", o.message().Content)
				}
				if o.count(agent.EventApprovalRequired) != 0 {
					t.Error("a human was asked to approve a value that is not a number")
				}
				if len(w.written()) != 0 {
					t.Fatalf("written: %v", w.written())
				}
				recs := audits(t, a, agent.AuditFilter{Thread: "t"})
				if got := outcomes(recs); got != "planned refused(not_finite)" {
					t.Fatalf("audit: %s", got)
				}
				b, _ := json.Marshal(recs[1].Changes)
				if !strings.Contains(string(b), `"`+text+`"`) {
					t.Errorf("the audit record's changes %s do not name %s", b, text)
				}
				checkStoredFinite(t, store, "t")
			})
		}
	}
}

// With writes off the refusal is writes_disabled, as for any change, and
// its audit record is written although the action holds +Inf.
func TestNonFiniteActionWritesOffIsAudited(t *testing.T) {
	store, _ := newSQLite(t)
	w := newGateWorld(math.Inf(1))
	a := w.agent(t, store, writesOff)
	o := runReq(t, a, agent.TurnRequest{Thread: "t", Input: setQ1})
	refusal(t, a, "t", o, capabilities.KindWritesDisabled, agent.RefusedWritesDisabled)
	if got := outcomes(audits(t, a, agent.AuditFilter{Thread: "t"})); got != "planned refused(writes_disabled)" {
		t.Fatalf("audit: %s", got)
	}
}

// finiteWorld is an agent whose plan runs the given capabilities in order
// (each with params), then answers; the user asked to set Q1 to 105 A.
func finiteWorld(t *testing.T, store checkpoint.Store, opts state.Options, params map[string]any, caps ...capabilities.Capability) *agent.Agent {
	t.Helper()
	reg := capabilities.NewRegistry()
	names := []string{state.NodeRespond}
	for _, c := range caps {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
		names = append(names, c.Name())
	}
	node := func(name string, run func(ctx context.Context, s state.State) (state.Update, error)) nodes.Node {
		return &fnNode{name: name, run: run}
	}
	v := 105.0
	return mustAgent(t, agent.Config{
		Registry: reg, Store: store, Options: opts, RetryPolicy: fastPolicy(),
		TaskExtraction: node(state.NodeTaskExtraction, func(ctx context.Context, s state.State) (state.Update, error) {
			tu := s.Turn
			tu.Task = &state.Task{Text: s.Turn.Input, Intent: intent.Intent{Kind: intent.KindChange,
				Changes: []intent.RequestedChange{{Target: "Q1", Value: &v, Unit: "A"}}}}
			return state.Update{Turn: &tu}, nil
		}),
		Classifier: node(state.NodeClassifier, func(ctx context.Context, s state.State) (state.Update, error) {
			tu := s.Turn
			tu.ActiveCapabilities = names
			return state.Update{Turn: &tu}, nil
		}),
		Orchestrator: node(state.NodeOrchestrator, func(ctx context.Context, s state.State) (state.Update, error) {
			tu := s.Turn
			var steps []state.PlanStep
			for i, c := range caps {
				st := step(c.Name(), fmt.Sprintf("s%d", i))
				st.Parameters = params
				steps = append(steps, st)
			}
			deps := make([]int, len(steps))
			for i := range deps {
				deps[i] = i
			}
			tu.Plan = &state.Plan{Steps: append(steps, step(state.NodeRespond, "answer", deps...))}
			return state.Update{Turn: &tu}, nil
		}),
		Respond: node(state.NodeRespond, func(ctx context.Context, s state.State) (state.Update, error) {
			return state.Update{Messages: []state.Message{{Role: state.RoleAssistant, Content: "done"}}}, nil
		}),
		Clarify: node(state.NodeClarify, func(ctx context.Context, s state.State) (state.Update, error) {
			return state.Update{Messages: []state.Message{{Role: state.RoleAssistant, Content: "which?", Kind: state.KindClarification}}}, nil
		}),
	})
}

func define(t *testing.T, d capabilities.Definition) capabilities.Capability {
	t.Helper()
	c := capabilities.Define(d)
	return c
}

// A capability's output that holds ±Inf or NaN — a value, an artifact, its
// error's metadata — fails its step with a report; the turn ends in an
// error report, never an encoding error.
func TestNonFiniteOutputFailsTheStepWithReport(t *testing.T) {
	for _, bad := range nonFinite {
		for _, tc := range []struct {
			name string
			run  func(context.Context, capabilities.Step) (capabilities.Output, error)
			says string
		}{
			{"value", func(context.Context, capabilities.Step) (capabilities.Output, error) {
				return capabilities.Result("READING", map[string]any{"q1": bad}, "Q1 read"), nil
			}, "cannot be stored"},
			{"artifact", func(context.Context, capabilities.Step) (capabilities.Output, error) {
				return capabilities.Result("READING", 92.0, "Q1 read").With(capabilities.Artifact{Kind: capabilities.ArtifactTable,
					Table: &capabilities.Table{Columns: []capabilities.Column{{Name: "Q1"}}, Rows: [][]any{{bad}}}}), nil
			}, "invalid artifact"},
			{"error metadata", func(context.Context, capabilities.Step) (capabilities.Output, error) {
				return capabilities.Output{}, &capabilities.Error{Severity: capabilities.Critical, Kind: capabilities.KindLimitViolation,
					UserMessage: "Q1 reads out of range", Metadata: map[string]any{"reading": bad, "limits": []any{0.0, bad}}, Err: errors.New("out of range")}
			}, "Q1 reads out of range"},
		} {
			t.Run(fmt.Sprintf("%s/%v", tc.name, bad), func(t *testing.T) {
				store, _ := newSQLite(t)
				read := define(t, capabilities.Definition{Name: "read_q1", Description: "Read Q1", Provides: []string{"READING"}, Run: tc.run})
				a := finiteWorld(t, store, state.Options{}, nil, read)
				o := runReq(t, a, agent.TurnRequest{Thread: "t", Input: "Read Q1"})
				if o.err != nil {
					t.Fatalf("run failed: %v", o.err)
				}
				m := o.message()
				if m == nil || m.Kind != state.KindErrorReport || m.Report == nil {
					t.Fatalf("the turn's message is %+v, want an error report", m)
				}
				if m.Report.Failure.Severity != capabilities.Critical || !strings.Contains(m.Report.Failure.Reason+" "+m.Content, tc.says) {
					t.Errorf("report %+v lacks %q:\n%s", m.Report.Failure, tc.says, m.Content)
				}
				if tc.name == "artifact" && !strings.Contains(m.Report.Details.Error, "want a finite number") {
					t.Errorf("the report's details do not say what is invalid: %q", m.Report.Details.Error)
				}
				if _, _, err := a.State(context.Background(), "t"); err != nil {
					t.Fatal(err)
				}
				checkStoredFinite(t, store, "t")
			})
		}
	}
}

// A step whose action is finite but whose other parameters are not (a
// ramp rate of +Inf the capability's own action leaves out) is put to a
// human like any other: the approval carries the parameter as the text
// "+Inf", and the question, stored and read back, is the one asked.
func TestNonFiniteApprovalArgumentsAreAsked(t *testing.T) {
	store, _ := newSQLite(t)
	set := define(t, capabilities.Definition{Name: "set_q1", Description: "Set Q1", Provides: []string{"WRITE"}, SideEffects: true,
		Action: func(capabilities.Step) (capabilities.Action, error) {
			return capabilities.Action{Changes: []capabilities.Change{{Target: "Q1", Value: 105.0, Unit: "A"}}, Summary: "set Q1 to 105 A"}, nil
		},
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			t.Error("set_q1 ran before anyone answered")
			return capabilities.Output{}, nil
		}})
	a := finiteWorld(t, store, writesOnNoApproval, map[string]any{"ramp_rate": math.Inf(1), "steps": []any{1.0, math.NaN()}}, set)
	ap := approvalOf(t, runReq(t, a, agent.TurnRequest{Thread: "t", Input: setQ1}))
	if ap.Summary == "" || ap.Action == nil || ap.Action.Changes[0].Value != 105.0 {
		t.Fatalf("approval %+v", ap)
	}
	pending, err := a.PendingApprovals(context.Background(), "t")
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending: %v, %v", pending, err)
	}
	b, _ := json.Marshal(pending[0].Arguments)
	if !strings.Contains(string(b), `"+Inf"`) || !strings.Contains(string(b), `"NaN"`) {
		t.Fatalf("the stored question's arguments: %s", b)
	}
	if got := outcomes(audits(t, a, agent.AuditFilter{Thread: "t"})); got != "planned asked" {
		t.Fatalf("audit: %s", got)
	}
	checkStoredFinite(t, store, "t")
}

// A plan approval over a plan whose parameters hold ±Inf asks the human
// with the plan as stored (the values as text); nothing encodes badly.
func TestNonFinitePlanApprovalIsAsked(t *testing.T) {
	store, _ := newSQLite(t)
	read := define(t, capabilities.Definition{Name: "read_q1", Description: "Read Q1", Provides: []string{"READING"},
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("READING", 92.0, "Q1 is 92 A"), nil
		}})
	a := finiteWorld(t, store, state.Options{PlanApproval: true}, map[string]any{"window": math.Inf(-1)}, read)
	ap := approvalOf(t, runReq(t, a, agent.TurnRequest{Thread: "t", Input: "Read Q1"}))
	if ap.Kind != state.ApprovalPlan || ap.Plan == nil {
		t.Fatalf("approval %+v", ap)
	}
	pending, err := a.PendingApprovals(context.Background(), "t")
	if err != nil || len(pending) != 1 || pending[0].Plan == nil || pending[0].Plan.Steps[0].Parameters["window"] != "-Inf" {
		t.Fatalf("pending: %+v, %v", pending, err)
	}
	checkStoredFinite(t, store, "t")
}

// A reading that is not finite, from a capability's Readback, cannot be
// judged (nor matched again: NaN equals nothing): the step is refused,
// nobody is asked, and the refusal and its audit say why.
func TestNonFiniteReadingIsRefused(t *testing.T) {
	store, _ := newSQLite(t)
	written := 0
	set := define(t, capabilities.Definition{Name: "set_q1", Description: "Set Q1", Provides: []string{"WRITE"}, SideEffects: true,
		Action: func(capabilities.Step) (capabilities.Action, error) {
			return capabilities.Action{Changes: []capabilities.Change{{Target: "Q1", Value: 105.0, Unit: "A"}}, Summary: "set Q1 to 105 A"}, nil
		},
		Readback: func(context.Context, capabilities.Action) ([]capabilities.Reading, error) {
			return []capabilities.Reading{{Target: "Q1", Value: math.NaN(), Unit: "A"}}, nil
		},
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			written++
			return capabilities.Result("WRITE", 105.0, "Q1 set to 105 A"), nil
		}})
	a := finiteWorld(t, store, writesOnNoApproval, nil, set)
	o := runReq(t, a, agent.TurnRequest{Thread: "t", Input: setQ1})
	if n := o.count(agent.EventApprovalRequired); n != 0 || written != 0 {
		t.Fatalf("asked %d times, wrote %d times, with a NaN reading", n, written)
	}
	if m := o.message(); m == nil || m.Kind != state.KindErrorReport || !strings.Contains(m.Content, "not a finite number") {
		t.Fatalf("message %+v", m)
	}
	recs := audits(t, a, agent.AuditFilter{Thread: "t"})
	if len(recs) != 2 || recs[1].Event != agent.AuditRefused || recs[1].Reason != capabilities.ReasonNotFinite {
		t.Fatalf("audit %s", outcomes(recs))
	}
	checkStoredFinite(t, store, "t")
}

// checkStoredFinite reads every checkpoint of thread: each decodes into a
// state, and none holds a number that is not finite.
func checkStoredFinite(t *testing.T, store checkpoint.Store, thread string) {
	t.Helper()
	cps, err := store.List(context.Background(), thread, listAll)
	if err != nil || len(cps) == 0 {
		t.Fatalf("%d checkpoints, %v", len(cps), err)
	}
	for _, cp := range cps {
		var s state.State
		if err := json.Unmarshal(cp.State, &s); err != nil {
			t.Fatalf("checkpoint %s does not decode: %v", cp.ID, err)
		}
		if err := capabilities.CheckFinite(s); err != nil {
			t.Fatalf("checkpoint %s: %v", cp.ID, err)
		}
	}
}

func bad2text(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case f > 0:
		return "+Inf"
	}
	return "-Inf"
}
