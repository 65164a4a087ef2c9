package cli_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/cli"
)

// ansi matches a terminal's escape sequences (colours, erase line).
var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// The terminal never shows Markdown's marks: an error report (the Markdown
// Chat Completions clients get) piped to a file is plain text — no "**",
// no "<details>" tag, the technical report under its title, list items as
// "• " — and on a terminal it is styled.
func TestRunPrintsTheErrorReportAsText(t *testing.T) {
	h := controlRoom(t)
	r := h.run("", "--store", "memory", "run", "Set the quadrupole Q1 current in the BTS line to 105 A")
	if r.code != cli.ExitNotAnswered { // an error report: not answered
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "plain report", r.stdout, "⚠️ Your request could not be completed.\n", "\nYou asked: Set the quadrupole Q1 current",
		"\nWhat failed: Step ", "\nWhat you can do:\n• ", "\nAnalysis: ", "\nTechnical report:\n• Error type: writes_disabled")
	for _, mark := range []string{"**", "<details>", "</details>", "<summary>", "`"} {
		if strings.Contains(r.stdout, mark) {
			t.Errorf("the plain text shows %q:\n%s", mark, r.stdout)
		}
	}

	h.term = true
	r = h.run("", "--store", "memory", "run", "Set the quadrupole Q1 current in the BTS line to 105 A")
	text := ansi.ReplaceAllString(r.stdout, "")
	if !strings.Contains(r.stdout, "\x1b[") || strings.Contains(text, "**") || strings.Contains(text, "<details>") ||
		!strings.Contains(text, "Your request could not be completed.") || !strings.Contains(text, "Technical report") {
		t.Errorf("the terminal output is not rendered Markdown:\n%s", text)
	}
}
