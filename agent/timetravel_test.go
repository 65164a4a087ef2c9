package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

// Time travel on the compiled agent over SQLite and PostgreSQL: a thread's
// kept checkpoints (History), a fork from each kind of them (after the
// selection, at an approval, mid-plan, after an error, at the end with the
// message edited), the fork's replay — whose writes go to the simulator, as
// a journal on each target proves — and the comparison of two threads.

func keepAll(cfg *agent.Config) { cfg.KeepIntermediate = -1 }

func history(t *testing.T, a *agent.Agent, thread string) []agent.Moment {
	t.Helper()
	h, err := a.History(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// momentOf is the first moment of kind in h.
func momentOf(t *testing.T, h []agent.Moment, kind string) agent.Moment {
	t.Helper()
	for _, m := range h {
		if m.Kind == kind {
			return m
		}
	}
	var kinds []string
	for _, m := range h {
		kinds = append(kinds, m.Kind)
	}
	t.Fatalf("no %s moment in %v", kind, kinds)
	return agent.Moment{}
}

func fork(t *testing.T, a *agent.Agent, req agent.ForkRequest) agent.Forked {
	t.Helper()
	if req.Metadata == nil {
		req.Metadata = map[string]string{agent.MetaOwner: "bob"}
	}
	f, err := a.Fork(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func replay(t *testing.T, a *agent.Agent, thread string) outcome {
	t.Helper()
	var o outcome
	for ev, err := range a.Replay(context.Background(), thread, "bob") {
		o.events = append(o.events, ev)
		if err != nil {
			o.err = err
		}
	}
	return o
}

func kinds(h []agent.Moment) []string {
	var out []string
	for _, m := range h {
		out = append(out, m.Kind)
	}
	return out
}

// The history of a turn that asked a human and then wrote shows each kept
// checkpoint with what made it; by default (pruning) a thread keeps the
// checkpoint each turn ended with, which is what can be forked.
func TestHistoryShowsEachKeptCheckpoint(t *testing.T) {
	for _, st := range durableStores {
		t.Run(st.name, func(t *testing.T) {
			store, _ := st.open(t)
			p := newPlants()
			a := targetAgent(t, store, p, keepAll, plannedWrite{"set_q1", "Q1", 105})
			ap := approvalOf(t, runOn(t, a, "t", capabilities.TargetLive))
			h := history(t, a, "t")
			if last := h[len(h)-1]; last.Kind != agent.MomentApproval || last.Approval == nil || last.Approval.ID != ap.ID {
				t.Fatalf("last moment %+v, want the approval waiting", last)
			}
			wantAnswer(t, approveAll(t, a, "t", resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes", By: "op"})))
			h = history(t, a, "t")
			got := kinds(h)
			for _, k := range []string{agent.MomentInput, agent.MomentTask, agent.MomentClassified, agent.MomentPlanned, agent.MomentStep, agent.MomentEnded} {
				if !slices.Contains(got, k) {
					t.Fatalf("history %v lacks a %s moment", got, k)
				}
			}
			end := h[len(h)-1]
			if end.Kind != agent.MomentEnded || end.Outcome != string(state.KindAnswer) || !strings.HasPrefix(end.Message, "done:") ||
				end.Target != capabilities.TargetLive || end.Turn != 1 || end.Input != "set Q1 to 105 A" || len(end.Results) != 1 {
				t.Fatalf("end %+v", end)
			}
			step := momentOf(t, h, agent.MomentStep)
			if len(step.Nodes) != 1 || step.Nodes[0] != "set_q1" || !strings.Contains(step.Event, "set_q1") {
				t.Fatalf("step moment %+v: want it made by set_q1", step)
			}

			// Pruned (the default): one checkpoint per ended turn.
			pruned := targetAgent(t, store, p, nil, plannedWrite{"set_q1", "Q1", 105})
			wantAnswer(t, approveAll(t, pruned, "p", runOn(t, pruned, "p", capabilities.TargetSimulator)))
			if got := kinds(history(t, pruned, "p")); !slices.Equal(got, []string{agent.MomentEnded}) {
				t.Fatalf("pruned history %v, want the turn's end only", got)
			}
		})
	}
}

// A fork from each kind of kept checkpoint: owned by the caller, recording
// its origin, its writes on the simulator; the original untouched.
func TestForkAtEachKindOfCheckpoint(t *testing.T) {
	for _, st := range durableStores {
		t.Run(st.name, func(t *testing.T) {
			store, _ := st.open(t)
			p := newPlants()
			a := targetAgent(t, store, p, keepAll, plannedWrite{"set_q1", "Q1", 105})
			ctx := context.Background()
			ap := approvalOf(t, runOn(t, a, "orig", capabilities.TargetLive))
			wantAnswer(t, approveAll(t, a, "orig", resume(t, a, "orig", agent.Answer{ApprovalID: ap.ID, Text: "yes", By: "op"})))
			if got := p.journals(); got != "live=1 simulator=0" {
				t.Fatalf("journals %s after the original", got)
			}
			h := history(t, a, "orig")
			before, _ := json.Marshal(h)

			// After the selection: the fork plans, asks its own question
			// for the simulator, and writes the simulator.
			f := fork(t, a, agent.ForkRequest{Thread: "orig", Checkpoint: momentOf(t, h, agent.MomentClassified).Checkpoint, NewThread: "f-classified"})
			if !f.Resumable || f.Target != capabilities.TargetSimulator || !f.Writes || f.From != "orig" {
				t.Fatalf("fork %+v", f)
			}
			s, _, err := a.State(ctx, "f-classified")
			if err != nil || s.Metadata[agent.MetaOwner] != "bob" || s.Metadata[agent.MetaForkedFrom] != "orig" || s.Metadata[agent.MetaForkedAt] == "" {
				t.Fatalf("fork metadata %v, %v", s.Metadata, err)
			}
			o := replay(t, a, "f-classified")
			fap := approvalOf(t, o)
			if !strings.Contains(fap.Summary, "simulator") {
				t.Fatalf("the fork's question %q does not name the simulator", fap.Summary)
			}
			wantAnswer(t, approveAll(t, a, "f-classified", o))
			if got := p.journals(); got != "live=1 simulator=1" {
				t.Fatalf("journals %s after the fork after classification", got)
			}

			// At the approval: the fork asks its own question (the
			// original's answer stays with the original).
			f = fork(t, a, agent.ForkRequest{Thread: "orig", Checkpoint: momentOf(t, h, agent.MomentApproval).Checkpoint, NewThread: "f-approval"})
			o = replay(t, a, "f-approval")
			if fap := approvalOf(t, o); fap.Action == nil || fap.Action.Target != capabilities.TargetSimulator {
				t.Fatalf("fork at the approval asked %+v", fap)
			}
			wantAnswer(t, approveAll(t, a, "f-approval", o))
			if got := p.journals(); got != "live=1 simulator=2" {
				t.Fatalf("journals %s after the fork at the approval", got)
			}

			// Mid-plan, after the write: the fork goes on with the step's
			// result; nothing is written again, anywhere.
			fork(t, a, agent.ForkRequest{Thread: "orig", Checkpoint: momentOf(t, h, agent.MomentStep).Checkpoint, NewThread: "f-step"})
			wantAnswer(t, replay(t, a, "f-step"), "Q1 from 92")
			if got := p.journals(); got != "live=1 simulator=2" {
				t.Fatalf("journals %s after the fork mid-plan: a write ran again", got)
			}

			// At the end: nothing to replay, unless the message is edited.
			f = fork(t, a, agent.ForkRequest{Thread: "orig", NewThread: "f-end"})
			if f.Resumable {
				t.Fatalf("a fork of an ended turn is resumable: %+v", f)
			}
			if o := replay(t, a, "f-end"); !errors.Is(o.err, agent.ErrBadRequest) {
				t.Fatalf("replay of an ended fork: %v, want a bad request", o.err)
			}
			f = fork(t, a, agent.ForkRequest{Thread: "orig", NewThread: "f-edited", Input: "set Q1 to 105 A now"})
			if f.Input == "" {
				t.Fatalf("edited fork %+v", f)
			}
			wantAnswer(t, approveAll(t, a, "f-edited", replay(t, a, "f-edited")))
			if fh := history(t, a, "f-edited"); fh[len(fh)-1].Input != "set Q1 to 105 A now" || fh[len(fh)-1].Turn != 1 {
				t.Fatalf("edited fork history %+v", fh[len(fh)-1])
			}
			if got := p.journals(); got != "live=1 simulator=3" {
				t.Fatalf("journals %s after the edited fork", got)
			}

			// The original is as it was.
			after, _ := json.Marshal(history(t, a, "orig"))
			if string(before) != string(after) {
				t.Fatal("forking changed the original's history")
			}
		})
	}
}

// A fork after an error (a write refused: live's writes off) replays into
// the error report, and an edited plan cannot bring in a value the user did
// not ask for.
func TestForkAfterAnErrorAndWithAnEditedPlan(t *testing.T) {
	for _, st := range durableStores {
		t.Run(st.name, func(t *testing.T) {
			store, _ := st.open(t)
			p := newPlants()
			a := targetAgent(t, store, p, func(cfg *agent.Config) {
				keepAll(cfg)
				cfg.Targets[capabilities.TargetLive] = agent.TargetPolicy{}
			}, plannedWrite{"set_q1", "Q1", 105})
			o := runOn(t, a, "orig", capabilities.TargetLive)
			if m := o.message(); m == nil || m.Kind != state.KindErrorReport {
				t.Fatalf("original ended %+v, want the error report", m)
			}
			h := history(t, a, "orig")
			e := momentOf(t, h, agent.MomentError)
			if e.Error == nil || e.Error.Capability != "set_q1" {
				t.Fatalf("error moment %+v", e)
			}
			fork(t, a, agent.ForkRequest{Thread: "orig", Checkpoint: e.Checkpoint, NewThread: "f-error"})
			o = replay(t, a, "f-error")
			if m := o.message(); o.err != nil || m == nil || m.Kind != state.KindErrorReport {
				t.Fatalf("fork after the error ended %+v, %v", m, o.err)
			}

			// The plan edited to write 100 A: the user asked for 105 A, so
			// the edit is refused as a human's edited plan would be.
			planned := momentOf(t, h, agent.MomentPlanned)
			edited := *planned.Plan
			edited.Steps = slices.Clone(edited.Steps)
			edited.Steps[0].TaskObjective, edited.Steps[0].Parameters = "Set Q1 to 100 A", map[string]any{"value": 100.0}
			if _, err := a.Fork(context.Background(), agent.ForkRequest{Thread: "orig", Checkpoint: planned.Checkpoint, NewThread: "f-bad", Plan: &edited}); !errors.Is(err, agent.ErrForkPlan) || !errors.Is(err, agent.ErrBadRequest) {
				t.Fatalf("a plan edited to another value: %v, want ErrForkPlan", err)
			}
			// Edited with the value asked (and another objective): the fork
			// runs the edited plan, on the simulator.
			edited.Steps[0].TaskObjective, edited.Steps[0].Parameters = "Set Q1 to 105 A (edited)", map[string]any{"value": 105.0}
			f := fork(t, a, agent.ForkRequest{Thread: "orig", Checkpoint: planned.Checkpoint, NewThread: "f-plan", Plan: &edited})
			if !f.Resumable {
				t.Fatalf("fork %+v", f)
			}
			o = replay(t, a, "f-plan")
			fap := approvalOf(t, o)
			wantAnswer(t, approveAll(t, a, "f-plan", o))
			if fap.Action == nil || fap.Action.Target != capabilities.TargetSimulator {
				t.Fatalf("edited plan asked %+v", fap)
			}
			if fh := history(t, a, "f-plan"); fh[len(fh)-1].Plan.Steps[0].TaskObjective != "Set Q1 to 105 A (edited)" {
				t.Fatalf("the fork ran plan %+v", fh[len(fh)-1].Plan)
			}
			if got := p.journals(); got != "live=0 simulator=1" {
				t.Fatalf("journals %s", got)
			}
			// A plan edit at the turn's end is refused, as is an unknown checkpoint.
			for _, req := range []agent.ForkRequest{
				{Thread: "orig", Plan: &edited, NewThread: "x1"},
				{Thread: "orig", Checkpoint: "0190c6a5-0000-7000-8000-000000000000", NewThread: "x2"},
				{Thread: "orig", Checkpoint: "nope", NewThread: "x3"},
				{Thread: "orig", NewThread: "f-plan"},
				{Thread: "orig", Target: "moon", NewThread: "x4"},
			} {
				if _, err := a.Fork(context.Background(), req); !errors.Is(err, agent.ErrBadRequest) {
					t.Errorf("Fork(%+v) = %v, want a bad request", req, err)
				}
			}
			if _, err := a.Fork(context.Background(), agent.ForkRequest{Thread: "none"}); !errors.Is(err, agent.ErrUnknownThread) {
				t.Errorf("fork of an unknown thread: %v", err)
			}
		})
	}
}

// A replay under another configuration (another responder), compared with
// the original: the route is the same, the answer differs, the writes went
// to another target. A whole conversation's turns replay in a new fork.
func TestReplayUnderAnotherConfigurationAndCompare(t *testing.T) {
	for _, st := range durableStores {
		t.Run(st.name, func(t *testing.T) {
			s1, s2 := st.open(t)
			p := newPlants()
			approvalNone := func(cfg *agent.Config) {
				cfg.Targets[capabilities.TargetSimulator] = agent.TargetPolicy{WritesEnabled: true, Simulated: true, Approval: agent.TargetApprovalNone}
			}
			a := targetAgent(t, s1, p, approvalNone, plannedWrite{"set_q1", "Q1", 105})
			other := targetAgent(t, s2, p, func(cfg *agent.Config) {
				approvalNone(cfg)
				cfg.Respond = &fnNode{name: state.NodeRespond, run: func(ctx context.Context, s state.State) (state.Update, error) {
					return state.Update{Messages: []state.Message{{Role: state.RoleAssistant, Content: "Q1 is set."}},
						Tokens: map[string]int{"response": 42}}, nil
				}}
			}, plannedWrite{"set_q1", "Q1", 105})
			wantAnswer(t, approveAll(t, a, "orig", runOn(t, a, "orig", capabilities.TargetLive)))
			f := fork(t, a, agent.ForkRequest{Thread: "orig", NewThread: "replay", Input: "set Q1 to 105 A"})
			wantAnswer(t, replay(t, other, f.Thread), "Q1 is set.")
			if got := p.journals(); got != "live=1 simulator=1" {
				t.Fatalf("journals %s: the replay did not write the simulator only", got)
			}
			c, err := other.Compare(context.Background(), "orig", "replay")
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Pairs) != 1 || c.Pairs[0].Left == nil || c.Pairs[0].Right == nil {
				t.Fatalf("pairs %+v", c.Pairs)
			}
			pr := c.Pairs[0]
			l, r := pr.Left, pr.Right
			if !slices.Equal(l.Route, []string{"set_q1", "respond"}) || !slices.Equal(l.Route, r.Route) {
				t.Fatalf("routes %v and %v", l.Route, r.Route)
			}
			if len(l.Approvals) != 1 || len(r.Approvals) != 0 || l.Target != "live" || r.Target != "simulator" || r.Tokens != 42 || r.Calls != 1 {
				t.Fatalf("left %+v\nright %+v", l, r)
			}
			if len(r.Writes) != 1 || !strings.HasPrefix(r.Writes[0], "on the simulator target: set Q1") {
				t.Fatalf("right writes %v", r.Writes)
			}
			for _, d := range []string{"answer", "approvals", "target", "tokens", "writes"} {
				if !slices.Contains(pr.Differences, d) {
					t.Errorf("differences %v lack %s", pr.Differences, d)
				}
			}
			if slices.Contains(pr.Differences, "route") || slices.Contains(pr.Differences, "input") {
				t.Errorf("differences %v name the route or the input, which are the same", pr.Differences)
			}

			// The whole conversation (two turns) again, in a new fork.
			wantAnswer(t, approveAll(t, a, "orig", runOn(t, a, "orig", capabilities.TargetLive)))
			rf, seq, err := other.ReplayConversation(context.Background(), agent.ForkRequest{Thread: "orig", NewThread: "again",
				Metadata: map[string]string{agent.MetaOwner: "bob"}}, "bob")
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range seq {
				if err != nil {
					t.Fatal(err)
				}
			}
			if rf.Thread != "again" || rf.Target != capabilities.TargetSimulator {
				t.Fatalf("conversation fork %+v", rf)
			}
			c, err = other.Compare(context.Background(), "orig", "again")
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Pairs) != 2 || c.Pairs[1].Left == nil || c.Pairs[1].Right.Input != "set Q1 to 105 A" {
				t.Fatalf("conversation pairs %+v", c.Pairs)
			}
			if got := p.journals(); got != "live=2 simulator=3" {
				t.Fatalf("journals %s after the conversation replay", got)
			}
		})
	}
}

// A fork's later turns keep its target unless a turn names another; a
// human may name live for a fork (and is asked, as always); without a
// simulated target a fork runs with writes off.
func TestForkTarget(t *testing.T) {
	for _, st := range durableStores {
		t.Run(st.name, func(t *testing.T) {
			store, _ := st.open(t)
			p := newPlants()
			a := targetAgent(t, store, p, nil, plannedWrite{"set_q1", "Q1", 105})
			wantAnswer(t, approveAll(t, a, "orig", runOn(t, a, "orig", "")))
			fork(t, a, agent.ForkRequest{Thread: "orig", NewThread: "f"})
			if ap := approvalOf(t, runOn(t, a, "f", "")); ap.Action.Target != capabilities.TargetSimulator {
				t.Fatalf("a fork's new turn asked for %q, want the simulator", ap.Action.Target)
			}
			if ap := approvalOf(t, runOn(t, a, "f", capabilities.TargetLive)); ap.Action.Target != capabilities.TargetLive {
				t.Fatalf("a fork's turn naming live asked for %q", ap.Action.Target)
			}
			f := fork(t, a, agent.ForkRequest{Thread: "orig", NewThread: "f-live", Input: "set Q1 to 105 A", Target: capabilities.TargetLive})
			if f.Target != capabilities.TargetLive {
				t.Fatalf("fork %+v", f)
			}
			wantAnswer(t, approveAll(t, a, "f-live", replay(t, a, "f-live")))
			if got := p.journals(); got != "live=2 simulator=0" {
				t.Fatalf("journals %s: a human chose live for the fork", got)
			}

			// No targets: the fork's writes are off.
			plain := newPlants()
			b := plain[capabilities.TargetLive].agent(t, store, map[string]*writer{"set_q2": {target: "Q2", readback: true}}, plannedWrite{"set_q2", "Q2", 45})
			wantAnswer(t, approveAll(t, b, "p", run(t, b, "p", "set Q2 to 45 A")))
			f = fork(t, b, agent.ForkRequest{Thread: "p", NewThread: "p-fork", Input: "set Q2 to 45 A"})
			if f.Writes || f.Target != "" {
				t.Fatalf("fork without targets %+v, want writes off", f)
			}
			if o := replay(t, b, "p-fork"); o.err != nil || o.last().Status == agent.RunInterrupted {
				t.Fatalf("replay asked or failed: %v", o.err)
			}
			if got := events(t, b, "p-fork"); got != "refused(writes_disabled)" {
				t.Fatalf("audit %q", got)
			}
			if n := len(plain[capabilities.TargetLive].effects()); n != 1 {
				t.Fatalf("%d writes without targets, want the original's one", n)
			}
		})
	}
}

// Every kept checkpoint of a turn that asked, was approved and wrote can be
// forked and replayed to its end: a question the fork asks is answered in
// the fork, and whatever it writes goes to the simulator.
func TestForkEveryKeptCheckpoint(t *testing.T) {
	for _, st := range durableStores {
		t.Run(st.name, func(t *testing.T) {
			store, _ := st.open(t)
			p := newPlants()
			a := targetAgent(t, store, p, keepAll, plannedWrite{"set_q1", "Q1", 105})
			ap := approvalOf(t, runOn(t, a, "orig", capabilities.TargetLive))
			wantAnswer(t, approveAll(t, a, "orig", resume(t, a, "orig", agent.Answer{ApprovalID: ap.ID, Text: "yes", By: "op"})))
			for i, m := range history(t, a, "orig") {
				id := "f" + string(rune('a'+i))
				f := fork(t, a, agent.ForkRequest{Thread: "orig", Checkpoint: m.Checkpoint, NewThread: id})
				if !f.Resumable {
					if m.Kind != agent.MomentEnded {
						t.Fatalf("fork at %s is not resumable", m.Kind)
					}
					continue
				}
				o := replay(t, a, id)
				if o.err != nil {
					t.Fatalf("replay of the fork at %s (%s): %v", m.Kind, m.Event, o.err)
				}
				wantAnswer(t, approveAll(t, a, id, o))
			}
			if live := len(p[capabilities.TargetLive].effects()); live != 1 {
				t.Fatalf("live written %d times: the forks wrote it", live)
			}
			if sim := len(p[capabilities.TargetSimulator].effects()); sim == 0 {
				t.Fatal("no fork wrote the simulator")
			}
		})
	}
}
