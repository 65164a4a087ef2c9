package controlroom_test

import (
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/demo/controlroom/plant"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/state"
)

// The offline strategies (no model at all, the command's default) answer
// the demo questions with their facts.

func TestOfflineControlRoomDemo(t *testing.T) {
	reg := plantRegistry(t)
	for _, d := range plant.Demo {
		t.Run(d.Question, func(t *testing.T) {
			o := runTurn(t, agent.Config{Registry: reg, Options: state.Options{ApprovalMode: "selective"}}, d.Question)
			plans := o.of(agent.EventPlan)
			if len(plans) != 1 {
				t.Fatalf("plans %d", len(plans))
			}
			var caps []string
			for _, st := range plans[0].Plan.Steps {
				if st.Capability != state.NodeRespond {
					caps = append(caps, st.Capability)
				}
			}
			if strings.Join(caps, ",") != strings.Join(d.Capabilities, ",") {
				t.Errorf("plan %v, want %v", caps, d.Capabilities)
			}
			if d.NeedsApproval {
				// Approval of the write is the agent's business (its tests);
				// here the offline plan is what is checked.
				return
			}
			m := o.message()
			if m == nil || m.Kind != state.KindAnswer || !strings.HasPrefix(m.Content, nodes.OfflineNotice) {
				t.Fatalf("message %+v", m)
			}
			for _, f := range d.Facts {
				if !strings.Contains(m.Content, f) {
					t.Errorf("answer lacks %q:\n%s", f, m.Content)
				}
			}
		})
	}
}

// plantRegistry registers the control-room plant (seed 1, its clock stopped
// at 2026-11-21 12:00 UTC), as the example's program does.
func plantRegistry(t *testing.T) *capabilities.Registry {
	t.Helper()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	p, err := plant.New(plant.Config{Seed: 1, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	reg := capabilities.NewRegistry()
	if err := plant.Register(reg, p); err != nil {
		t.Fatal(err)
	}
	return reg
}
