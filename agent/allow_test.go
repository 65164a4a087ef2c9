package agent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

func runReq(t tb, a *agent.Agent, req agent.TurnRequest) outcome {
	t.Helper()
	var o outcome
	for ev, err := range a.Run(context.Background(), req) {
		o.events = append(o.events, ev)
		if err != nil {
			o.err = err
		}
	}
	return o
}

func stepStarts(o outcome, capability string) int {
	n := 0
	for _, e := range o.events {
		if e.Type == agent.EventStepStart && e.Capability == capability {
			n++
		}
	}
	return n
}

func TestAllowedCapabilities(t *testing.T) {
	tests := []struct {
		name     string
		allowed  []string
		meta     map[string]string
		wantErr  error
		wantText []string // in the turn's message
		ran      []string // capabilities that must have run
		notRan   []string
	}{
		{name: "no restriction", allowed: nil, ran: []string{"read_a", "write_x"}},
		{name: "plan naming a disallowed capability is refused before any step", allowed: []string{"read_a"},
			wantText: []string{"write_x", "not allowed"}, notRan: []string{"read_a", "write_x"}},
		{name: "nothing allowed but respond", allowed: []string{},
			wantText: []string{"read_a", "write_x", "not allowed"}, notRan: []string{"read_a", "write_x"}},
		{name: "everything allowed", allowed: []string{"write_x", "read_a"}, ran: []string{"read_a", "write_x"}},
		{name: "metadata cannot restrict or lift", allowed: nil, meta: map[string]string{agent.MetaAllowedCapabilities: "read_a"},
			ran: []string{"read_a", "write_x"}},
		{name: "unknown name", allowed: []string{"read_a", "launch_rocket"}, wantErr: agent.ErrBadRequest, notRan: []string{"read_a", "write_x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := writeWorld()
			w.approval = nil
			a := mustAgent(t, withOptions(w.config(t), state.Options{WritesEnabled: true, ApprovalMode: state.ApprovalModeDisabled}))
			o := runReq(t, a, agent.TurnRequest{Thread: "t", Input: "set the voltage", AllowedCapabilities: tc.allowed, Metadata: tc.meta})
			if tc.wantErr != nil {
				if !errors.Is(o.err, tc.wantErr) || !strings.Contains(o.err.Error(), "launch_rocket") {
					t.Fatalf("err %v, want %v naming launch_rocket", o.err, tc.wantErr)
				}
			} else if o.err != nil || o.last().Status != agent.RunAnswered {
				t.Fatalf("err %v last %+v", o.err, o.last())
			}
			if m := o.message(); len(tc.wantText) > 0 {
				for _, want := range tc.wantText {
					if m == nil || !strings.Contains(m.Content, want) {
						t.Fatalf("message %+v lacks %q", m, want)
					}
				}
			}
			if d := denials(o); (len(tc.wantText) > 0) != (len(d) > 0) {
				t.Fatalf("denied events %+v", d)
			}
			for _, c := range tc.ran {
				if w.caps[c].count() != 1 {
					t.Fatalf("%s ran %d times, want 1", c, w.caps[c].count())
				}
			}
			for _, c := range tc.notRan {
				if n := w.caps[c].count(); n != 0 || stepStarts(o, c) != 0 {
					t.Fatalf("%s ran %d times", c, n)
				}
			}
		})
	}
}

// The classifier's selection is filtered: a disallowed capability selected
// beside allowed ones is left out (the plan never sees it); one an allowed
// capability depends on ends the turn naming it.
func TestAllowedCapabilitiesSelection(t *testing.T) {
	def := func(name string, provides []string, requires []capabilities.Requirement, ran *int) capabilities.Capability {
		c := capabilities.Define(capabilities.Definition{Name: name, Description: name, Provides: provides, Requires: requires,
			Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
				*ran++
				return capabilities.Result(provides[0], 1, name+" ok"), nil
			}})
		return c
	}
	tests := []struct {
		name     string
		selected []string
		allowed  []string
		wantText string
		wantRun  map[string]int
	}{
		{"disallowed sibling left out", []string{"read_beam", "write_magnet"}, []string{"read_beam", "analyse"}, "read_beam ok",
			map[string]int{"read_beam": 1, "write_magnet": 0}},
		{"needed provider not allowed", []string{"analyse", "read_beam"}, []string{"analyse"}, "analyse needs read_beam",
			map[string]int{"read_beam": 0, "analyse": 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runs := map[string]*int{"read_beam": new(int), "write_magnet": new(int), "analyse": new(int)}
			reg := capabilities.NewRegistry()
			for _, c := range []capabilities.Capability{
				def("read_beam", []string{"BEAM"}, nil, runs["read_beam"]),
				def("write_magnet", []string{"MAGNET"}, nil, runs["write_magnet"]),
				def("analyse", []string{"ANALYSIS"}, []capabilities.Requirement{{Type: "BEAM"}}, runs["analyse"]),
			} {
				if err := reg.Register(c); err != nil {
					t.Fatal(err)
				}
			}
			w := newWorld()
			cfg := w.config(t)
			cfg.Registry = reg
			cfg.Classifier = &fnNode{name: state.NodeClassifier, run: func(ctx context.Context, s state.State) (state.Update, error) {
				tt := s.Turn
				tt.ActiveCapabilities = append(append([]string{}, tc.selected...), state.NodeRespond, state.NodeClarify)
				return state.Update{Turn: &tt}, nil
			}}
			cfg.Orchestrator = &fnNode{name: state.NodeOrchestrator, run: func(ctx context.Context, s state.State) (state.Update, error) {
				tt := s.Turn
				var steps []state.PlanStep
				for _, c := range []string{"read_beam", "write_magnet", "analyse"} {
					if containsStr(tt.ActiveCapabilities, c) {
						steps = append(steps, step(c, c))
					}
				}
				tt.Plan = &state.Plan{Steps: append(steps, step(state.NodeRespond, "r"))}
				return state.Update{Turn: &tt}, nil
			}}
			a := mustAgent(t, cfg)
			o := runReq(t, a, agent.TurnRequest{Thread: "t", Input: "x", AllowedCapabilities: tc.allowed})
			if o.err != nil {
				t.Fatal(o.err)
			}
			if m := o.message(); m == nil || !strings.Contains(m.Content, tc.wantText) {
				t.Fatalf("message %+v, want %q", m, tc.wantText)
			}
			for c, n := range tc.wantRun {
				if *runs[c] != n {
					t.Fatalf("%s ran %d times, want %d", c, *runs[c], n)
				}
			}
		})
	}
}

func containsStr(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// An edited plan (a human answering a plan approval) that names a
// capability the turn's caller may not use is refused at the approval: an
// invalid plan naming the step, the approval stays pending, nothing runs
// and the capability is not made active. An allowed edit is then accepted.
func TestAllowedCapabilitiesEditedPlan(t *testing.T) {
	w := writeWorld()
	w.plan = func(int, state.State) []state.PlanStep {
		return []state.PlanStep{step("read_a", "a"), step(state.NodeRespond, "r", 0)}
	}
	a := mustAgent(t, withOptions(w.config(t), state.Options{WritesEnabled: true, PlanApproval: true, ApprovalMode: state.ApprovalModeDisabled}))
	o := runReq(t, a, agent.TurnRequest{Thread: "t", Input: "x", AllowedCapabilities: []string{"read_a"}})
	ap := approvalOf(t, o)
	o = resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Plan: &state.Plan{Steps: []state.PlanStep{step("read_a", "a"), step("write_x", "x"), step(state.NodeRespond, "r", 0)}}})
	var ae *agent.ApprovalError
	var na *agent.NotAllowedError
	if !errors.Is(o.err, agent.ErrInvalidPlan) || !errors.As(o.err, &ae) || ae.ID != ap.ID || !errors.As(o.err, &na) || na.Step != 1 || na.Capability != "write_x" {
		t.Fatalf("edited plan with write_x: %v; want ErrInvalidPlan wrapping *NotAllowedError{Step: 1, write_x}", o.err)
	}
	if n := w.caps["write_x"].count(); n != 0 || len(w.effects()) != 0 || stepStarts(o, "write_x") != 0 {
		t.Fatalf("write_x ran %d times", n)
	}
	pend, err := a.PendingApprovals(context.Background(), "t")
	if err != nil || len(pend) != 1 || pend[0].ID != ap.ID {
		t.Fatalf("pending after the refused edit: %+v, %v; want %s still pending", pend, err, ap.ID)
	}
	s, _, err := a.State(context.Background(), "t")
	if err != nil || slices.Contains(s.Turn.ActiveCapabilities, "write_x") {
		t.Fatalf("active capabilities %v, %v; write_x must not be active", s.Turn.ActiveCapabilities, err)
	}
	o = resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Plan: &state.Plan{Steps: []state.PlanStep{step("read_a", "b"), step(state.NodeRespond, "r", 0)}}})
	if o.err != nil || w.caps["read_a"].count() != 1 || w.caps["write_x"].count() != 0 {
		t.Fatalf("allowed edit: %v, read_a ran %d times", o.err, w.caps["read_a"].count())
	}
}

func denials(o outcome) []agent.Event {
	var out []agent.Event
	for _, e := range o.events {
		if e.Type == agent.EventDenied {
			out = append(out, e)
		}
	}
	return out
}

// A fork made for a caller limited to some capabilities (the server forks
// with the key's) stays limited when it is replayed: Replay runs the
// fork's turn with the fork's allowed set, and ReplayConversation each turn
// with its request's — never the unlimited set of a request without one.
func TestReplayKeepsTheAllowedCapabilities(t *testing.T) {
	ctx := context.Background()
	w := writeWorld()
	w.approval = nil
	a := mustAgent(t, withOptions(w.config(t), state.Options{WritesEnabled: true, ApprovalMode: state.ApprovalModeDisabled}))
	if o := runReq(t, a, agent.TurnRequest{Thread: "t", Input: "set the voltage"}); o.err != nil || w.caps["read_a"].count() != 1 {
		t.Fatalf("the original turn: %v, read_a ran %d times", o.err, w.caps["read_a"].count())
	}
	limited := []string{"write_x"} // the plan's read_a is not allowed
	if _, err := a.Fork(ctx, agent.ForkRequest{Thread: "t", NewThread: "f", Input: "set the voltage", AllowedCapabilities: limited}); err != nil {
		t.Fatal(err)
	}
	var o outcome
	for ev, err := range a.Replay(ctx, "f", "bob") {
		o.events = append(o.events, ev)
		if err != nil {
			o.err = err
		}
	}
	if m := o.message(); o.err != nil || m == nil || !strings.Contains(m.Content, "not allowed") || w.caps["read_a"].count() != 1 {
		t.Fatalf("replay: %v %+v; read_a ran %d times in all, want once (the original's)", o.err, m, w.caps["read_a"].count())
	}
	_, seq, err := a.ReplayConversation(ctx, agent.ForkRequest{Thread: "t", NewThread: "g", AllowedCapabilities: limited}, "bob")
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := w.caps["read_a"].count(); n != 1 {
		t.Fatalf("read_a ran %d times after the conversation's replay, want once (the original's)", n)
	}
}

// A run under WithAllowedCapabilities executes no step its set leaves out,
// whatever the turn's own set: a caller's capabilities narrowed after the
// turn began (the write's approval pending) hold when its approval is
// answered — the write is refused, not run — while a set that allows it
// lets it run.
func TestNarrowedCapabilitiesHoldOnResume(t *testing.T) {
	for _, tc := range []struct {
		name   string
		now    []string
		writes int
	}{
		{"narrowed to the read", []string{"read_a"}, 0},
		{"still allowed", []string{"read_a", "write_x"}, 1},
		{"no narrowing", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := writeWorld()
			a := mustAgent(t, withOptions(w.config(t), writesOn))
			ap := approvalOf(t, run(t, a, "t", "raise the voltage"))
			var o outcome
			ctx := agent.WithAllowedCapabilities(context.Background(), tc.now)
			for ev, err := range a.Resume(ctx, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes"}) {
				o.events = append(o.events, ev)
				if err != nil {
					o.err = err
				}
			}
			if n := w.caps["write_x"].count(); n != tc.writes {
				t.Fatalf("write_x ran %d times, want %d", n, tc.writes)
			}
			if d := denials(o); (tc.writes == 0) != (len(d) > 0) {
				t.Fatalf("denied events %+v", d)
			}
		})
	}
}

// The narrowed set is the turn's as well as its steps': a plan naming a
// capability outside it is refused before any step runs, as one outside
// the turn's own set is.
func TestNarrowedCapabilitiesHoldInThePlan(t *testing.T) {
	w := writeWorld()
	w.approval = nil
	a := mustAgent(t, withOptions(w.config(t), state.Options{WritesEnabled: true, ApprovalMode: state.ApprovalModeDisabled}))
	var o outcome
	ctx := agent.WithAllowedCapabilities(context.Background(), []string{"write_x"})
	for ev, err := range a.Run(ctx, agent.TurnRequest{Thread: "t", Input: "set the voltage"}) {
		o.events = append(o.events, ev)
		if err != nil {
			o.err = err
		}
	}
	if m := o.message(); o.err != nil || m == nil || !strings.Contains(m.Content, "not allowed") {
		t.Fatalf("%v %+v", o.err, m)
	}
	for _, c := range []string{"read_a", "write_x"} {
		if n := w.caps[c].count(); n != 0 || stepStarts(o, c) != 0 {
			t.Fatalf("%s ran %d times (%d step starts): the plan should have been refused", c, n, stepStarts(o, c))
		}
	}
	d := denials(o)
	if len(d) == 0 {
		t.Fatal("no denial")
	}
	for _, e := range d {
		if e.Node != state.NodeClassifier && e.Node != state.NodeOrchestrator {
			t.Fatalf("refused by %s, a step: the selection or the plan should have refused it", e.Node)
		}
	}
}
