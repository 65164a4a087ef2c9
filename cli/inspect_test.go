package cli_test

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/capgraph/capgraph/cli"
)

func TestGraphMermaidAndDOT(t *testing.T) {
	h := controlRoom(t)
	r := h.run("", "graph")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "flowchart TD\n") {
		t.Fatalf("not Mermaid: %q", r.stdout)
	}
	mustContain(t, "mermaid", r.stdout, "START --> task_extraction", "router{router}",
		"channel_finding[[channel_finding]]", "channel_write --> router", "router -->|ready step / RETRIABLE| channel_write",
		"router -->|no plan / REPLANNING| orchestrator", "router -->|no capabilities / RECLASSIFICATION| classifier",
		"router -->|CRITICAL / budget or limit exhausted| error", "error --> END")
	// The graph command builds no persistent store.
	if _, err := statFile(h.env["XDG_DATA_HOME"] + "/capgraph/capgraph.db"); err == nil {
		t.Error("graph created the SQLite store")
	}
	r = h.run("", "graph", "--format", "dot")
	if !strings.HasPrefix(r.stdout, "digraph capgraph {") || !strings.HasSuffix(r.stdout, "}\n") {
		t.Fatalf("not DOT: %q", r.stdout)
	}
	mustContain(t, "dot", r.stdout, `"router" -> "archiver_retrieval" [label="ready step / RETRIABLE"];`, `"error" -> "END";`)
}

func TestGraphThreadShowsLastPlanWithOutcomes(t *testing.T) {
	h := controlRoom(t)
	r := h.run("", "run", "Show me the RF cavity voltage over the last 2 hours")
	thread := threadOf(t, r.stderr)
	r = h.run("", "graph", "--thread", thread)
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "plan", r.stdout, "flowchart LR", `s1["1. channel_finding: done"]`, `s2["2. archiver_retrieval: done"]`, "s1 --> s2",
		"plan 1 of the last turn:", "2. archiver_retrieval after 1 — done (attempt 1 ok)")
	r = h.run("", "graph", "--format", "dot", "--thread", thread)
	mustContain(t, "plan dot", r.stdout, "digraph plan {", `s1 -> s2;`)
	r = h.run("", "graph", "--thread", "no-such-thread")
	if r.code != cli.ExitError {
		t.Fatalf("unknown thread: exit %d", r.code)
	}
	mustContain(t, "stderr", r.stderr, `unknown thread: "no-such-thread"`)
}

var spaces = regexp.MustCompile(` {2,}`)

// capabilities lists name, provides, requires, the retry policy in force
// with where it comes from, and approval under the configured mode.
func TestCapabilitiesTable(t *testing.T) {
	h := controlRoom(t)
	h.width = 200
	r := h.run("", "capabilities")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		cols := spaces.Split(l, -1)
		rows[cols[0]] = cols
	}
	tests := []struct{ name, provides, requires, retry, approval string }{
		{"NAME", "PROVIDES", "REQUIRES", "RETRY", "APPROVAL"},
		{"channel_finding", "CHANNEL_ADDRESSES", "-", "3 attempts, 1s ×2 ≤30s, full jitter (default)", "no"},
		{"channel_read", "CHANNEL_VALUES", "CHANNEL_ADDRESSES(multiple)", "3 attempts, 500ms ×2 ≤5s, full jitter, never not_found/invalid_input (own)", "no"},
		{"archiver_retrieval", "ARCHIVER_DATA", "CHANNEL_ADDRESSES(multiple)", "", "no"},
		{"channel_write", "CHANNEL_WRITE_RESULTS", "CHANNEL_ADDRESSES(multiple)", "", "always (side effects)"},
	}
	for _, tt := range tests {
		got := rows[tt.name]
		if len(got) != 5 || got[1] != tt.provides || got[2] != tt.requires || (tt.retry != "" && got[3] != tt.retry) || got[4] != tt.approval {
			t.Errorf("row %s = %q", tt.name, got)
		}
	}
	if len(rows) != 5 {
		t.Errorf("%d rows:\n%s", len(rows), r.stdout)
	}

	// A configured policy shows as (config); the approval column follows the mode.
	h.writeConfig("capgraph.yaml", "retry:\n  capabilities:\n    channel_finding:\n      max_attempts: 5\n      initial_interval: 2s\napproval:\n  global_mode: disabled\n")
	r = h.run("", "capabilities", "-v")
	mustContain(t, "configured", r.stdout, "5 attempts, 2s ×2 ≤30s, full jitter (config)", "no (approval disabled)", "always (side effects)", "Find the control-system channel names")
}

// On a terminal narrower than the table (80 columns when the width is
// unknown), capabilities prints a block per capability, wrapped: no line is
// wider than the terminal, and nothing is lost.
func TestCapabilitiesFitTheTerminal(t *testing.T) {
	for _, width := range []int{0, 100, 60, 40} {
		h := controlRoom(t)
		h.width = width
		r := h.run("", "capabilities", "-v")
		if r.code != cli.ExitOK {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		limit := width
		if limit == 0 {
			limit = 80
		}
		for _, l := range strings.Split(r.stdout, "\n") {
			if n := utf8.RuneCountInString(l); n > limit {
				t.Errorf("width %d: a line of %d columns: %q", width, n, l)
			}
		}
		flat := strings.Join(strings.Fields(r.stdout), " ")
		for _, want := range []string{"channel_write", "provides CHANNEL_WRITE_RESULTS", "requires CHANNEL_ADDRESSES(multiple)",
			"retry 3 attempts, 500ms ×2 ≤5s, full jitter, never not_found/invalid_input (own)", "approval always (side effects)", "A human must approve first."} {
			want = strings.ReplaceAll(want, "/ ", "/")
			if !strings.Contains(strings.ReplaceAll(flat, "/ ", "/"), want) {
				t.Errorf("width %d: %q missing:\n%s", width, want, r.stdout)
			}
		}
	}
}
