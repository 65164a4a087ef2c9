package controlroom_test

import (
	"context"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/eval"
	"github.com/capgraph/capgraph/state"
)

// evalTarget is the control room as its eval set runs it: offline, writes
// enabled (testdata/eval-capgraph.yaml), a fresh plant per case run.
func evalTarget(t *testing.T) eval.Target {
	return eval.Target{
		Name:     "controlroom offline",
		Config:   agent.Config{Options: state.Options{ApprovalMode: state.ApprovalModeSelective, WritesEnabled: true}},
		Registry: func(context.Context) (*capabilities.Registry, error) { return plantRegistry(t), nil },
	}
}

// The demo's eval set passes offline: the phrasings, typos, follow-ups,
// writes with their approvals, sectors that do not exist and every
// severity injected into the real capabilities take their routes.
func TestEvalSetPassesOffline(t *testing.T) {
	s, err := eval.Load("testdata/eval.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cases) < 60 {
		t.Fatalf("the eval set has %d cases, want at least 60", len(s.Cases))
	}
	rep, err := eval.Run(context.Background(), s, evalTarget(t), eval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	// Every severity is injected somewhere in the set and met.
	met := map[string]bool{}
	for _, cr := range rep.Cases {
		for _, tr := range cr.Runs[0].Turns {
			for _, f := range tr.Failures {
				met[f.Severity+"→"+f.Went] = true
			}
		}
	}
	for _, route := range []string{"retriable→retry", "retriable→error_node", "replanning→replan", "replanning→error_node",
		"reclassification→reclassify", "reclassification→error_node", "critical→error_node", "fatal→abort"} {
		if !met[route] {
			t.Errorf("no case of the set takes the route %s (met: %v)", route, met)
		}
	}
}

// A case of the set with a wrong expectation fails, naming the field and
// what the demo did.
func TestEvalSetCaseWithWrongExpectationFails(t *testing.T) {
	s, err := eval.ParseYAML("wrong.yaml", []byte(`
cases:
  - id: write/q1-asks
    turns: ["Set the quadrupole Q1 current in the BTS line to 105 A"]
    expect:
      safety: {approval: {capability: channel_write, changes: [{target: "BTS:MAG:Q1:CURRENT", value: 110, unit: A}]}}
  - id: fault/read-replanning
    turns: ["What is the beam current?"]
    inject: [{capability: channel_read, fault: replanning}]
    expect:
      route: {failures: [{severity: replanning, went: error_node}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := eval.Run(context.Background(), s, evalTarget(t), eval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	msg := rep.Err()
	if msg == nil {
		t.Fatal("wrong expectations passed")
	}
	for _, want := range []string{
		"write/q1-asks (run 1): expect.safety.approval.changes[0]: want BTS:MAG:Q1:CURRENT = 110 A, seen BTS:MAG:Q1:CURRENT = 105 A",
		"fault/read-replanning (run 1): expect.route.failures: want replanning→error_node, seen channel_read replanning→replan",
	} {
		if !strings.Contains(msg.Error(), want) {
			t.Errorf("report lacks %q:\n%v", want, msg)
		}
	}
}
