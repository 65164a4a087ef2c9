package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
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
	if r.code != cli.ExitNotAnswered { // waits for approval
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// Side effects are approved whatever approval.global_mode says.
	mustContain(t, "first run", r.stdout, "Approval needed: set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A")
	r = h.run("", "run", "--thread", "w2", "--answer", "yes", "yes")
	if r.code != cli.ExitNotAnswered { // the error report
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "answer without the config", r.stdout, "Your request could not be completed", "Writes are disabled")
	if strings.Contains(r.stdout, "readback verified") {
		t.Fatalf("written without the write switch:\n%s", r.stdout)
	}
	r = h.run("", "audit", "--thread", "w2")
	mustContain(t, "audit", r.stdout, "refused", "channel_write", "writes_disabled", "approval step:1:1:1:channel_write:", " by cli:")
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
	if len(lines) != 5 {
		t.Fatalf("%d lines:\n%s", len(lines), r.stdout)
	}
	mustContain(t, "planned line", lines[0], "planned", "channel_write: Set the quadrupole Q1 current in the BTS line to 105 A", "step 2]")
	lines = lines[1:]
	mustContain(t, "asked line", lines[0], "asked", "set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A", "before: BTS:MAG:Q1:CURRENT 92 A")
	mustContain(t, "approved line", lines[1], "approved", "set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A", `by cli:anna (keyword: "yes")`, "before: BTS:MAG:Q1:CURRENT 92 A")
	mustContain(t, "started line", lines[2], "started", "before: BTS:MAG:Q1:CURRENT 92 A")
	mustContain(t, "ended line", lines[3], "ended CONFIRMED", "→ Set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A (readback verified)", "readback: BTS:MAG:Q1:CURRENT 105 A")
	// On a terminal each record is a block that fits its width.
	h.term, h.width = true, 60
	r = h.run("", "audit")
	for _, l := range strings.Split(strings.TrimRight(r.stdout, "\n"), "\n") {
		if n := utf8.RuneCountInString(l); n > 60 {
			t.Errorf("a line of %d columns on a 60-column terminal: %q", n, l)
		}
	}
	mustContain(t, "terminal audit", r.stdout, "approved", "ended CONFIRMED", "cli:anna", "\n    approval ", "readback verified")
	h.term, h.width = false, 0
	r = h.run("", "audit", "--json", "--outcome", "confirmed", "--since", "1h")
	var e agent.AuditEntry
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &e); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	if e.Outcome != capabilities.OutcomeConfirmed || len(e.Changes) != 1 || e.Changes[0].Target != "BTS:MAG:Q1:CURRENT" || e.Changes[0].Value != 105.0 ||
		e.ApprovedBy != "cli:anna" || !strings.Contains(string(e.Result), `"readback":105`) {
		t.Errorf("executed record %+v", e)
	}
	r = h.run("", "audit", "--outcome", "refused")
	mustContain(t, "no match", r.stderr, "no audit records match")
	for _, bad := range [][]string{{"--outcome", "done"}, {"--outcome", "executed"}, {"--event", "finished"}, {"--since", "yesterday"}, {"--limit", "-1"}} {
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

func call(t *testing.T, method, url, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// `capgraph serve` reads its audit settings from the YAML: the audit file
// (server.audit_log) and the admin keys that may read the audit API.
func TestServeAuditFileAndAdminAPI(t *testing.T) {
	h := controlRoom(t)
	const opsKey, opKey = "ops-key-0123456789abcdef", "op-key-0123456789abcdef"
	h.writeConfig("capgraph.yaml", `control_system:
  writes_enabled: true
server:
  audit_log: audit.jsonl
  api_keys:
    - name: ops
      key: `+opsKey+`
      admin: true
    - name: op
      key: `+opKey+`
      may_raise: [approval_mode]
`)
	sv := startServe(h, h.app, "--addr", "127.0.0.1:0")
	t.Cleanup(func() {
		sv.cancel()
		select { // waitFor may have stopped it already
		case <-sv.done:
		case <-time.After(30 * time.Second):
		}
	})
	sv.waitFor(t, &sv.out, "Press Ctrl-C to stop.", "no banner")
	base := pageLine.FindStringSubmatch(sv.out.String())[1]
	call(t, "POST", base+"/api/threads", opKey, `{"id": "w"}`)
	code, body := call(t, "POST", base+"/api/threads/w/runs", opKey, `{"input": "`+setQ1+`", "stream": true, "options": {"approval_mode": "disabled"}}`)
	id := regexp.MustCompile(`"id":"(step:[^"]+)"`).FindStringSubmatch(body)
	if code != http.StatusOK || id == nil {
		t.Fatalf("%d, no approval asked (side effects are approved whatever the mode): %s", code, body)
	}
	code, body = call(t, "POST", base+"/api/threads/w/approval", opKey, `{"approval_id": "`+id[1]+`", "approved": true, "stream": true}`)
	if code != http.StatusOK || !strings.Contains(body, "readback verified") {
		t.Fatalf("%d: %s", code, body)
	}
	if code, body = call(t, "GET", base+"/api/audit", opKey, ""); code != http.StatusForbidden {
		t.Fatalf("non-admin: %d %s", code, body)
	}
	code, body = call(t, "GET", base+"/api/audit?outcome=confirmed", opsKey, "")
	var out struct{ Records []agent.AuditEntry }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &out) != nil || len(out.Records) != 1 || out.Records[0].ApprovedBy != "op" ||
		out.Records[0].Principal != "op" {
		t.Fatalf("admin: %d %s", code, body)
	}
	lines, err := os.ReadFile(filepath.Join(h.dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The file: the same records (agent.AuditRecord), and a "step" record
	// of every capability step attempt, the write's with its outcome.
	mustContain(t, "audit file", string(lines), `"event":"approved"`, `"event":"started"`, `"event":"ended","outcome":"confirmed"`, `"approved_by":"op"`,
		`"event":"step","outcome":"confirmed"`, `"event":"step","capability":"channel_finding"`)
	if strings.Contains(string(lines), `"record":`) {
		t.Errorf("audit file lines in the old step/action shape:\n%s", lines)
	}
	// The same records from the command line, reading the store.
	r := h.run("", "audit", "--thread", out.Records[0].Thread)
	mustContain(t, "capgraph audit", r.stdout, "approved", "ended CONFIRMED", "by key op (tenant op)")
}
