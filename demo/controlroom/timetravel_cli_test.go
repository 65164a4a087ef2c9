package controlroom_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/cli"
)

// targetsConfig is the control room with its live machine and a simulator
// that writes without asking (a rehearsal).
const targetsConfig = `control_system:
  writes_enabled: true
  target: live
  targets:
    live:
      writes_enabled: true
    simulator:
      writes_enabled: true
      simulated: true
      approval: none
`

// history, fork, replay and compare from the terminal over the SQLite
// store: a live write, its fork with the message edited, the replay on the
// simulator (without asking, as its policy says), and the two side by side.
func TestTimeTravelCommands(t *testing.T) {
	h := controlRoom(t)
	h.writeConfig("capgraph.yaml", targetsConfig)
	r := h.run("", "chat")
	mustContain(t, "the chat's banner", r.stdout+r.stderr, "may act on the live target (live: writes on, every change approved; simulator (simulated): writes on, no approval)")
	r = h.run("", "run", "--thread", "orig", "--answer", "yes", "Set the BTS Q1 quadrupole current to 105 A")
	if r.code != cli.ExitOK {
		t.Fatalf("run: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "live run", r.stdout, "on the live target: set BTS:MAG:Q1:CURRENT")

	r = h.run("", "history", "orig")
	if r.code != cli.ExitOK {
		t.Fatalf("history: exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "history", r.stdout, "turn 1: Set the BTS Q1 quadrupole current to 105 A", "ended", "target live", "checkpoint ")
	mustContain(t, "history", r.stderr, "1 checkpoint(s) kept")

	r = h.run("", "fork", "--id", "reh", "--input", "Set the BTS Q1 quadrupole current to 107 A", "orig")
	if r.code != cli.ExitOK || strings.TrimSpace(r.stdout) != "reh" {
		t.Fatalf("fork: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "fork", r.stderr, "writes to the simulator target", "replay reh")

	r = h.run("", "replay", "reh")
	if r.code != cli.ExitOK {
		t.Fatalf("replay: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "replay", r.stdout, "step 2: confirmed — on the simulator target: set BTS:MAG:Q1:CURRENT 92.00 → 107.00 A")

	r = h.run("", "compare", "orig", "reh")
	if r.code != cli.ExitOK {
		t.Fatalf("compare: exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "compare", r.stdout, "turn 1  differs in: input", "target", "route", "live", "simulator")
	r = h.run("", "compare", "--json", "orig", "reh")
	var c agent.Comparison
	if err := json.Unmarshal([]byte(r.stdout), &c); err != nil || len(c.Pairs) != 1 || c.Pairs[0].Right.Target != capabilities.TargetSimulator ||
		c.Pairs[0].Left.Target != capabilities.TargetLive || len(c.Pairs[0].Right.Approvals) != 0 || len(c.Pairs[0].Left.Approvals) != 1 {
		t.Fatalf("compare --json: %v\n%s", err, r.stdout)
	}

	r = h.run("", "audit", "--json", "--thread", "reh")
	if !strings.Contains(r.stdout, `"target":"simulator"`) || strings.Contains(r.stdout, `"target":"live"`) {
		t.Fatalf("the fork's audit does not say simulator only:\n%s", r.stdout)
	}

	// The fork continued in a chat stays on the simulator: the chat names
	// no target, so the fork's holds.
	r = h.run("Set the BTS Q1 quadrupole current to 109 A\n", "chat", "--thread", "reh")
	mustContain(t, "chat in the fork", r.stdout, "on the simulator target: set BTS:MAG:Q1:CURRENT")
	if strings.Contains(r.stdout, "confirmed — on the live target") {
		t.Fatalf("a chat in the fork wrote live:\n%s", r.stdout)
	}

	// Usage errors name what is wrong.
	for _, bad := range [][]string{{"history"}, {"fork"}, {"compare", "orig"}, {"replay", "--answer", "maybe", "reh"}} {
		if r := h.run("", bad...); r.code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want a usage error: %s", bad, r.code, r.stderr)
		}
	}
	if r := h.run("", "fork", "--target", "moon", "orig"); r.code == cli.ExitOK || !strings.Contains(r.stderr, "target") {
		t.Errorf("fork to an unknown target: exit %d: %s", r.code, r.stderr)
	}
}
