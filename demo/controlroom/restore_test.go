package controlroom_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/state"
)

// approveOn answers the turn's one approval card with yes.
func approveOn(t *testing.T, a *agent.Agent, thread string, o turn) turn {
	t.Helper()
	ap := o.of(agent.EventApprovalRequired)
	if len(ap) != 1 {
		t.Fatalf("%d approval cards, want one; message %+v", len(ap), o.message())
	}
	var r turn
	for ev, err := range a.Resume(context.Background(), thread, agent.Answer{ApprovalID: ap[0].Approval.ID, Text: "yes"}) {
		r.events = append(r.events, ev)
		if err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// A change back to the value at a time the operator names: the value
// comes from the channel's history (92 A an hour ago, before the write of
// 105 A), never from the words or a model; the card shows it with its
// time; after the yes it is written.
func TestRestoreGoesBackToTheArchivedValue(t *testing.T) {
	reg, p := controlRoomWorldAt(t, time.Now)
	a, err := agent.New(agent.Config{Registry: reg, Options: writesOn})
	if err != nil {
		t.Fatal(err)
	}
	approveOn(t, a, "t", runOn(t, a, "t", "Set the quadrupole Q1 current in the BTS line to 105 A"))
	if v, _ := p.Setpoint(q1); v != 105 {
		t.Fatalf("Q1 is %v after the first write", v)
	}
	for _, ask := range []string{"Set Q1 back to what it was an hour ago", "Setze Q1 auf den Wert von gestern zurück"} {
		o := runOn(t, a, "t", ask)
		ap := o.of(agent.EventApprovalRequired)
		if len(ap) != 1 {
			t.Fatalf("%s: %d cards; message %+v", ask, len(ap), o.message())
		}
		card := ap[0].Approval
		if ch := card.Action.Changes; len(ch) != 1 || ch[0].Target != q1 || ch[0].Value != 92.0 {
			t.Fatalf("%s: the card proposes %+v", ask, ch)
		}
		if !restored.MatchString(card.Summary) || !strings.Contains(card.Summary, "105.00 → 92.00 A") {
			t.Errorf("%s: the card %q does not show the value before, the value then and its time", ask, card.Summary)
		}
		if v, _ := p.Setpoint(q1); v != 105 {
			t.Fatalf("%s: written before the yes: %v", ask, v)
		}
		if ask == "Set Q1 back to what it was an hour ago" {
			approveOn(t, a, "t", o)
			if v, _ := p.Setpoint(q1); v != 92 {
				t.Fatalf("Q1 is %v after the restore", v)
			}
			// Back to 105 A for the next question: a day ago it was 92 A too.
			approveOn(t, a, "t", runOn(t, a, "t", "Set Q1 to 105 A"))
		}
	}
}

// A planner that restores to a value of its own (140 A) is refused at the
// gate, where the history is read: the value must be the archive's.
func TestRestoreIsHeldToTheHistory(t *testing.T) {
	reg, p := controlRoomWorldAt(t, time.Now)
	m := llmtest.New().On(llmtest.RoleIs(llm.RoleOrchestrator), func(llm.Request) llmtest.Reply {
		return llmtest.Text(plan(writePlanTemplate, "140"))
	}).Only(llm.RoleOrchestrator)
	a, err := agent.New(agent.Config{Registry: reg, Models: m, Options: writesOn, InfraRetry: map[string]capabilities.RetryPolicy{}})
	if err != nil {
		t.Fatal(err)
	}
	o := runOn(t, a, "t", "Restore yesterday's value of Q1")
	if ap := o.of(agent.EventApprovalRequired); len(ap) != 0 {
		t.Fatalf("the planner's 140 A reached a card: %q", ap[0].Approval.Summary)
	}
	untouched(t, p)
	recs, err := a.Audit(context.Background(), agent.AuditFilter{Thread: "t", Event: agent.AuditRefused})
	if err != nil || len(recs) == 0 || recs[len(recs)-1].Reason != agent.RefusedIntentMismatch ||
		!strings.Contains(recs[len(recs)-1].Message, "its value of yesterday") {
		t.Fatalf("the 140 A restore was not refused as not asked for: %+v (err %v)", recs, err)
	}
}

// A capability that cannot read its history cannot restore: refused, with
// the reason, nobody asked.
func TestRestoreWithoutHistoryIsRefused(t *testing.T) {
	var wrote []float64
	setQ1 := capabilities.Define(capabilities.Definition{
		Name: "set_q1", Description: "Set the BTS Q1 quadrupole current (A); restore it", Provides: []string{"Q1_WRITE"},
		SideEffects: true,
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Select to set or restore Q1.",
			Examples: []capabilities.ClassifierExample{{Query: "Restore Q1 to yesterday's value", Result: true, Reason: "a write"}}},
		Action: func(capabilities.Step) (capabilities.Action, error) {
			return capabilities.Action{Changes: []capabilities.Change{{Target: q1, Value: 92.0, Unit: "A"}}, Summary: "set Q1 to 92 A"}, nil
		},
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			wrote = append(wrote, 92)
			return capabilities.Result("Q1_WRITE", 92.0, "Q1 set to 92 A"), nil
		},
	})
	reg := capabilities.NewRegistry()
	if err := reg.Register(setQ1); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Registry: reg, Options: state.Options{ApprovalMode: "selective", WritesEnabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	o := runOn(t, a, "t", "Restore Q1 to yesterday's value")
	if ap := o.of(agent.EventApprovalRequired); len(ap) != 0 || len(wrote) != 0 {
		t.Fatalf("cards %d, writes %v", len(ap), wrote)
	}
	recs, err := a.Audit(context.Background(), agent.AuditFilter{Thread: "t", Event: agent.AuditRefused})
	if err != nil || len(recs) != 1 || !strings.Contains(recs[0].Message, "could not be read from its history") {
		t.Fatalf("refusals %+v (err %v)", recs, err)
	}
}

// A time the archive does not reach (the plant's clock is days behind
// the agent's: "yesterday" is in the plant's future) is refused with the
// reason, nobody asked, nothing written.
func TestRestoreBeyondTheArchiveIsRefused(t *testing.T) {
	reg, p := controlRoomWorld(t)
	a, err := agent.New(agent.Config{Registry: reg, Options: writesOn})
	if err != nil {
		t.Fatal(err)
	}
	o := runOn(t, a, "t", "Restore yesterday's value of Q1")
	if ap := o.of(agent.EventApprovalRequired); len(ap) != 0 {
		t.Fatalf("asked to approve %q", ap[0].Approval.Summary)
	}
	untouched(t, p)
	recs, err := a.Audit(context.Background(), agent.AuditFilter{Thread: "t", Event: agent.AuditRefused})
	if err != nil || len(recs) != 1 || recs[0].Reason != "no_history" || !strings.Contains(recs[0].Message, "has no archived setpoint at") {
		t.Fatalf("refusals %+v (err %v)", recs, err)
	}
	if m := o.message(); m == nil || !strings.Contains(m.Content, "has no archived setpoint at") {
		t.Errorf("the answer does not say why: %+v", m)
	}
}
