package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/state"
)

// machine is the outside world of the at-most-once tests: setpoints, and a
// journal of every real write with the idempotency key it ran under.
type machine struct {
	mu      sync.Mutex
	value   map[string]float64
	journal []effect
}

type effect struct {
	key, target string
	value       float64
}

func newMachine() *machine { return &machine{value: map[string]float64{"Q1": 92, "Q2": 40}} }

func (m *machine) set(target string, v float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.value[target] = v
}

func (m *machine) get(target string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.value[target]
}

func (m *machine) effects() []effect {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]effect(nil), m.journal...)
}

// writer is how a test's write capability behaves.
type writer struct {
	target     string
	readback   bool // it can read its target back
	idempotent bool
	reconcile  func(capabilities.Step) capabilities.Outcome
	// fail, when set, is returned by the next Execute (after writing, if
	// failAfterWrite); writeOther writes this value instead of the one asked.
	fail           error
	failAfterWrite bool
	writeOther     *float64
	// refuse makes the action one the application refuses (a limit).
	refuse bool
	// block, when set, holds Execute until it is closed, ignoring the
	// context (a driver stuck in a call); then it writes.
	block chan struct{}
}

func (m *machine) capability(t testing.TB, name string, w *writer) capabilities.Capability {
	t.Helper()
	var mu sync.Mutex
	def := capabilities.Definition{
		Name: name, Description: "set " + w.target, Provides: []string{"WRITE"}, SideEffects: true, Idempotent: w.idempotent,
		Action: func(st capabilities.Step) (capabilities.Action, error) {
			v, err := capabilities.Param(st, "value", 0.0)
			if err != nil {
				return capabilities.Action{}, err
			}
			a := capabilities.Action{Changes: []capabilities.Change{{Target: w.target, Value: v, Unit: "A", Tolerance: 0.5}},
				Summary: fmt.Sprintf("set %s from %g to %g A", w.target, m.get(w.target), v)}
			if w.refuse {
				return a, &capabilities.ActionRefusedError{Reason: "limits", Message: fmt.Sprintf("%g A is outside the limits of %s (0 to 150 A).", v, w.target)}
			}
			return a, nil
		},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			v, err := capabilities.Param(st, "value", 0.0)
			if err != nil {
				return capabilities.Output{}, capabilities.NotApplied(err)
			}
			mu.Lock()
			fail := w.fail
			w.fail = nil
			mu.Unlock()
			if fail != nil && !w.failAfterWrite {
				return capabilities.Output{}, fail
			}
			if w.block != nil {
				<-w.block
			}
			if w.writeOther != nil {
				v = *w.writeOther
			}
			m.mu.Lock()
			old := m.value[w.target]
			m.value[w.target] = v
			m.journal = append(m.journal, effect{st.IdempotencyKey, w.target, v})
			m.mu.Unlock()
			if fail != nil {
				return capabilities.Output{}, fail
			}
			return capabilities.Result("WRITE", map[string]any{"old": old, "new": v}, fmt.Sprintf("%s from %g → %g A", w.target, old, v)), nil
		},
	}
	if w.readback {
		def.Readback = func(_ context.Context, a capabilities.Action) ([]capabilities.Reading, error) {
			var out []capabilities.Reading
			for _, ch := range a.Changes {
				out = append(out, capabilities.Reading{Target: ch.Target, Value: m.get(ch.Target), Unit: "A"})
			}
			return out, nil
		}
	}
	if w.reconcile != nil {
		def.Reconcile = func(_ context.Context, st capabilities.Step, _ capabilities.Action) (capabilities.Outcome, error) {
			return w.reconcile(st), nil
		}
	}
	c := capabilities.Define(def)
	return c
}

// plannedWrite is one step of the plan: capability name, value.
type plannedWrite struct {
	capability string
	target     string
	value      float64
}

// effectAgent runs the plan writes (in parallel) and then answers; the
// user asked for exactly those changes.
func (m *machine) agent(t testing.TB, store checkpoint.Store, caps map[string]*writer, plan ...plannedWrite) *agent.Agent {
	t.Helper()
	return m.agentWith(t, store, nil, caps, plan...)
}

// agentWith is agent with tweak applied to its config (when not nil).
func (m *machine) agentWith(t testing.TB, store checkpoint.Store, tweak func(*agent.Config), caps map[string]*writer, plan ...plannedWrite) *agent.Agent {
	t.Helper()
	reg := capabilities.NewRegistry()
	for name, w := range caps {
		if err := reg.Register(m.capability(t, name, w)); err != nil {
			t.Fatal(err)
		}
	}
	node := func(name string, run func(ctx context.Context, s state.State) (state.Update, error)) nodes.Node {
		return &fnNode{name: name, run: run}
	}
	cfg := agent.Config{
		Registry: reg, Store: store, Options: state.Options{WritesEnabled: true},
		TaskExtraction: node(state.NodeTaskExtraction, func(ctx context.Context, s state.State) (state.Update, error) {
			in := intent.Intent{Kind: intent.KindChange}
			for _, p := range plan {
				v := p.value
				in.Changes = append(in.Changes, intent.RequestedChange{Target: p.target, Value: &v, Unit: "A"})
			}
			t := s.Turn
			t.Task = &state.Task{Text: s.Turn.Input, Intent: in}
			return state.Update{Turn: &t}, nil
		}),
		Classifier: node(state.NodeClassifier, func(ctx context.Context, s state.State) (state.Update, error) {
			t := s.Turn
			for name := range caps {
				t.ActiveCapabilities = append(t.ActiveCapabilities, name)
			}
			t.ActiveCapabilities = append(t.ActiveCapabilities, state.NodeRespond)
			return state.Update{Turn: &t}, nil
		}),
		Orchestrator: node(state.NodeOrchestrator, func(ctx context.Context, s state.State) (state.Update, error) {
			t := s.Turn
			var steps []state.PlanStep
			var deps []int
			for i, p := range plan {
				st := step(p.capability, fmt.Sprintf("w%d", i))
				st.Parameters = map[string]any{"value": p.value}
				steps = append(steps, st)
				deps = append(deps, i)
			}
			t.Plan = &state.Plan{Steps: append(steps, step(state.NodeRespond, "answer", deps...))}
			return state.Update{Turn: &t}, nil
		}),
		Respond: node(state.NodeRespond, func(ctx context.Context, s state.State) (state.Update, error) {
			var parts []string
			for _, e := range s.Context.Entries() {
				parts = append(parts, e.Summary)
			}
			return state.Update{Messages: []state.Message{{Role: state.RoleAssistant, Content: "done: " + strings.Join(parts, "; ")}}}, nil
		}),
		Clarify: node(state.NodeClarify, func(ctx context.Context, s state.State) (state.Update, error) {
			return state.Update{Messages: []state.Message{{Role: state.RoleAssistant, Content: "which?", Kind: state.KindClarification}}}, nil
		}),
		RetryPolicy: capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond, Jitter: capabilities.JitterNone},
	}
	if tweak != nil {
		tweak(&cfg)
	}
	return mustAgent(t, cfg)
}

// events renders the thread's audit records of the attempts
// "event[:outcome]", in order (the plan's "planned" record left out).
func events(t *testing.T, a *agent.Agent, thread string) string {
	t.Helper()
	return strings.TrimPrefix(outcomes(audits(t, a, agent.AuditFilter{Thread: thread})), agent.AuditPlanned+" ")
}

// seedStarted writes the started record a process that died during the
// attempt would have left: the key of the first attempt of step idx.
func seedStarted(t *testing.T, store checkpoint.RecordLog, thread string, idx int, target string, value, before float64) {
	t.Helper()
	seed(t, store, agent.AuditRecord{Event: agent.AuditStarted, Thread: thread, Turn: 1, Plan: 1, Step: idx, Attempt: 1,
		IdempotencyKey: fmt.Sprintf("%s/1/1/%d/1", thread, idx), Capability: "set_" + strings.ToLower(target),
		Changes: []capabilities.Change{{Target: target, Value: value, Unit: "A", Tolerance: 0.5}},
		Before:  []capabilities.Reading{{Target: target, Value: before, Unit: "A"}}})
}

func seed(t *testing.T, store checkpoint.RecordLog, r agent.AuditRecord) {
	t.Helper()
	r.Time = time.Now()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"event": r.Event, "capability": r.Capability, "idempotency_key": r.IdempotencyKey}
	if r.Outcome != "" {
		labels["outcome"] = string(r.Outcome)
	}
	if _, err := store.AppendRecords(context.Background(), checkpoint.Record{Kind: "audit", Thread: r.Thread, Time: r.Time, Labels: labels, Data: data}); err != nil {
		t.Fatal(err)
	}
}

// approveAll answers every approval the turn asks with yes until it ends.
func approveAll(t *testing.T, a *agent.Agent, thread string, o outcome) outcome {
	t.Helper()
	for i := 0; o.err == nil && o.last().Status == agent.RunInterrupted; i++ {
		if i > 5 {
			t.Fatal("still asking after 5 answers")
		}
		o = resume(t, a, thread, agent.Answer{ApprovalID: approvalOf(t, o).ID, Text: "yes", By: "op"})
	}
	return o
}

// A run re-entering a write whose start is on record and whose end is not
// (the process died during it) never writes blind: it reconciles.
func TestEffectInDoubtIsReconciled(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    writer
		// machine is the value of Q1 when the run resumes (the write of
		// 105 A happened, did not, or left something else).
		machine  float64
		writes   int    // real writes after the resume
		audit    string // the records after the seeded started one
		message  string // the turn's message contains
		messageK state.MessageKind
	}{
		{"readback shows the change: confirmed, not written again", writer{readback: true}, 105, 0,
			"ended:confirmed(reconciled)", "confirmed by readback after an interruption", state.KindAnswer},
		{"readback shows the value before: not applied, written once", writer{readback: true}, 92, 1,
			"ended:failed(reconciled) approved started ended:confirmed", "Q1 from 92 → 105 A", state.KindAnswer},
		{"readback shows something else: mismatch, not retried", writer{readback: true}, 77, 0,
			"ended:mismatch(reconciled)", "readback does not match", state.KindErrorReport},
		{"no way to tell: unconfirmed, not retried", writer{}, 105, 0,
			"ended:unconfirmed(reconciled)", "may or may not have been carried out", state.KindErrorReport},
		{"the capability's reconciler says it happened", writer{reconcile: func(capabilities.Step) capabilities.Outcome { return capabilities.OutcomeConfirmed }}, 105, 0,
			"ended:confirmed(reconciled)", "confirmed by readback after an interruption", state.KindAnswer},
		{"an idempotent capability runs again with its key", writer{idempotent: true}, 105, 1,
			"ended:unconfirmed(reconciled_idempotent) approved started ended:confirmed", "Q1 from 105 → 105 A", state.KindAnswer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, _ := newSQLite(t)
			m := newMachine()
			w := tc.w
			w.target = "Q1"
			a := m.agent(t, store, map[string]*writer{"set_q1": &w}, plannedWrite{"set_q1", "Q1", 105})
			ap := approvalOf(t, run(t, a, "t", "set Q1 to 105 A"))
			// The process that ran this approval died after recording the
			// start: the journal and the machine say whether it wrote.
			seedStarted(t, store, "t", 0, "Q1", 105, 92)
			m.set("Q1", tc.machine)
			o := approveAll(t, a, "t", resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes", By: "op"}))
			if got := len(m.effects()); got != tc.writes {
				t.Fatalf("%d writes after the resume, want %d: %+v", got, tc.writes, m.effects())
			}
			for _, e := range m.effects() {
				if e.key != "t/1/1/0/1" {
					t.Errorf("wrote under key %q", e.key)
				}
			}
			if got := events(t, a, "t"); !strings.HasSuffix(got, tc.audit) {
				t.Errorf("audit %q, want it to end %q", got, tc.audit)
			}
			msg := o.message()
			if msg == nil || msg.Kind != tc.messageK || !strings.Contains(msg.Content, tc.message) {
				t.Fatalf("message %+v, want %s containing %q", msg, tc.messageK, tc.message)
			}
			if tc.messageK == state.KindErrorReport {
				s := finalState(t, a, "t")
				if e := s.Turn.Plan.Steps[0].Error; e == nil || e.Retry || e.Classification.Severity != capabilities.Critical {
					t.Errorf("step error %+v: want CRITICAL, not retried", e)
				}
			}
		})
	}
}

// A re-entered attempt whose end is on record is replayed from the record:
// the stored result, nothing written.
func TestEffectEndedIsReplayed(t *testing.T) {
	store, _ := newSQLite(t)
	m := newMachine()
	a := m.agent(t, store, map[string]*writer{"set_q1": {target: "Q1", readback: true}}, plannedWrite{"set_q1", "Q1", 105})
	ap := approvalOf(t, run(t, a, "t", "set Q1 to 105 A"))
	seedStarted(t, store, "t", 0, "Q1", 105, 92)
	seed(t, store, agent.AuditRecord{Event: agent.AuditEnded, Outcome: capabilities.OutcomeConfirmed, Thread: "t", Turn: 1, Plan: 1, Attempt: 1,
		IdempotencyKey: "t/1/1/0/1", Capability: "set_q1", Changes: []capabilities.Change{{Target: "Q1", Value: 105.0, Unit: "A"}},
		Result: []byte(`{"values":[{"type":"WRITE","value":{"old":92,"new":105},"summary":"Q1 from 92 → 105 A (the first run)"}]}`)})
	m.set("Q1", 105)
	o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes"})
	if n := len(m.effects()); n != 0 {
		t.Fatalf("%d writes, want none: the attempt ended before", n)
	}
	if msg := o.message(); msg == nil || !strings.Contains(msg.Content, "Q1 from 92 → 105 A (the first run)") {
		t.Fatalf("message %+v: want the recorded result", msg)
	}
}

// The outcome of an attempt that returned: confirmed by readback, a
// mismatch, unconfirmed when it failed part-way and nothing can tell, and
// failed (then retried) when it is known not applied.
func TestEffectOutcomes(t *testing.T) {
	other := 77.0
	timeout := capabilities.NewError(capabilities.Retriable, capabilities.KindTimeout, "the controller did not answer", errors.New("timeout"))
	for _, tc := range []struct {
		name    string
		w       writer
		writes  int
		audit   string
		message string
	}{
		{"confirmed by readback", writer{readback: true}, 1, "asked approved started ended:confirmed", "Q1 from 92 → 105 A"},
		{"confirmed by its report (no readback)", writer{}, 1, "asked approved started ended:confirmed", "Q1 from 92 → 105 A"},
		{"readback differs: mismatch", writer{readback: true, writeOther: &other}, 1, "asked approved started ended:mismatch", "readback does not match"},
		{"failed part-way, cannot tell: unconfirmed", writer{fail: timeout, failAfterWrite: true}, 1,
			"asked approved started ended:unconfirmed(timeout)", "may or may not have been carried out"},
		{"failed part-way, readback shows it applied", writer{readback: true, fail: timeout, failAfterWrite: true}, 1,
			"asked approved started ended:confirmed", "confirmed by readback"},
		{"failed part-way, readback shows the value before: retried once", writer{readback: true, fail: timeout}, 1,
			"asked approved started ended:failed(timeout) started ended:confirmed", "Q1 from 92 → 105 A"},
		{"known not applied: retried under the grant", writer{fail: capabilities.NotApplied(timeout)}, 1,
			"asked approved started ended:failed(timeout) started ended:confirmed", "Q1 from 92 → 105 A"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, _ := newSQLite(t)
			m := newMachine()
			w := tc.w
			w.target = "Q1"
			a := m.agent(t, store, map[string]*writer{"set_q1": &w}, plannedWrite{"set_q1", "Q1", 105})
			o := approveAll(t, a, "t", run(t, a, "t", "set Q1 to 105 A"))
			if n := len(m.effects()); n != tc.writes {
				t.Fatalf("%d writes, want %d", n, tc.writes)
			}
			if got := events(t, a, "t"); got != tc.audit {
				t.Errorf("audit %q, want %q", got, tc.audit)
			}
			if msg := o.message(); msg == nil || !strings.Contains(msg.Content, tc.message) {
				t.Fatalf("message %+v, want it to contain %q", msg, tc.message)
			}
		})
	}
}

// The approval card shows the machine state; a move beyond the tolerance
// before the answer asks again with the new value, within it writes.
func TestEffectApprovalBoundToMachineState(t *testing.T) {
	for _, tc := range []struct {
		name  string
		moved float64
		again bool
	}{
		{"within the tolerance", 92.3, false},
		{"beyond the tolerance", 95, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, _ := newSQLite(t)
			m := newMachine()
			a := m.agent(t, store, map[string]*writer{"set_q1": {target: "Q1", readback: true}}, plannedWrite{"set_q1", "Q1", 105})
			ap := approvalOf(t, run(t, a, "t", "set Q1 to 105 A"))
			if len(ap.Before) != 1 || ap.Before[0].Value != 92.0 {
				t.Fatalf("the card shows %+v, want Q1 at 92 A", ap.Before)
			}
			m.set("Q1", tc.moved)
			o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes", By: "op"})
			if !tc.again {
				if n := len(m.effects()); n != 1 || o.message() == nil {
					t.Fatalf("%d writes, message %+v", n, o.message())
				}
				return
			}
			if n := len(m.effects()); n != 0 {
				t.Fatalf("written after the machine moved: %+v", m.effects())
			}
			again := approvalOf(t, o)
			if again.ID == ap.ID || len(again.Before) != 1 || again.Before[0].Value != tc.moved ||
				!strings.Contains(again.Summary, "moved from 92 A to 95 A") {
				t.Fatalf("asked again %+v", again)
			}
			approveAll(t, a, "t", resume(t, a, "t", agent.Answer{ApprovalID: again.ID, Text: "yes", By: "op"}))
			if n := len(m.effects()); n != 1 {
				t.Fatalf("%d writes after the second yes, want 1", n)
			}
			if got := events(t, a, "t"); got != "asked asked approved started ended:confirmed" {
				t.Errorf("audit %q", got)
			}
		})
	}
}

// An action the application refuses whatever a human says is refused at
// once: nobody is asked, nothing is written, the audit says why.
func TestEffectRefusedWithoutAsking(t *testing.T) {
	store, _ := newSQLite(t)
	m := newMachine()
	a := m.agent(t, store, map[string]*writer{"set_q1": {target: "Q1", readback: true, refuse: true}}, plannedWrite{"set_q1", "Q1", 160})
	o := run(t, a, "t", "set Q1 to 160 A")
	if n := o.count(agent.EventApprovalRequired); n != 0 {
		t.Fatalf("asked %d times to approve a write the application refuses", n)
	}
	if msg := o.message(); msg == nil || msg.Kind != state.KindErrorReport || !strings.Contains(msg.Content, "outside the limits") {
		t.Fatalf("message %+v", msg)
	}
	if got := events(t, a, "t"); got != "refused(limits)" {
		t.Errorf("audit %q", got)
	}
	if len(m.effects()) != 0 {
		t.Fatal("written")
	}
}

// Two writes planned side by side each get their own card, answered in
// either order; a rejection of one leaves the other to its own answer.
func TestEffectParallelWritesApprovedOnTheirOwn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		first   string // which card is answered first: "Q1" or "Q2"
		answers map[string]string
		writes  []string
		kind    state.MessageKind
	}{
		{"Q1 then Q2, both approved", "Q1", map[string]string{"Q1": "yes", "Q2": "yes"}, []string{"Q1", "Q2"}, state.KindAnswer},
		{"Q2 then Q1, both approved", "Q2", map[string]string{"Q1": "yes", "Q2": "yes"}, []string{"Q1", "Q2"}, state.KindAnswer},
		{"Q1 rejected first, Q2 approved", "Q1", map[string]string{"Q1": "no", "Q2": "yes"}, []string{"Q2"}, state.KindRejected},
		{"Q2 approved first, Q1 rejected", "Q2", map[string]string{"Q1": "no", "Q2": "yes"}, []string{"Q2"}, state.KindRejected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, _ := newSQLite(t)
			m := newMachine()
			a := m.agent(t, store, map[string]*writer{"set_q1": {target: "Q1", readback: true}, "set_q2": {target: "Q2", readback: true}},
				plannedWrite{"set_q1", "Q1", 105}, plannedWrite{"set_q2", "Q2", 45})
			o := run(t, a, "t", "set Q1 to 105 A and Q2 to 45 A")
			if n := o.count(agent.EventApprovalRequired); n != 2 {
				t.Fatalf("%d cards, want one per write", n)
			}
			pend, err := a.PendingApprovals(context.Background(), "t")
			if err != nil || len(pend) != 2 {
				t.Fatalf("pending %+v %v", pend, err)
			}
			byTarget := map[string]state.Approval{}
			for _, ap := range pend {
				byTarget[ap.Action.Changes[0].Target] = ap
			}
			order := []string{tc.first, map[string]string{"Q1": "Q2", "Q2": "Q1"}[tc.first]}
			for _, target := range order {
				o = resume(t, a, "t", agent.Answer{ApprovalID: byTarget[target].ID, Text: tc.answers[target], By: "op"})
				if o.err != nil {
					t.Fatal(o.err)
				}
			}
			var got []string
			for _, e := range m.effects() {
				got = append(got, e.target)
			}
			slices.Sort(got)
			if strings.Join(got, ",") != strings.Join(tc.writes, ",") {
				t.Fatalf("wrote %v, want %v", got, tc.writes)
			}
			msg := o.message()
			if msg == nil || msg.Kind != tc.kind {
				t.Fatalf("message %+v, want %s", msg, tc.kind)
			}
			if tc.kind == state.KindRejected && (!strings.Contains(msg.Content, "set Q1 from 92 to 105 A") || !strings.Contains(msg.Content, "a change") ||
				strings.Contains(msg.Content, "Nothing was done")) {
				t.Errorf("the rejection hides what was written: %q", msg.Content)
			}
			finalState(t, a, "t")
			if asked := audits(t, a, agent.AuditFilter{Thread: "t", Event: agent.AuditAsked}); len(asked) != 2 {
				t.Errorf("%d asked records, want one per card (a card asked again after its sibling's answer is the same question)", len(asked))
			}
			for target, answer := range tc.answers {
				want := map[string]string{"yes": "approved", "no": "rejected"}[answer]
				recs := audits(t, a, agent.AuditFilter{Thread: "t", Event: want})
				if want == "approved" && !slices.ContainsFunc(recs, func(r agent.AuditEntry) bool { return r.Changes[0].Target == target }) {
					t.Errorf("no approved record for %s", target)
				}
				if want == "rejected" && (len(recs) != 1 || recs[0].ApprovalID != byTarget[target].ID || recs[0].Answer != "no") {
					t.Errorf("rejection records %+v", recs)
				}
			}
		})
	}
}

// A re-entered attempt that had failed before the crash fails again as it
// did, with its severity: a CRITICAL refusal is not turned into a retry.
func TestEffectFailedIsReplayedWithItsSeverity(t *testing.T) {
	store, _ := newSQLite(t)
	m := newMachine()
	a := m.agent(t, store, map[string]*writer{"set_q1": {target: "Q1", readback: true}}, plannedWrite{"set_q1", "Q1", 105})
	ap := approvalOf(t, run(t, a, "t", "set Q1 to 105 A"))
	seedStarted(t, store, "t", 0, "Q1", 105, 92)
	seed(t, store, agent.AuditRecord{Event: agent.AuditEnded, Outcome: capabilities.OutcomeFailed, Thread: "t", Turn: 1, Plan: 1, Attempt: 1,
		IdempotencyKey: "t/1/1/0/1", Capability: "set_q1", Reason: capabilities.KindLimitViolation, Severity: "critical",
		Message: "105 A is outside the limits of Q1", Changes: []capabilities.Change{{Target: "Q1", Value: 105.0, Unit: "A"}}})
	o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes"})
	if n := len(m.effects()); n != 0 {
		t.Fatalf("%d writes, want none", n)
	}
	if msg := o.message(); msg == nil || msg.Kind != state.KindErrorReport || !strings.Contains(msg.Content, "outside the limits") {
		t.Fatalf("message %+v", msg)
	}
	s := finalState(t, a, "t")
	if e := s.Turn.Plan.Steps[0].Error; e == nil || e.Retry || e.Classification.Severity != capabilities.Critical || e.Classification.Kind != capabilities.KindLimitViolation {
		t.Fatalf("step error %+v", e)
	}
}
