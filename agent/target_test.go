package agent_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/postgres/pgtest"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/state"
)

// Targets on the compiled agent over SQLite and PostgreSQL: a write acts on
// the turn's target and no other (a journal per target proves which one
// wrote), each target's switch, approval policy and limit hold where the
// step executes, also in another process with another configuration, and
// the audit and the words every frontend shows name the target.

// durableStores are the stores the time-travel tests run on: SQLite, and
// PostgreSQL (under CI=true a missing database fails the test). open gives
// two handles on one store, as two processes (or a restart) hold.
var durableStores = []struct {
	name string
	open func(t *testing.T) (checkpoint.Store, checkpoint.Store)
}{
	{"sqlite", func(t *testing.T) (checkpoint.Store, checkpoint.Store) {
		path := filepath.Join(t.TempDir(), "tt.db")
		var out [2]checkpoint.Store
		for i := range out {
			s, err := sqlite.New(sqlite.Config{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			out[i] = s
		}
		return out[0], out[1]
	}},
	{"postgres", func(t *testing.T) (checkpoint.Store, checkpoint.Store) {
		r := pgtest.Replicas(t, 2)
		return r[0], r[1]
	}},
}

// plants is one machine per target: the live one and its simulator.
type plants map[string]*machine

func newPlants() plants {
	return plants{capabilities.TargetLive: newMachine(), capabilities.TargetSimulator: newMachine()}
}

// journals renders how many writes each target's journal holds.
func (p plants) journals() string {
	return fmt.Sprintf("live=%d simulator=%d", len(p[capabilities.TargetLive].effects()), len(p[capabilities.TargetSimulator].effects()))
}

// targetedWrite is a side-effecting capability that acts on the machine of
// the step's target (capabilities.Targeter), reads it back and describes
// its action.
type targetedWrite struct {
	name, channel string
	plants        plants
	// cut, when set, is closed after the write, which then waits for the
	// run to be canceled: a process that died after the effect.
	cut chan struct{}
}

func (w *targetedWrite) Name() string                         { return w.name }
func (w *targetedWrite) Description() string                  { return "set " + w.channel }
func (w *targetedWrite) Provides() []string                   { return []string{"WRITE"} }
func (w *targetedWrite) Requires() []capabilities.Requirement { return nil }
func (w *targetedWrite) SideEffects() bool                    { return true }
func (w *targetedWrite) Targets() []string {
	return []string{capabilities.TargetLive, capabilities.TargetSimulator}
}

func (w *targetedWrite) machine(target string) (*machine, error) {
	m, ok := w.plants[target]
	if !ok {
		return nil, fmt.Errorf("no machine for target %q", target)
	}
	return m, nil
}

func (w *targetedWrite) DescribeAction(st capabilities.Step) (capabilities.Action, error) {
	v, err := capabilities.Param(st, "value", 0.0)
	if err != nil {
		return capabilities.Action{}, err
	}
	m, err := w.machine(st.Target)
	if err != nil {
		return capabilities.Action{}, err
	}
	return capabilities.Action{Capability: w.name, Changes: []capabilities.Change{{Target: w.channel, Value: v, Unit: "A", Tolerance: 0.5}},
		Summary: fmt.Sprintf("set %s from %g to %g A", w.channel, m.get(w.channel), v)}, nil
}

func (w *targetedWrite) Readback(_ context.Context, a capabilities.Action) ([]capabilities.Reading, error) {
	m, err := w.machine(a.Target)
	if err != nil {
		return nil, err
	}
	return []capabilities.Reading{{Target: w.channel, Value: m.get(w.channel), Unit: "A"}}, nil
}

func (w *targetedWrite) Execute(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
	v, err := capabilities.Param(st, "value", 0.0)
	if err != nil {
		return capabilities.Output{}, capabilities.NotApplied(err)
	}
	m, err := w.machine(st.Target)
	if err != nil {
		return capabilities.Output{}, capabilities.NotApplied(err)
	}
	m.mu.Lock()
	old := m.value[w.channel]
	m.value[w.channel] = v
	m.journal = append(m.journal, effect{st.IdempotencyKey, w.channel, v})
	m.mu.Unlock()
	if w.cut != nil {
		close(w.cut)
		<-ctx.Done()
		return capabilities.Output{}, ctx.Err()
	}
	return capabilities.Result("WRITE", map[string]any{"old": old, "new": v}, fmt.Sprintf("%s from %g → %g A", w.channel, old, v)), nil
}

// targetPosture is the usual configuration: both targets take writes, the
// simulator is simulated; live is the default.
func targetPosture() map[string]agent.TargetPolicy {
	return map[string]agent.TargetPolicy{
		capabilities.TargetLive:      {WritesEnabled: true},
		capabilities.TargetSimulator: {WritesEnabled: true, Simulated: true},
	}
}

// targetAgent is an agent over store whose plan writes the values given
// with set_q1 (targeted) and, when untargeted is set, set_q2 (a
// side-effecting capability that knows no targets, acting on live's machine).
func targetAgent(t *testing.T, store checkpoint.Store, p plants, tweak func(*agent.Config), plan ...plannedWrite) *agent.Agent {
	t.Helper()
	caps := map[string]*writer{}
	for _, w := range plan {
		caps[w.capability] = &writer{target: w.target, readback: true}
	}
	return p[capabilities.TargetLive].agentWith(t, store, func(cfg *agent.Config) {
		reg := capabilities.NewRegistry()
		for _, w := range plan {
			var c capabilities.Capability = &targetedWrite{name: w.capability, channel: w.target, plants: p}
			if w.capability == "set_q2" {
				c = p[capabilities.TargetLive].capability(t, w.capability, caps[w.capability])
			}
			if _, dup := reg.Get(w.capability); !dup {
				if err := reg.Register(c); err != nil {
					t.Fatal(err)
				}
			}
		}
		cfg.Registry = reg
		cfg.Targets = targetPosture()
		cfg.Options.Target = capabilities.TargetLive
		if tweak != nil {
			tweak(cfg)
		}
	}, caps, plan...)
}

// runOn runs a turn that asks for target.
func runOn(t *testing.T, a *agent.Agent, thread, target string) outcome {
	t.Helper()
	var o outcome
	req := agent.TurnRequest{Thread: thread, Input: "set Q1 to 105 A", Options: &agent.TurnOptions{Target: target}}
	for ev, err := range a.Run(context.Background(), req) {
		o.events = append(o.events, ev)
		if err != nil {
			o.err = err
		}
	}
	return o
}

// A turn on the simulator writes the simulator and nothing else; its
// approval, its audit records and its outcome line name the target; a turn
// on live writes live.
func TestTargetWriteActsOnTheTurnsTarget(t *testing.T) {
	for _, st := range durableStores {
		t.Run(st.name, func(t *testing.T) {
			store, _ := st.open(t)
			p := newPlants()
			a := targetAgent(t, store, p, nil, plannedWrite{"set_q1", "Q1", 105})
			o := runOn(t, a, "sim", capabilities.TargetSimulator)
			ap := approvalOf(t, o)
			if !strings.HasPrefix(ap.Summary, "on the simulator target: set Q1") || ap.Action == nil || ap.Action.Target != capabilities.TargetSimulator {
				t.Fatalf("approval %q (action %+v) does not name the simulator", ap.Summary, ap.Action)
			}
			o = approveAll(t, a, "sim", o)
			wantAnswer(t, o)
			if got := p.journals(); got != "live=0 simulator=1" {
				t.Fatalf("journals %s after a simulator turn", got)
			}
			if v := p[capabilities.TargetLive].get("Q1"); v != 92 {
				t.Fatalf("live Q1 = %g, want untouched 92", v)
			}
			recs := audits(t, a, agent.AuditFilter{Thread: "sim", Event: agent.AuditEnded})
			if len(recs) != 1 || recs[0].Target != capabilities.TargetSimulator || recs[0].Outcome != capabilities.OutcomeConfirmed {
				t.Fatalf("ended records %+v, want one confirmed on simulator", recs)
			}
			if line := agent.DescribeOutcome(recs[0].AuditRecord); !strings.HasPrefix(line, "on the simulator target: set Q1") {
				t.Fatalf("outcome line %q does not name the target", line)
			}
			wantAnswer(t, approveAll(t, a, "live", runOn(t, a, "live", "")))
			if got := p.journals(); got != "live=1 simulator=1" {
				t.Fatalf("journals %s after a live turn (the default target)", got)
			}
			if recs := audits(t, a, agent.AuditFilter{Thread: "live", Event: agent.AuditStarted}); len(recs) != 1 || recs[0].Target != capabilities.TargetLive {
				t.Fatalf("started records of the live turn %+v", recs)
			}
		})
	}
}

// Each target's switch holds: with live's writes off, a live write is
// refused before anyone is asked, while the simulator still asks and writes.
func TestTargetWriteSwitchPerTarget(t *testing.T) {
	for _, st := range durableStores {
		t.Run(st.name, func(t *testing.T) {
			store, _ := st.open(t)
			p := newPlants()
			a := targetAgent(t, store, p, func(cfg *agent.Config) {
				cfg.Targets[capabilities.TargetLive] = agent.TargetPolicy{WritesEnabled: false}
			}, plannedWrite{"set_q1", "Q1", 105})
			o := runOn(t, a, "live", capabilities.TargetLive)
			if o.err != nil || o.last().Status == agent.RunInterrupted {
				t.Fatalf("a live write with live's writes off asked or failed: %v, %s", o.err, o.last().Status)
			}
			if got := events(t, a, "live"); got != "refused(writes_disabled)" {
				t.Fatalf("audit %q, want the refusal", got)
			}
			if m := o.message(); m == nil || !strings.Contains(m.Content, "live target") {
				t.Fatalf("report %+v does not name the live target", m)
			}
			wantAnswer(t, approveAll(t, a, "sim", runOn(t, a, "sim", capabilities.TargetSimulator)))
			if got := p.journals(); got != "live=0 simulator=1" {
				t.Fatalf("journals %s", got)
			}
		})
	}
}

// The answer to a simulator write's approval, carried out by another
// process whose configuration turns the simulator's writes off, writes
// nothing: the posture is read where the step executes. The same answer in
// a process that does not know the target at all is refused too.
func TestTargetPostureOfTheProcessThatExecutes(t *testing.T) {
	for _, st := range durableStores {
		t.Run(st.name, func(t *testing.T) {
			s1, s2 := st.open(t)
			p := newPlants()
			a := targetAgent(t, s1, p, nil, plannedWrite{"set_q1", "Q1", 105})
			off := targetAgent(t, s2, p, func(cfg *agent.Config) {
				cfg.Targets[capabilities.TargetSimulator] = agent.TargetPolicy{Simulated: true}
			}, plannedWrite{"set_q1", "Q1", 105})
			ap := approvalOf(t, runOn(t, a, "sim", capabilities.TargetSimulator))
			o := resume(t, off, "sim", agent.Answer{ApprovalID: ap.ID, Text: "yes", By: "op"})
			if o.err != nil {
				t.Fatal(o.err)
			}
			if got := events(t, off, "sim"); got != "asked refused(writes_disabled)" {
				t.Fatalf("audit %q", got)
			}
			unknown := targetAgent(t, s2, p, func(cfg *agent.Config) {
				delete(cfg.Targets, capabilities.TargetSimulator)
			}, plannedWrite{"set_q1", "Q1", 105})
			ap = approvalOf(t, runOn(t, a, "sim2", capabilities.TargetSimulator))
			if o := resume(t, unknown, "sim2", agent.Answer{ApprovalID: ap.ID, Text: "yes", By: "op"}); o.err != nil {
				t.Fatal(o.err)
			}
			if got := events(t, unknown, "sim2"); !strings.HasSuffix(got, "refused(writes_disabled)") && !strings.HasSuffix(got, "refused(unknown_target)") {
				t.Fatalf("audit %q, want a refusal", got)
			}
			if got := p.journals(); got != "live=0 simulator=0" {
				t.Fatalf("journals %s: a refused write ran", got)
			}
		})
	}
}

// A side-effecting capability that names no targets acts on the default
// (live) machine, so a turn on the simulator never runs it.
func TestTargetUntargetedCapabilityOnlyOnTheDefault(t *testing.T) {
	for _, st := range durableStores {
		t.Run(st.name, func(t *testing.T) {
			store, _ := st.open(t)
			p := newPlants()
			a := targetAgent(t, store, p, nil, plannedWrite{"set_q2", "Q2", 45})
			o := runOn(t, a, "sim", capabilities.TargetSimulator)
			if o.err != nil || o.last().Status == agent.RunInterrupted {
				t.Fatalf("asked or failed: %v", o.err)
			}
			if got := events(t, a, "sim"); got != "refused(target_unsupported)" {
				t.Fatalf("audit %q", got)
			}
			if got := p.journals(); got != "live=0 simulator=0" {
				t.Fatalf("journals %s", got)
			}
		})
	}
}

// A simulated target may skip approvals and cap the writes of a turn: the
// first write runs without asking, the second is refused by the cap, on
// the record; live still asks.
func TestTargetApprovalPolicyAndLimit(t *testing.T) {
	for _, st := range durableStores {
		t.Run(st.name, func(t *testing.T) {
			store, _ := st.open(t)
			p := newPlants()
			a := targetAgent(t, store, p, func(cfg *agent.Config) {
				cfg.Targets[capabilities.TargetSimulator] = agent.TargetPolicy{WritesEnabled: true, Simulated: true,
					Approval: agent.TargetApprovalNone, MaxWritesPerTurn: 1}
			}, plannedWrite{"set_q1", "Q1", 105}, plannedWrite{"set_q3", "Q3", 7})
			o := runOn(t, a, "sim", capabilities.TargetSimulator)
			if o.err != nil || o.last().Status == agent.RunInterrupted {
				t.Fatalf("a simulator turn with approval none asked or failed: %v", o.err)
			}
			recs := audits(t, a, agent.AuditFilter{Thread: "sim"})
			var got []string
			for _, r := range recs {
				if r.Event != agent.AuditPlanned {
					got = append(got, r.Event+"("+r.Reason+")")
				}
			}
			started, refused := 0, 0
			for _, r := range recs {
				switch {
				case r.Event == agent.AuditStarted:
					started++
				case r.Event == agent.AuditRefused && r.Reason == agent.RefusedTargetLimit:
					refused++
				case r.Event == agent.AuditAsked:
					t.Fatalf("asked on a target whose policy is none: %v", got)
				}
			}
			if started != 1 || refused != 1 || len(p[capabilities.TargetSimulator].effects()) != 1 {
				t.Fatalf("audit %v, journals %s: want one write and one refused by the limit", got, p.journals())
			}
			if o := runOn(t, a, "live", capabilities.TargetLive); o.err != nil || o.last().Status != agent.RunInterrupted {
				t.Fatalf("a live write did not ask: %v", o.err)
			}
			if got := p.journals(); got != "live=0 simulator=1" {
				t.Fatalf("journals %s", got)
			}
		})
	}
}

// The configuration is checked: approval none only on a simulated target,
// the default target among the targets; a turn naming an unknown target is
// a bad request before anything runs.
func TestTargetConfigAndOptionErrors(t *testing.T) {
	p := newPlants()
	for name, tweak := range map[string]func(*agent.Config){
		"approval none on live": func(cfg *agent.Config) {
			cfg.Targets[capabilities.TargetLive] = agent.TargetPolicy{WritesEnabled: true, Approval: agent.TargetApprovalNone}
		},
		"unknown default": func(cfg *agent.Config) { cfg.Options.Target = "moon" },
		"bad policy": func(cfg *agent.Config) {
			cfg.Targets[capabilities.TargetSimulator] = agent.TargetPolicy{Simulated: true, Approval: "sometimes"}
		},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld("read_a")
			cfg := w.config(t)
			cfg.Targets, cfg.Options.Target = targetPosture(), capabilities.TargetLive
			tweak(&cfg)
			if _, err := agent.New(cfg); !errors.Is(err, agent.ErrConfig) {
				t.Fatalf("New = %v, want a config error", err)
			}
		})
	}
	store, _ := durableStores[0].open(t)
	a := targetAgent(t, store, p, nil, plannedWrite{"set_q1", "Q1", 105})
	o := runOn(t, a, "x", "moon")
	var oe *agent.OptionError
	if !errors.As(o.err, &oe) || oe.Option != state.SettingTarget || !errors.Is(o.err, agent.ErrBadRequest) {
		t.Fatalf("unknown target: %v, want an OptionError naming target", o.err)
	}
	if got := p.journals(); got != "live=0 simulator=0" {
		t.Fatalf("journals %s", got)
	}
}

// An approval binds to the target: the same change on another target is
// another action.
func TestTargetIsPartOfTheDigest(t *testing.T) {
	a := capabilities.Action{Capability: "set_q1", Changes: []capabilities.Change{{Target: "Q1", Value: 105.0}}}
	live, sim := a, a
	live.Target, sim.Target = capabilities.TargetLive, capabilities.TargetSimulator
	if live.Digest() == sim.Digest() || a.Digest() == live.Digest() {
		t.Fatal("the digest does not depend on the target")
	}
}

// At most once per target: a simulator write cut after its effect (the run
// canceled during the call) is reconciled by another replica from the
// simulator's readback — confirmed, not run again — and the live machine,
// whose Q1 still reads the value before, is never read as its outcome.
func TestTargetInDoubtWriteReconciledOnItsTarget(t *testing.T) {
	for _, st := range durableStores {
		t.Run(st.name, func(t *testing.T) {
			s1, s2 := st.open(t)
			p := newPlants()
			simNoApproval := func(cfg *agent.Config) {
				cfg.Targets[capabilities.TargetSimulator] = agent.TargetPolicy{WritesEnabled: true, Simulated: true, Approval: agent.TargetApprovalNone}
			}
			cut := make(chan struct{})
			a := targetAgent(t, s1, p, func(cfg *agent.Config) {
				simNoApproval(cfg)
				w, _ := cfg.Registry.Get("set_q1")
				w.(*targetedWrite).cut = cut
			}, plannedWrite{"set_q1", "Q1", 105})
			b := targetAgent(t, s2, p, simNoApproval, plannedWrite{"set_q1", "Q1", 105})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				for range a.Run(ctx, agent.TurnRequest{Thread: "sim", Input: "set Q1 to 105 A", Options: &agent.TurnOptions{Target: capabilities.TargetSimulator}}) {
				}
			}()
			<-cut
			cancel()
			<-done
			o := resume(t, b, "sim", agent.Answer{})
			wantAnswer(t, o)
			if got := p.journals(); got != "live=0 simulator=1" {
				t.Fatalf("journals %s: the write in doubt ran again, or on live", got)
			}
			recs := audits(t, b, agent.AuditFilter{Thread: "sim", Event: agent.AuditEnded})
			if len(recs) != 1 || !recs[0].Reconciled || recs[0].Outcome != capabilities.OutcomeConfirmed || recs[0].Target != capabilities.TargetSimulator {
				t.Fatalf("ended records %+v, want one reconciled confirmed on the simulator", recs)
			}
		})
	}
}
