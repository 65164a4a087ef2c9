package controlroom_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	cgconfig "github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/demo/controlroom"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/llm"
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

// The control room with targets from its configuration file, offline: a
// write asked on the simulator sets the simulator's Q1 after a human's
// yes, and the live machine's Q1 stays where it was; the approval and the
// audit name the simulator.
func TestControlRoomWriteOnTheSimulator(t *testing.T) {
	cfg, err := cgconfig.Parse([]byte(targetsFile), "targets.yaml")
	if err != nil {
		t.Fatal(err)
	}
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
