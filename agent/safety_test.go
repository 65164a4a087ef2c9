package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/state"
)

// The execution gate (gate.go) on the compiled agent over SQLite: a
// side-effecting capability that does no checks of its own (set_value
// writes whatever it is given) still never acts without this process's
// write switch, a human's approval of exactly that action and the user's
// stated intent, on every path that executes a step.

// gateWorld is a plant with one setpoint and the agent parts around it:
// task extraction states the intent intentOf gives; the plan sets the value
// planned (parameters.value) with set_value, then answers.
type gateWorld struct {
	mu       sync.Mutex
	writes   []float64 // values set_value wrote
	planned  float64
	intentOf func(input string) intent.Intent
	// failFirst makes set_value's first execution fail RETRIABLE (after
	// which the approved step is tried again).
	failFirst bool
	attempts  int
	// noAction leaves set_value without an Action: the framework binds the
	// approval to the whole step (capabilities.StepAction).
	noAction bool
	// valueAs is how set_value's Action gives the value it writes (nil:
	// a float64).
	valueAs func(v float64) any
	// target is the target set_value's Action names ("": Q1).
	target string
}

var changeRE = regexp.MustCompile(`(?i)^set .* to ([0-9.]+)`)

// statedIntent is what a task extraction would state: "set … to N" is a
// change to N, anything else a read.
func statedIntent(input string) intent.Intent {
	if m := changeRE.FindStringSubmatch(input); m != nil {
		v, _ := strconv.ParseFloat(m[1], 64)
		return intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{{Target: "Q1", Value: &v, Unit: "A"}}}
	}
	return intent.Intent{Kind: intent.KindRead}
}

func newGateWorld(planned float64) *gateWorld {
	return &gateWorld{planned: planned, intentOf: statedIntent}
}

func (w *gateWorld) written() []float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]float64(nil), w.writes...)
}

func (w *gateWorld) setValue(t testing.TB) capabilities.Capability {
	t.Helper()
	def := capabilities.Definition{
		Name: "set_value", Description: "Set the Q1 current", Provides: []string{"WRITE"}, SideEffects: true,
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			// No checks of its own: neither WritesEnabled nor Approved.
			v, err := capabilities.Param(st, "value", 0.0)
			if err != nil {
				return capabilities.Output{}, err
			}
			w.mu.Lock()
			w.attempts++
			first := w.attempts == 1
			w.mu.Unlock()
			if w.failFirst && first {
				// Known not applied: the framework may retry it under the grant.
				return capabilities.Output{}, capabilities.NotApplied(capabilities.NewError(capabilities.Retriable, capabilities.KindTimeout, "the controller did not answer", errors.New("timeout")))
			}
			w.mu.Lock()
			old := 92.0
			if n := len(w.writes); n > 0 {
				old = w.writes[n-1]
			}
			w.writes = append(w.writes, v)
			w.mu.Unlock()
			return capabilities.Result("WRITE", map[string]any{"channel": "Q1", "old": old, "new": v, "readback": v},
				fmt.Sprintf("Q1 from %g → %g A (readback %g)", old, v, v)), nil
		},
	}
	if !w.noAction {
		def.Action = func(st capabilities.Step) (capabilities.Action, error) {
			v, err := capabilities.Param(st, "value", 0.0)
			if err != nil {
				return capabilities.Action{}, err
			}
			var value any = v
			if w.valueAs != nil {
				value = w.valueAs(v)
			}
			target := "Q1"
			if w.target != "" {
				target = w.target
			}
			return capabilities.Action{Changes: []capabilities.Change{{Target: target, Value: value, Unit: "A"}},
				Summary: fmt.Sprintf("set Q1 to %g A", v)}, nil
		}
	}
	c := capabilities.Define(def)
	return c
}

// config is the agent over store with options opts.
func (w *gateWorld) config(t testing.TB, store checkpoint.Store, opts state.Options) agent.Config {
	t.Helper()
	reg := capabilities.NewRegistry()
	if err := reg.Register(w.setValue(t)); err != nil {
		t.Fatal(err)
	}
	node := func(name string, run func(ctx context.Context, s state.State) (state.Update, error)) nodes.Node {
		return &fnNode{name: name, run: run}
	}
	return agent.Config{
		Registry: reg, Store: store, Options: opts,
		TaskExtraction: node(state.NodeTaskExtraction, func(ctx context.Context, s state.State) (state.Update, error) {
			t := s.Turn
			t.Task = &state.Task{Text: s.Turn.Input, Intent: w.intentOf(s.Turn.Input)}
			return state.Update{Turn: &t}, nil
		}),
		Classifier: node(state.NodeClassifier, func(ctx context.Context, s state.State) (state.Update, error) {
			t := s.Turn
			t.ActiveCapabilities = []string{"set_value", state.NodeRespond}
			return state.Update{Turn: &t}, nil
		}),
		Orchestrator: node(state.NodeOrchestrator, func(ctx context.Context, s state.State) (state.Update, error) {
			t := s.Turn
			set := step("set_value", "q1")
			set.Parameters = map[string]any{"value": w.planned}
			t.Plan = &state.Plan{Steps: []state.PlanStep{set, step(state.NodeRespond, "answer", 0)}}
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
		RetryPolicy: fastPolicy(),
	}
}

func (w *gateWorld) agent(t testing.TB, store checkpoint.Store, opts state.Options) *agent.Agent {
	t.Helper()
	return mustAgent(t, w.config(t, store, opts))
}

func sqliteAt(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.New(sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newSQLite(t testing.TB) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "capgraph.db")
	return sqliteAt(t, path), path
}

const setQ1 = "Set the quadrupole Q1 current in the BTS line to 105 A"

var (
	writesOnNoApproval = state.Options{WritesEnabled: true, ApprovalMode: state.ApprovalModeDisabled}
	writesOff          = state.Options{}
)

// refusal returns the error info of a turn that ended refused: the error
// node's report, the step failed CRITICAL with the kind and reason.
func refusal(t *testing.T, a *agent.Agent, thread string, o outcome, kind, reason string) *state.ErrorInfo {
	t.Helper()
	if o.err != nil {
		t.Fatalf("run failed: %v", o.err)
	}
	if st := o.last().Status; st != agent.RunAnswered {
		t.Fatalf("run ended %s, want answered (with an error report)", st)
	}
	if m := o.message(); m == nil || m.Kind != state.KindErrorReport {
		t.Fatalf("the turn's message is %+v, want an error report", m)
	}
	s, _, err := a.State(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	var info *state.ErrorInfo
	for _, ps := range s.Turn.Plan.Steps {
		if ps.Capability == "set_value" {
			info = ps.Error
		}
	}
	if info == nil {
		t.Fatalf("set_value has no error; plan %+v", s.Turn.Plan.Steps)
	}
	if info.Classification.Severity != capabilities.Critical || info.Classification.Kind != kind ||
		info.Classification.Metadata[capabilities.MetaSafetyAbortReason] != reason {
		t.Fatalf("refusal classified %+v, want CRITICAL %s (%s)", info.Classification, kind, reason)
	}
	if info.Retry {
		t.Error("a refusal is retried")
	}
	return info
}

func audits(t *testing.T, a *agent.Agent, f agent.AuditFilter) []agent.AuditEntry {
	t.Helper()
	recs, err := a.Audit(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func outcomes(recs []agent.AuditEntry) string {
	var out []string
	for _, r := range recs {
		s := r.Event
		if r.Outcome != "" && string(r.Outcome) != r.Event {
			s += ":" + string(r.Outcome)
		}
		if r.Reason != "" {
			s += "(" + r.Reason + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// The positive path: side effects are approved whatever the approval mode
// says (here "disabled"), the approval names the exact action, and once a
// human approves, the write happens once, with its records.
func TestGateApprovedWriteRunsOnceAndIsAudited(t *testing.T) {
	store, _ := newSQLite(t)
	w := newGateWorld(105)
	a := w.agent(t, store, writesOnNoApproval)
	ap := approvalOf(t, runReq(t, a, agent.TurnRequest{Thread: "t", Input: setQ1, Metadata: map[string]string{agent.MetaOwner: "ops", agent.MetaTenant: "acc"}}))
	if ap.Action == nil || ap.ActionDigest == "" || ap.Summary != "set Q1 to 105 A" {
		t.Fatalf("approval %+v: want the action, its digest and its summary", ap)
	}
	if len(w.written()) != 0 {
		t.Fatal("written before the approval")
	}
	o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes", By: "op-anna"})
	if o.err != nil || o.last().Status != agent.RunAnswered {
		t.Fatalf("resume: %v %s", o.err, o.last().Status)
	}
	if got := w.written(); len(got) != 1 || got[0] != 105 {
		t.Fatalf("writes %v, want [105]", got)
	}
	recs := audits(t, a, agent.AuditFilter{Thread: "t"})
	if outcomes(recs) != "planned asked approved started ended:confirmed" {
		t.Fatalf("audit %s", outcomes(recs))
	}
	ex := recs[4]
	if ex.ApprovedBy != "op-anna" || ex.ApprovalID != ap.ID || ex.Principal != "ops" || ex.Tenant != "acc" || ex.Digest != ap.ActionDigest ||
		!strings.Contains(ex.ResultSummary, "from 92 → 105") || !strings.Contains(string(ex.Result), `"readback":105`) || ex.Attempt != 1 {
		t.Errorf("executed record %+v", ex)
	}
	if got := audits(t, a, agent.AuditFilter{Outcome: string(capabilities.OutcomeConfirmed), Principal: "ops"}); len(got) != 1 {
		t.Errorf("filtered by outcome and principal: %d records", len(got))
	}
	s, _, _ := a.State(context.Background(), "t")
	if g := s.Turn.Plan.Steps[0].Grant; g == nil || g.By != "op-anna" || g.Digest != ap.ActionDigest || g.Expires.IsZero() {
		t.Errorf("grant %+v", g)
	}
}

// Writes disabled in this process's configuration: the write is refused
// before anyone is asked, whatever the request says.
func TestGateWritesOffRefusesWithoutAsking(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  state.Options
		req  *agent.TurnOptions
	}{
		{"configuration", writesOff, nil},
		{"the turn's option (tightening)", state.Options{WritesEnabled: true}, &agent.TurnOptions{WritesEnabled: new(false)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, _ := newSQLite(t)
			w := newGateWorld(105)
			a := w.agent(t, store, tc.cfg)
			o := runReq(t, a, agent.TurnRequest{Thread: "t", Input: setQ1, Options: tc.req})
			if o.count(agent.EventApprovalRequired) != 0 {
				t.Fatal("a human was asked to approve a write that cannot happen")
			}
			refusal(t, a, "t", o, capabilities.KindWritesDisabled, agent.RefusedWritesDisabled)
			if m := o.message(); !strings.Contains(m.Content, "disabled") {
				t.Errorf("report %q does not say writes are disabled", m.Content)
			}
			if len(w.written()) != 0 {
				t.Fatal("written")
			}
			if recs := audits(t, a, agent.AuditFilter{}); outcomes(recs) != "planned refused(writes_disabled)" {
				t.Fatalf("audit %s", outcomes(recs))
			}
		})
	}
}

// Intent before action (the execution gate's share; planning is h2's): a
// read, or a value the user did not state, is refused before anyone is
// asked.
func TestGateRefusesWithoutChangeIntent(t *testing.T) {
	for _, tc := range []struct {
		name, input, reason string
		planned             float64
	}{
		{"a read", "What is the Q1 current?", agent.RefusedNoChangeIntent, 105},
		{"a negation", "Don't change anything, just read Q1", agent.RefusedNoChangeIntent, 105},
		{"another value than stated", setQ1, agent.RefusedIntentMismatch, 150},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, _ := newSQLite(t)
			w := newGateWorld(tc.planned)
			a := w.agent(t, store, writesOnNoApproval)
			o := runReq(t, a, agent.TurnRequest{Thread: "t", Input: tc.input})
			if o.count(agent.EventApprovalRequired) != 0 {
				t.Fatal("asked to approve a write the user did not ask for")
			}
			refusal(t, a, "t", o, agent.KindRefused, tc.reason)
			if len(w.written()) != 0 {
				t.Fatal("written")
			}
		})
	}
}

// Every number an application's action says it writes is held to the
// user's words, whatever its Go type or shape (a list of setpoints, a
// setting with fields): on the compiled agent, where the step executes.
func TestGateChecksEveryNumberAnActionWrites(t *testing.T) {
	for _, tc := range []struct {
		name    string
		valueAs func(v float64) any
		refused bool
	}{
		{"an int32", func(v float64) any { return int32(v) + 35 }, true},
		{"a list with another setpoint", func(v float64) any { return []float64{v, 140} }, true},
		{"a setting with another number", func(v float64) any { return map[string]any{"setpoint": v, "ramp_to": 140.0} }, true},
		{"a struct", func(v float64) any { return struct{ Setpoint, Limit float64 }{v, 140} }, true},
		{"a numeric string in a list", func(v float64) any { return []any{v, "140"} }, true},
		{"infinity as text", func(v float64) any { return "Infinity" }, true},
		{"no value", func(v float64) any { return nil }, true},
		{"a list of the user's value", func(v float64) any { return []float64{v} }, false},
		{"an int32 of the user's value", func(v float64) any { return int32(v) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newGateWorld(105)
			w.valueAs = tc.valueAs
			if got := gateVerdict(t, w, setQ1, tc.refused); !tc.refused && (len(got) != 1 || got[0] != 105) {
				t.Fatalf("written %v, want [105]", got)
			}
		})
	}
}

// gateVerdict runs input on w's compiled agent. Refused, it wants the
// intent's refusal and nothing written; else it approves the one card
// and returns what was written.
func gateVerdict(t *testing.T, w *gateWorld, input string, refused bool) []float64 {
	t.Helper()
	a := w.agent(t, memoryStore(), writesOnNoApproval)
	o := runReq(t, a, agent.TurnRequest{Thread: "t", Input: input})
	if refused {
		refusal(t, a, "t", o, agent.KindRefused, agent.RefusedIntentMismatch)
		if len(w.written()) != 0 {
			t.Fatal("written")
		}
		return nil
	}
	ap := approvalOf(t, o)
	resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes", By: "op-anna"})
	return w.written()
}

// An on/off change is held to the state the user's words ask for: "turn
// off" never permits writing ON, a word meaning no state, or nothing.
func TestGateHoldsAnOnOffToItsState(t *testing.T) {
	for _, tc := range []struct {
		name    string
		written any
		refused bool
	}{
		{"on for off", "ON", true},
		{"true for off", true, true},
		{"another word", "STANDBY", true},
		{"off", "OFF", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newGateWorld(105)
			w.intentOf = func(input string) intent.Intent { return intent.FromMessage(input).Intent }
			w.valueAs = func(float64) any { return tc.written }
			if got := gateVerdict(t, w, "Turn off the Q1 power supply", tc.refused); !tc.refused && len(got) != 1 {
				t.Fatalf("written %v, want one write", got)
			}
		})
	}
}

// A target naming another device of the kind the user named, besides
// the one asked for, or a pattern that may name others, is refused where
// the step executes.
func TestGateRefusesATargetNamingAnotherDevice(t *testing.T) {
	for _, target := range []string{"BTS:MAG:Q1:CURRENT,BTS:MAG:Q2:CURRENT", "BTS:MAG:Q1*:CURRENT", "BTS:MAG:Q[1-9]:CURRENT", "BTS:MAG:Q{1,2}:CURRENT"} {
		t.Run(target, func(t *testing.T) {
			w := newGateWorld(105)
			w.target = target
			gateVerdict(t, w, setQ1, true)
		})
	}
}

// gateTarget is a user's words and the target the step's action names.
type gateTarget struct {
	input, target string
	refused       bool
}

// gateTargets runs each case on a gate world whose intent is the rules'
// reading of the input: refused, nothing is written; else the approved
// write is the user's 105 A.
func gateTargets(t *testing.T, cases []gateTarget) {
	for _, tc := range cases {
		t.Run(tc.input+" "+tc.target, func(t *testing.T) {
			w := newGateWorld(105)
			w.intentOf = func(input string) intent.Intent { return intent.FromMessage(input).Intent }
			w.target = tc.target
			if got := gateVerdict(t, w, tc.input, tc.refused); !tc.refused && (len(got) != 1 || got[0] != 105) {
				t.Fatalf("written %v, want [105]", got)
			}
		})
	}
}

// A property of the device other than its setting (an alarm limit) is
// written only when the user's words name it, and the user's words naming
// one never permit writing the setting: both are amperes, so only the
// words tell them apart, where the step executes.
func TestGateHoldsAPropertyToTheUsersWords(t *testing.T) {
	gateTargets(t, []gateTarget{
		{setQ1, "BTS:MAG:Q1:CURRENT.HIHI", true},
		{setQ1, "BTS:MAG:Q1:CURRENT:ALARM_HI", true},
		{"Set the Q1 alarm limit to 105 A", "BTS:MAG:Q1:CURRENT", true},
		{"Setze die Alarmgrenze von Q1 auf 105 A", "BTS:MAG:Q1:CURRENT", true},
		{"Set the Q1 alarm limit to 105 A", "BTS:MAG:Q1:CURRENT.HIHI", false},
		{setQ1, "BTS:MAG:Q1:CURRENT", false},
	})
}

// A device code of another shape ("Q1A", "S1Q1") is held to the target as
// it is, where the step executes: a sibling (Q1B, Q1) is refused.
func TestGateHoldsADeviceCodeAsItIs(t *testing.T) {
	gateTargets(t, []gateTarget{
		{"Set Q1A to 105 A", "BTS:MAG:Q1B:CURRENT", true},
		{"Set Q1A to 105 A", "BTS:MAG:Q1:CURRENT", true},
		{"Set S1Q1 to 105 A", "BTS:S2Q1:CURRENT", true},
		{"Set Q1A to 105 A", "BTS:MAG:Q1_A:CURRENT", false},
		{"Set S1Q1 to 105 A", "BTS:S1Q1:CURRENT", false},
	})
}

// Request options may only tighten the configuration (Go API).
func TestLooseningOptionsAreRefused(t *testing.T) {
	cfg := state.Options{ApprovalMode: state.ApprovalModeSelective, PlanApproval: true}
	for _, tc := range []struct {
		setting string
		opts    agent.TurnOptions
	}{
		{state.SettingWritesEnabled, agent.TurnOptions{WritesEnabled: new(true)}},
		{state.SettingApprovalMode, agent.TurnOptions{ApprovalMode: state.ApprovalModeDisabled}},
		{state.SettingPlanApproval, agent.TurnOptions{PlanApproval: new(false)}},
		{state.SettingSkipClassification, agent.TurnOptions{SkipClassification: new(true)}},
		{state.SettingSkipTaskExtraction, agent.TurnOptions{SkipTaskExtraction: new(true)}},
	} {
		t.Run(tc.setting, func(t *testing.T) {
			store, _ := newSQLite(t)
			w := newGateWorld(105)
			a := w.agent(t, store, cfg)
			opts := tc.opts
			o := runReq(t, a, agent.TurnRequest{Thread: "t", Input: setQ1, Options: &opts})
			var le *agent.LoosenError
			if !errors.As(o.err, &le) || !errors.Is(o.err, agent.ErrLoosen) || le.Setting != tc.setting {
				t.Fatalf("err = %v, want a *LoosenError naming %s", o.err, tc.setting)
			}
			if !strings.Contains(o.err.Error(), tc.setting) {
				t.Errorf("message %q does not name the setting", o.err)
			}
			if _, _, err := a.State(context.Background(), "t"); !errors.Is(err, agent.ErrUnknownThread) {
				t.Errorf("the refused request wrote the thread: %v", err)
			}
			if len(w.written()) != 0 {
				t.Fatal("written")
			}
		})
	}
	t.Run("tightening is accepted", func(t *testing.T) {
		a := newGateWorld(105).agent(t, memoryStore(), state.Options{WritesEnabled: true})
		got, err := a.TurnOptions(agent.TurnRequest{Options: &agent.TurnOptions{ApprovalMode: state.ApprovalModeAll, PlanApproval: new(true), WritesEnabled: new(false)}})
		if err != nil || got.WritesEnabled || !got.PlanApproval || got.ApprovalMode != state.ApprovalModeAll {
			t.Fatalf("%+v %v", got, err)
		}
		got, err = a.TurnOptions(agent.TurnRequest{Options: &agent.TurnOptions{ApprovalMode: state.ApprovalModeAll}})
		if err != nil || !got.WritesEnabled {
			t.Fatalf("an absent option does not keep the configured one: %+v %v", got, err)
		}
	})
	t.Run("a key that may raise the approval mode", func(t *testing.T) {
		a := newGateWorld(105).agent(t, memoryStore(), cfg)
		got, err := a.TurnOptions(agent.TurnRequest{Options: &agent.TurnOptions{ApprovalMode: state.ApprovalModeDisabled}, MayRaise: []string{state.SettingApprovalMode}})
		if err != nil || got.ApprovalMode != state.ApprovalModeDisabled {
			t.Fatalf("%+v %v", got, err)
		}
		if _, err := a.TurnOptions(agent.TurnRequest{Options: &agent.TurnOptions{PlanApproval: new(false)}, MayRaise: []string{state.SettingApprovalMode}}); !errors.Is(err, agent.ErrLoosen) {
			t.Fatalf("may_raise approval_mode let plan_approval loosen: %v", err)
		}
		if _, err := a.TurnOptions(agent.TurnRequest{MayRaise: []string{state.SettingWritesEnabled}}); !errors.Is(err, agent.ErrBadRequest) {
			t.Fatalf("may_raise writes_enabled: %v", err)
		}
	})
	t.Run("unknown JSON option", func(t *testing.T) {
		var o agent.TurnOptions
		if err := json.Unmarshal([]byte(`{"writes_enable":true}`), &o); err == nil || !strings.Contains(err.Error(), "writes_enable") {
			t.Fatalf("a misspelt option was accepted: %v", err)
		}
	})
}

// The switch turned off between the approval and the execution: the
// process that executes decides, on every path.
func TestGateSwitchOffBetweenApprovalAndExecution(t *testing.T) {
	answer := func(ap *state.Approval) agent.Answer {
		return agent.Answer{ApprovalID: ap.ID, Text: "yes", By: "op"}
	}
	t.Run("same process, reconfigured agent", func(t *testing.T) {
		store, _ := newSQLite(t)
		w := newGateWorld(105)
		ap := approvalOf(t, runReq(t, w.agent(t, store, writesOnNoApproval), agent.TurnRequest{Thread: "t", Input: setQ1}))
		off := w.agent(t, store, writesOff)
		o := resume(t, off, "t", answer(ap))
		refusal(t, off, "t", o, capabilities.KindWritesDisabled, agent.RefusedWritesDisabled)
		if len(w.written()) != 0 {
			t.Fatal("written with the switch off")
		}
		recs := audits(t, off, agent.AuditFilter{Event: agent.AuditRefused})
		if len(recs) != 1 || recs[0].ApprovalID != ap.ID || recs[0].ApprovedBy != "op" {
			t.Fatalf("refusal record %+v", recs)
		}
	})
	t.Run("new process on the same SQLite file, answered with a yes message", func(t *testing.T) {
		first, path := newSQLite(t)
		w := newGateWorld(105)
		approvalOf(t, runReq(t, w.agent(t, first, writesOnNoApproval), agent.TurnRequest{Thread: "t", Input: setQ1}))
		first.Close() // the first process is gone
		second := sqliteAt(t, path)
		off := w.agent(t, second, writesOff)
		// `capgraph run --thread t --answer yes yes` without a config.
		o := runReq(t, off, agent.TurnRequest{Thread: "t", Input: "yes", By: "cli:op"})
		refusal(t, off, "t", o, capabilities.KindWritesDisabled, agent.RefusedWritesDisabled)
		if len(w.written()) != 0 {
			t.Fatal("written with the switch off")
		}
	})
	for _, via := range []string{"RecoverRuns", "ClaimUnfinished"} {
		t.Run("crash after the answer, recovered with "+via, func(t *testing.T) {
			for _, on := range []bool{false, true} {
				store, _ := newSQLite(t)
				w := newGateWorld(105)
				ap := approvalOf(t, runReq(t, w.agent(t, store, writesOnNoApproval), agent.TurnRequest{Thread: "t", Input: setQ1}))
				crashAfterAnswer(t, w, store, "t", answer(ap))
				opts := writesOff
				if on {
					opts = writesOnNoApproval
				}
				rec := w.agent(t, store, opts)
				recoverWith(t, rec, via)
				got := w.written()
				if on && (len(got) != 1 || got[0] != 105) {
					t.Fatalf("writes on: recovered run wrote %v, want [105]", got)
				}
				if !on {
					if len(got) != 0 {
						t.Fatalf("writes off: recovered run wrote %v", got)
					}
					s, _, _ := rec.State(context.Background(), "t")
					if e := s.Turn.Plan.Steps[0].Error; e == nil || e.Classification.Kind != capabilities.KindWritesDisabled {
						t.Fatalf("step error %+v", e)
					}
				}
			}
		})
	}
}

// crashAfterAnswer answers the approval and "crashes" right after the
// answer is stored: the run stops before the step runs, leaving an
// unfinished run holding the answer.
func crashAfterAnswer(t *testing.T, w *gateWorld, store *sqlite.Store, thread string, ans agent.Answer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := &cancelStore{Store: store, cancel: cancel}
	cfg := w.config(t, cs, writesOnNoApproval)
	cfg.AuditLog = store
	a := mustAgent(t, cfg)
	for _, err := range a.Resume(ctx, thread, ans) {
		_ = err
	}
	if len(w.written()) != 0 {
		t.Fatal("the crashed run wrote")
	}
	if un, err := a.Unfinished(context.Background()); err != nil || len(un) != 1 {
		t.Fatalf("unfinished %v %v", un, err)
	}
}

// cancelStore cancels the run once the answer is stored.
type cancelStore struct {
	*sqlite.Store
	cancel context.CancelFunc
}

func (s *cancelStore) PutWrites(ctx context.Context, thread string, id uuid.UUID, ws []checkpoint.Write) error {
	err := s.Store.PutWrites(ctx, thread, id, ws)
	for _, w := range ws {
		if w.Kind == checkpoint.WriteResume {
			s.cancel()
		}
	}
	return err
}

// PutTuple is how the engine stores an answer with SQLite.
func (s *cancelStore) PutTuple(ctx context.Context, t checkpoint.Tuple) error {
	err := s.Store.PutTuple(ctx, t)
	for _, w := range t.Writes {
		if w.Kind == checkpoint.WriteResume {
			s.cancel()
		}
	}
	return err
}

func recoverWith(t *testing.T, a *agent.Agent, via string) {
	t.Helper()
	if via == "RecoverRuns" {
		got, err := a.RecoverRuns(context.Background())
		if err != nil || len(got) != 1 {
			t.Fatalf("RecoverRuns: %v %v", got, err)
		}
		return
	}
	n := 0
	for cr, err := range a.ClaimUnfinished(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		for _, err := range cr.Resume(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if n != 1 {
		t.Fatalf("claimed %d runs", n)
	}
}

// A second replica on a shared store, with the switch off, carries out
// neither an answer it receives nor a run it takes over.
func TestGateReplicaWithWritesOff(t *testing.T) {
	for _, be := range backends {
		t.Run(be.Name, func(t *testing.T) {
			for _, path := range []string{"answer", "takeover"} {
				s1, s2 := be.Open(t)
				w := newGateWorld(105)
				on, off := w.agent(t, s1, writesOnNoApproval), w.agent(t, s2, writesOff)
				thread := "t-" + path
				ap := approvalOf(t, runReq(t, on, agent.TurnRequest{Thread: thread, Input: setQ1}))
				if path == "answer" {
					o := resume(t, off, thread, agent.Answer{ApprovalID: ap.ID, Text: "yes"})
					refusal(t, off, thread, o, capabilities.KindWritesDisabled, agent.RefusedWritesDisabled)
				} else {
					ctx, cancel := context.WithCancel(context.Background())
					cfg := w.config(t, &cancelLeasing{leasingStore: s1, cancel: cancel}, writesOnNoApproval)
					cfg.AuditLog = s1.(checkpoint.RecordLog)
					a := mustAgent(t, cfg)
					for range a.Resume(ctx, thread, agent.Answer{ApprovalID: ap.ID, Text: "yes"}) {
					}
					cancel()
					for cr, err := range off.ClaimUnfinished(context.Background()) {
						if err != nil {
							t.Fatal(err)
						}
						for range cr.Resume(context.Background()) {
						}
					}
					s, _, _ := off.State(context.Background(), thread)
					if e := s.Turn.Plan.Steps[0].Error; e == nil || e.Classification.Kind != capabilities.KindWritesDisabled {
						t.Fatalf("taken-over run: step error %+v", e)
					}
				}
				if len(w.written()) != 0 {
					t.Fatalf("%s: written by a replica whose switch is off", path)
				}
			}
		})
	}
}

type cancelLeasing struct {
	leasingStore
	cancel context.CancelFunc
}

func (s *cancelLeasing) PutWrites(ctx context.Context, thread string, id uuid.UUID, ws []checkpoint.Write) error {
	err := s.leasingStore.PutWrites(ctx, thread, id, ws)
	for _, w := range ws {
		if w.Kind == checkpoint.WriteResume {
			s.cancel()
		}
	}
	return err
}

// An approval binds to the action's digest: an approval for 105 A does not
// write 150 A, however the step came to describe another value.
func TestGateApprovalForOneValueDoesNotWriteAnother(t *testing.T) {
	// The intent permits both values (two stated changes of Q1), so only
	// the approval's digest tells them apart.
	anyValue := func(string) intent.Intent {
		v1, v2 := 105.0, 150.0
		return intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{{Target: "Q1", Value: &v1, Unit: "A"}, {Target: "Q1", Value: &v2, Unit: "A"}}}
	}
	t.Run("step parameters changed in the checkpoint after the question", func(t *testing.T) {
		for _, noAction := range []bool{false, true} {
			store, _ := newSQLite(t)
			w := newGateWorld(105)
			w.intentOf, w.noAction = anyValue, noAction
			a := w.agent(t, store, writesOnNoApproval)
			ap := approvalOf(t, runReq(t, a, agent.TurnRequest{Thread: "t", Input: "raise Q1 a bit"}))
			setPlannedValue(t, store, "t", 150)
			o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes"})
			refusal(t, a, "t", o, agent.KindRefused, agent.RefusedActionChanged)
			if len(w.written()) != 0 {
				t.Fatalf("noAction=%v: wrote %v with an approval for 105", noAction, w.written())
			}
		}
	})
	t.Run("a retry of the approved step whose value changed", func(t *testing.T) {
		store, _ := newSQLite(t)
		clk := newClock()
		w := newGateWorld(105)
		w.intentOf, w.failFirst = anyValue, true
		cfg := w.config(t, store, writesOnNoApproval)
		cfg.Now, cfg.ApprovalExpiry, cfg.Limits.MaxExecutionTime = clk.Now, 24*time.Hour, 24*time.Hour
		cfg.CapabilityRetry = map[string]capabilities.RetryPolicy{"set_value": {MaxAttempts: 3, InitialInterval: time.Minute, Jitter: capabilities.JitterNone}}
		a := mustAgent(t, cfg)
		ap := approvalOf(t, runReq(t, a, agent.TurnRequest{Thread: "t", Input: "raise Q1 a bit"}))
		// The first attempt fails RETRIABLE; the run stops while it waits
		// for the retry, and the step's value is changed meanwhile.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		for range a.Resume(ctx, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes"}) {
		}
		cancel()
		s, _, _ := a.State(context.Background(), "t")
		if g := s.Turn.Plan.Steps[0].Grant; g == nil || s.Turn.Plan.Steps[0].Attempts != 1 {
			t.Fatalf("after the failed attempt: grant %+v, attempts %d", g, s.Turn.Plan.Steps[0].Attempts)
		}
		setPlannedValue(t, store, "t", 150)
		clk.Add(2 * time.Minute)
		if _, err := a.RecoverRuns(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(w.written()) != 0 {
			t.Fatalf("wrote %v with an approval for 105", w.written())
		}
		s, _, _ = a.State(context.Background(), "t")
		if e := s.Turn.Plan.Steps[0].Error; e == nil || e.Classification.Metadata[capabilities.MetaSafetyAbortReason] != agent.RefusedActionChanged {
			t.Fatalf("step error %+v", e)
		}
		if recs := audits(t, a, agent.AuditFilter{}); outcomes(recs) != "planned asked approved started ended:failed(timeout) refused(action_changed)" {
			t.Fatalf("audit %s", outcomes(recs))
		}
	})
}

// setPlannedValue rewrites set_value's parameters in the thread's latest
// checkpoint, in place (its pending writes stay attached).
func setPlannedValue(t *testing.T, store checkpoint.Store, thread string, v float64) {
	t.Helper()
	tu, err := store.Get(context.Background(), thread, uuid.Nil)
	if err != nil {
		t.Fatal(err)
	}
	var s state.State
	if err := json.Unmarshal(tu.Checkpoint.State, &s); err != nil {
		t.Fatal(err)
	}
	s.Turn.Plan.Steps[0].Parameters = map[string]any{"value": v}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	cp := tu.Checkpoint
	cp.State = b
	if err := store.Put(context.Background(), cp); err != nil {
		t.Fatal(err)
	}
}

// A grant expires: an approved step that has not run within the approval
// expiry, counted from the answer, is refused.
func TestGateGrantExpires(t *testing.T) {
	store, _ := newSQLite(t)
	clk := newClock()
	w := newGateWorld(105)
	cfg := w.config(t, store, writesOnNoApproval)
	cfg.Now, cfg.ApprovalExpiry, cfg.Limits.MaxExecutionTime = clk.Now, time.Hour, 24*time.Hour
	a := mustAgent(t, cfg)
	ap := approvalOf(t, runReq(t, a, agent.TurnRequest{Thread: "t", Input: setQ1}))
	crashAfterAnswerAt(t, w, store, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes"}, clk)
	clk.Add(2 * time.Hour) // recovered long after the answer
	if _, err := a.RecoverRuns(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(w.written()) != 0 {
		t.Fatal("an expired approval wrote")
	}
	s, _, _ := a.State(context.Background(), "t")
	if e := s.Turn.Plan.Steps[0].Error; e == nil || e.Classification.Metadata[capabilities.MetaSafetyAbortReason] != agent.RefusedApprovalExpired {
		t.Fatalf("step error %+v", e)
	}
}

func crashAfterAnswerAt(t *testing.T, w *gateWorld, store *sqlite.Store, thread string, ans agent.Answer, clk *clock) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := w.config(t, &cancelStore{Store: store, cancel: cancel}, writesOnNoApproval)
	cfg.AuditLog, cfg.Now, cfg.ApprovalExpiry, cfg.Limits.MaxExecutionTime = store, clk.Now, time.Hour, 24*time.Hour
	for range mustAgent(t, cfg).Resume(ctx, thread, ans) {
	}
}

// A caller that may not use the capability never gets it run.
func TestGateCallerNotAllowed(t *testing.T) {
	store, _ := newSQLite(t)
	w := newGateWorld(105)
	cfg := w.config(t, store, writesOnNoApproval)
	a := mustAgent(t, cfg)
	// The plan (the scripted orchestrator) names set_value although the
	// caller may use only respond: the orchestrator check refuses it
	// before any step; the step wrapper is the backstop (allow_test.go).
	o := runReq(t, a, agent.TurnRequest{Thread: "t", Input: setQ1, AllowedCapabilities: []string{state.NodeRespond}})
	if o.err != nil || o.message() == nil || o.message().Kind != state.KindErrorReport {
		t.Fatalf("%v %+v", o.err, o.message())
	}
	if len(w.written()) != 0 {
		t.Fatal("written")
	}
}

// A side-effecting capability needs an audit log: New refuses a store
// that keeps no records unless one is given.
func TestSideEffectsNeedAnAuditLog(t *testing.T) {
	w := newGateWorld(105)
	cfg := w.config(t, plainStore{memoryStore()}, writesOnNoApproval)
	if _, err := agent.New(cfg); err == nil || !strings.Contains(err.Error(), "AuditLog") {
		t.Fatalf("New: %v", err)
	}
	cfg.AuditLog = memoryStore()
	if _, err := agent.New(cfg); err != nil {
		t.Fatal(err)
	}
}

func memoryStore() *memory.Store { return memory.New() }

// plainStore hides every optional interface of a store.
type plainStore struct{ checkpoint.Store }

// A rejection names what the human was asked.
func TestGateRejectionNamesTheApprovedAction(t *testing.T) {
	store, _ := newSQLite(t)
	w := newGateWorld(105)
	a := w.agent(t, store, writesOnNoApproval)
	ap := approvalOf(t, runReq(t, a, agent.TurnRequest{Thread: "t", Input: setQ1}))
	o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "no", By: "op"})
	wantRejected(t, o)
	if m := o.message(); !strings.Contains(m.Content, "set Q1 to 105 A") {
		t.Errorf("rejection %q does not name the action", m.Content)
	}
	if recs := audits(t, a, agent.AuditFilter{}); outcomes(recs) != "planned asked rejected" || recs[2].ApprovedBy != "op" || recs[2].Answer != "no" {
		t.Fatalf("audit %s %+v", outcomes(recs), recs)
	}
}

// A plan approved for one value and edited by the human to another than
// the user asked for: the write is refused (or the edit is, when plan
// validation already checks intent); nothing is written.
func TestGateEditedPlanWithAnotherValue(t *testing.T) {
	store, _ := newSQLite(t)
	w := newGateWorld(105)
	a := w.agent(t, store, state.Options{WritesEnabled: true, PlanApproval: true})
	ap := approvalOf(t, runReq(t, a, agent.TurnRequest{Thread: "t", Input: setQ1}))
	if ap.Kind != state.ApprovalPlan || ap.Plan == nil {
		t.Fatalf("approval %+v, want the plan", ap)
	}
	edited := *ap.Plan
	edited.Steps = append([]state.PlanStep(nil), ap.Plan.Steps...)
	edited.Steps[0].Parameters = map[string]any{"value": 150.0}
	o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Plan: &edited, By: "op"})
	switch {
	case errors.Is(o.err, agent.ErrInvalidPlan):
		// Refused as an edit: the plan approval stays pending.
	case o.err != nil:
		t.Fatalf("resume: %v", o.err)
	default:
		if o.count(agent.EventApprovalRequired) != 0 {
			t.Fatal("asked to approve 150 A, which the user did not ask for")
		}
		refusal(t, a, "t", o, agent.KindRefused, agent.RefusedIntentMismatch)
	}
	if len(w.written()) != 0 {
		t.Fatalf("written: %v", w.written())
	}
}
