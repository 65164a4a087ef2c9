package controlroom_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	cgconfig "github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/demo/controlroom"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/state"
	"github.com/capgraph/capgraph/wiring"
)

// targetsFile configures the demo's two targets: the live machine (writes
// on, every write asks) and its simulator.
const targetsFile = `
control_system:
  writes_enabled: true
  target: live
  targets:
    live:
      writes_enabled: true
    simulator:
      writes_enabled: true
      simulated: true
`

// setpointOn reads Q1's setpoint on target through channel_write's own
// readback: each target is a plant of its own.
func setpointOn(t *testing.T, c capabilities.Capability, target string) float64 {
	t.Helper()
	rb, err := c.(capabilities.Readbacker).Readback(context.Background(), capabilities.Action{Capability: c.Name(), Target: target,
		Changes: []capabilities.Change{{Target: "BTS:MAG:Q1:CURRENT"}}})
	if err != nil || len(rb) != 1 {
		t.Fatalf("readback on %s: %v, %v", target, rb, err)
	}
	return rb[0].Value.(float64)
}

// targetsWorld is the control room's capabilities for cfg (a plant per
// target), its channel_write and a SQLite store in the test's directory.
func targetsWorld(t *testing.T, cfg *cgconfig.Config) (*capabilities.Registry, capabilities.Capability, *sqlite.Store) {
	t.Helper()
	caps, err := controlroom.App().Capabilities(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg := capabilities.NewRegistry()
	if err := reg.Register(caps...); err != nil {
		t.Fatal(err)
	}
	write, _ := reg.Get("channel_write")
	store, err := sqlite.New(sqlite.Config{Path: filepath.Join(t.TempDir(), "t.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return reg, write, store
}

// The control room with targets from its configuration file, offline: a
// write asked on the simulator sets the simulator's Q1 after a human's
// yes, and the live machine's Q1 stays where it was; the approval and the
// audit name the simulator.
func TestControlRoomWriteOnTheSimulator(t *testing.T) {
	cfg, err := cgconfig.Parse([]byte(targetsFile), "targets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg, write, store := targetsWorld(t, cfg)
	ac, err := wiring.AgentConfig(cfg, reg, store, llm.None)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(ac)
	if err != nil {
		t.Fatal(err)
	}
	liveBefore := setpointOn(t, write, capabilities.TargetLive)
	ctx := context.Background()
	var ap *state.Approval
	for ev, err := range a.Run(ctx, agent.TurnRequest{Thread: "t", Input: "Set the BTS Q1 quadrupole current to 105 A",
		Options: &agent.TurnOptions{Target: capabilities.TargetSimulator}}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == agent.EventApprovalRequired {
			ap = ev.Approval
		}
	}
	if ap == nil || !strings.Contains(ap.Summary, "simulator") {
		t.Fatalf("approval %+v does not name the simulator", ap)
	}
	for _, err := range a.Resume(ctx, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes", By: "op"}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if v := setpointOn(t, write, capabilities.TargetSimulator); v != 105 {
		t.Fatalf("simulator Q1 = %g, want 105", v)
	}
	if v := setpointOn(t, write, capabilities.TargetLive); v != liveBefore {
		t.Fatalf("live Q1 = %g, want untouched %g", v, liveBefore)
	}
	recs, err := a.Audit(ctx, agent.AuditFilter{Thread: "t", Event: agent.AuditEnded})
	if err != nil || len(recs) != 1 || recs[0].Target != capabilities.TargetSimulator || recs[0].Outcome != capabilities.OutcomeConfirmed {
		t.Fatalf("ended records %+v, %v", recs, err)
	}
}

// A turn of the control room replayed with a second scripted model: the
// original answers with model A on the live machine (approved), a fork of
// its end asks the same again and an agent of another configuration —
// model B — replays it, on the simulator, without asking (its policy); the
// comparison shows the same route, another answer, other tokens, no
// approval and the simulator. The live machine was written once.
func TestControlRoomReplayWithAnotherModel(t *testing.T) {
	cfg, err := cgconfig.Parse([]byte(targetsFile+"      approval: none\n"), "targets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg, write, store := targetsWorld(t, cfg)
	agentWith := func(m *llmtest.Model) *agent.Agent {
		ac, err := wiring.AgentConfig(cfg, reg, store, m.Only(llm.RoleResponse))
		if err != nil {
			t.Fatal(err)
		}
		a, err := agent.New(ac)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	modelA := llmtest.New().Script(llm.RoleResponse, llmtest.Reply{Text: "Q1 is set to 105 A.", Usage: llm.Usage{PromptTokens: 900, CompletionTokens: 12}})
	// Model B writes as real models do: its reasoning first, then the answer.
	modelB := llmtest.New().Script(llm.RoleResponse, llmtest.Reply{Text: "<think>\nThe readback confirms it.\n</think>\nBTS Q1 now reads 105 A on the simulator.",
		Usage: llm.Usage{PromptTokens: 950, CompletionTokens: 30}})
	a, b := agentWith(modelA), agentWith(modelB)
	ctx := context.Background()
	question := "Set the BTS Q1 quadrupole current to 105 A"
	var ap *state.Approval
	for ev, err := range a.Run(ctx, agent.TurnRequest{Thread: "night", Input: question}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == agent.EventApprovalRequired {
			ap = ev.Approval
		}
	}
	if ap == nil {
		t.Fatal("the live write did not ask")
	}
	for _, err := range a.Resume(ctx, "night", agent.Answer{ApprovalID: ap.ID, Text: "yes", By: "op"}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	f, err := b.Fork(ctx, agent.ForkRequest{Thread: "night", NewThread: "rehearsal", Input: question, Metadata: map[string]string{agent.MetaOwner: "op"}})
	if err != nil {
		t.Fatal(err)
	}
	var answer string
	for ev, err := range b.Replay(ctx, f.Thread, "op") {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == agent.EventApprovalRequired {
			t.Fatal("the simulator's policy asks no one, but the replay asked")
		}
		if ev.Type == agent.EventMessage {
			answer = ev.Message.Content
		}
	}
	if answer != "BTS Q1 now reads 105 A on the simulator." || modelB.Count() != 1 || modelA.Count() != 1 {
		t.Fatalf("replay answered %q (model A %d calls, B %d)", answer, modelA.Count(), modelB.Count())
	}
	if v := setpointOn(t, write, capabilities.TargetSimulator); v != 105 {
		t.Fatalf("simulator Q1 = %g", v)
	}
	c, err := b.Compare(ctx, "night", "rehearsal")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Pairs) != 1 || c.Pairs[0].Left == nil {
		t.Fatalf("pairs %+v", c.Pairs)
	}
	l, r := c.Pairs[0].Left, c.Pairs[0].Right
	want := []string{"channel_finding", "channel_write", "respond"}
	if !slices.Equal(l.Route, want) || !slices.Equal(r.Route, want) || l.Answer != "Q1 is set to 105 A." || r.Answer != answer ||
		l.Tokens != 912 || r.Tokens != 980 || len(l.Approvals) != 1 || len(r.Approvals) != 0 || l.Target != "live" || r.Target != "simulator" {
		t.Fatalf("left %+v\nright %+v", l, r)
	}
	if got := c.Pairs[0].Differences; !slices.Equal(got, []string{"approvals", "answer", "tokens", "target", "writes"}) {
		t.Fatalf("differences %v", got)
	}
	live, err := a.Audit(ctx, agent.AuditFilter{Event: agent.AuditStarted})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rec := range live {
		if rec.Target == capabilities.TargetLive {
			n++
		}
	}
	if n != 1 || len(live) != 2 {
		t.Fatalf("%d writes started on live of %d: want the original's one", n, len(live))
	}
}
