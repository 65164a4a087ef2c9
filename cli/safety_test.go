package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/cli"
)

const setQ1 = "Set the quadrupole Q1 current in the BTS line to 105 A"

// The second finding: an approval asked by a process with writes
// enabled does not outlive the switch. Answered by a process started
// without that configuration, the write is refused, and the audit log
// says so.
func TestRunApprovalAnsweredWithoutTheWriteSwitch(t *testing.T) {
	h := controlRoom(t)
	h.writeConfig("w.yaml", "control_system:\n  writes_enabled: true\napproval:\n  global_mode: disabled\n")
	r := h.run("", "--config", "w.yaml", "run", "--thread", "w2", setQ1)
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// Side effects are approved whatever approval.global_mode says.
	mustContain(t, "first run", r.stdout, "Approval needed: set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A")
	r = h.run("", "run", "--thread", "w2", "--answer", "yes", "yes")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "answer without the config", r.stdout, "ERROR REPORT", "Writes are disabled")
	if strings.Contains(r.stdout, "readback verified") {
		t.Fatalf("written without the write switch:\n%s", r.stdout)
	}
	r = h.run("", "audit", "--thread", "w2")
	mustContain(t, "audit", r.stdout, "refused", "channel_write", "writes_disabled", "approval step:1:1:1:channel_write by cli:")
}

// An approved write is on record: approved (by whom), then executed with
// old → new and the readback; capgraph audit lists and filters them.
func TestAuditListsApprovedWrite(t *testing.T) {
	h := controlRoom(t)
	h.env["USER"] = "anna"
	h.writeConfig("capgraph.yaml", "control_system:\n  writes_enabled: true\n")
	r := h.run("", "run", "--thread", "w3", "--answer", "yes", setQ1)
	mustContain(t, "approved run", r.stdout, "Set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A (readback verified)")
	r = h.run("", "audit")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines:\n%s", len(lines), r.stdout)
	}
	mustContain(t, "approved line", lines[0], "approved", "set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A", "by cli:anna")
	mustContain(t, "executed line", lines[1], "executed", "→ Set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A (readback verified)")
	r = h.run("", "audit", "--json", "--outcome", "executed", "--since", "1h")
	var e agent.AuditEntry
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &e); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	if e.Outcome != agent.AuditExecuted || len(e.Changes) != 1 || e.Changes[0].Target != "BTS:MAG:Q1:CURRENT" || e.Changes[0].Value != 105.0 ||
		e.ApprovedBy != "cli:anna" || !strings.Contains(string(e.Result), `"readback":105`) {
		t.Errorf("executed record %+v", e)
	}
	r = h.run("", "audit", "--outcome", "refused")
	mustContain(t, "no match", r.stderr, "no audit records match")
	for _, bad := range [][]string{{"--outcome", "done"}, {"--since", "yesterday"}, {"--limit", "-1"}} {
		r = h.run("", append([]string{"audit"}, bad...)...)
		if r.code != cli.ExitUsage {
			t.Errorf("audit %v: exit %d, want a usage error: %s", bad, r.code, r.stderr)
		}
	}
}

// The bypasses of task extraction and capability selection widen what a
// turn runs: a chat may switch them on only when the configuration does.
func TestChatBypassOnlyWhenConfigured(t *testing.T) {
	h := controlRoom(t)
	r := h.run("/caps:off\n/exit\n", "--store", "memory", "chat")
	mustContain(t, "not configured", r.stdout, "option skip_classification: the request asks for true but the configuration says false")
	h.writeConfig("capgraph.yaml", "agent_control:\n  skip_classification: true\n")
	r = h.run("/caps:on\n/caps:off\n/status\n/exit\n", "--store", "memory", "chat")
	mustContain(t, "configured", r.stdout, "(capability selection on)", "(capability selection off (every capability is active))",
		"capability selection off")
	if strings.Contains(r.stdout, "option skip_classification") {
		t.Errorf("a configured bypass was refused:\n%s", r.stdout)
	}
}
