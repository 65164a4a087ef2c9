package cli_test

import (
	"strings"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/internal/outcometest"
	"github.com/capgraph/capgraph/llm/llmtest/openaitest"
)

// plantHarness runs the commands over the outcome plant
// (internal/outcometest), writes enabled: Q1 confirms, Q2 is interlocked,
// Q3 drifts, Q4 drops the connection, above 120 A is refused.
func plantHarness(t *testing.T) *harness {
	t.Helper()
	p := outcometest.New()
	h := newHarness(t, cli.App{Name: "plant", Capabilities: func(*config.Config) ([]capabilities.Capability, error) { return p.Capabilities() }})
	h.writeConfig("capgraph.yaml", "control_system:\n  writes_enabled: true\n")
	return h
}

// `run` prints what became of each change, and the approval it answers
// shows the value before beside the change.
func TestRunPrintsEveryOutcome(t *testing.T) {
	h := plantHarness(t)
	for _, tc := range []struct {
		magnet, want string
		code         int
	}{
		{"Q1", "step 1: confirmed — set BTS:MAG:Q1:CURRENT 92.00 → 105.00 A (readback 105.00 A).", cli.ExitOK},
		{"Q2", "step 1: failed — set BTS:MAG:Q2:CURRENT 92.00 → 105.00 A was not applied: the Q2 interlock is open.", cli.ExitNotAnswered},
		{"Q3", "step 1: MISMATCH — set BTS:MAG:Q3:CURRENT 92.00 → 105.00 A was carried out, but the readback differs from what was asked (readback 97.50 A). It was not retried: check BTS:MAG:Q3:CURRENT on the machine.", cli.ExitNotAnswered},
		{"Q4", "step 1: UNCONFIRMED — set BTS:MAG:Q4:CURRENT 92.00 → 105.00 A may or may not have been applied (the connection to the Q4 supply broke after the request was sent). It was not retried: check BTS:MAG:Q4:CURRENT on the machine before asking for the change again.", cli.ExitNotAnswered},
	} {
		r := h.run("", "--store", "memory", "run", "--answer", "yes", "Set the "+tc.magnet+" current to 105 A")
		if r.code != tc.code { // an answer, or the error report of a change that did not go as asked
			t.Fatalf("%s: exit %d: %s", tc.magnet, r.code, r.stderr)
		}
		target := "BTS:MAG:" + tc.magnet + ":CURRENT"
		mustContain(t, tc.magnet+" stderr", r.stderr, "approval needed: set "+target+" to 105.00 A\n  "+target+": now 92.00 A → 105.00 A — quadrupole "+tc.magnet+" magnet current\nanswering \"yes\"")
		mustContain(t, tc.magnet+" stdout", r.stdout, tc.want)
	}
	r := h.run("", "--store", "memory", "run", "Set the Q1 current to 150 A")
	mustContain(t, "refused", r.stdout, "step 1: refused — set BTS:MAG:Q1:CURRENT to 150.00 A was not carried out: Step 1 was refused and not carried out: 150 A is above the Q1 supply's limit of 120 A.")
	if strings.Contains(r.stdout+r.stderr, "approval needed") {
		t.Errorf("a refused change was put to a human:\n%s\n%s", r.stdout, r.stderr)
	}
}

// `chat` asks with the value before and prints the outcome after the answer.
func TestChatPrintsTheOutcome(t *testing.T) {
	h := plantHarness(t)
	r := h.run("Set the Q3 current to 105 A\nyes\n", "--store", "memory", "chat")
	mustContain(t, "chat", r.stdout, "Approval needed: set BTS:MAG:Q3:CURRENT to 105.00 A\n  BTS:MAG:Q3:CURRENT: now 92.00 A → 105.00 A — quadrupole Q3 magnet current\n",
		"step 1: MISMATCH — set BTS:MAG:Q3:CURRENT 92.00 → 105.00 A was carried out, but the readback differs")
	if i, j := strings.Index(r.stdout, "approve?"), strings.Index(r.stdout, "MISMATCH"); i < 0 || j < i {
		t.Errorf("the outcome is not printed after the answer:\n%s", r.stdout)
	}
}

// `capgraph audit` lists every outcome the turns had, from the store.
func TestAuditShowsEveryOutcome(t *testing.T) {
	h := plantHarness(t)
	for _, m := range []string{"Q1", "Q2", "Q3", "Q4"} {
		// Q1 is answered; the others end in the error report (exit 1).
		if r := h.run("", "run", "--answer", "yes", "Set the "+m+" current to 105 A"); r.code != cli.ExitOK && (m == "Q1" || r.code != cli.ExitNotAnswered) {
			t.Fatalf("%s: exit %d: %s", m, r.code, r.stderr)
		}
	}
	h.run("", "run", "Set the Q1 current to 150 A")
	// A planner that answers a question with a write (a model that lies):
	// refused at planning, audited as unrequested.
	srv := openaitest.New(t).
		On(openaitest.UserContains("REPLANNING"), openaitest.Text(`{"steps": [{"context_key": "a", "capability": "respond", "task_objective": "Answer"}]}`)).
		On(nil, openaitest.Text("Plan:\n```json\n"+`{"steps": [{"context_key": "w", "capability": "`+outcometest.Capability+
			`", "task_objective": "Set the Q2 current to 105 A", "parameters": {"values": {"BTS:MAG:Q2:CURRENT": 105}, "unit": "A"}}]}`+"\n```"))
	h.writeConfig("capgraph.yaml", "control_system:\n  writes_enabled: true\nmodels:\n  orchestrator:\n    provider: openai\n    model: qwen3-32b\n    base_url: "+srv.BaseURL()+"\n")
	if r := h.run("", "run", outcometest.Read); r.code != cli.ExitOK || strings.Contains(r.stdout+r.stderr, "approval needed") {
		t.Fatalf("the question: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r := h.run("", "audit", "--limit", "0")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	has := func(parts ...string) bool {
		for _, l := range lines {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(l, p)
			}
			if ok {
				return true
			}
		}
		return false
	}
	for _, want := range [][]string{
		{"ended CONFIRMED", "BTS:MAG:Q1:CURRENT", "readback: BTS:MAG:Q1:CURRENT 105 A"},
		{"ended FAILED", "BTS:MAG:Q2:CURRENT", "the Q2 interlock is open"},
		{"ended MISMATCH", "BTS:MAG:Q3:CURRENT", "readback: BTS:MAG:Q3:CURRENT 97.5 A"},
		{"ended UNCONFIRMED", "BTS:MAG:Q4:CURRENT", "before: BTS:MAG:Q4:CURRENT 92 A"},
		{"refused ", "150 A is above the Q1 supply's limit", "(limits)"},
		{"unrequested", "set_magnet_current: set BTS:MAG:Q2:CURRENT to 105.00 A", "You did not ask for a change", "(no_change_intent)"},
	} {
		if !has(want...) {
			t.Errorf("no audit line with %q:\n%s", want, r.stdout)
		}
	}
	r = h.run("", "audit", "--outcome", "unconfirmed")
	if n := strings.Count(strings.TrimSpace(r.stdout), "\n") + 1; r.code != cli.ExitOK || n != 1 || !strings.Contains(r.stdout, "UNCONFIRMED") {
		t.Errorf("--outcome unconfirmed: %d lines:\n%s%s", n, r.stdout, r.stderr)
	}
}
