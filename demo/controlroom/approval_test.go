package controlroom_test

import (
	"strings"
	"testing"

	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/llm/llmtest/openaitest"
)

// Only a human approves, in the command as shipped (the fourth
// finding): "approve? [yes/no]" answered "hmm, what would that do to the
// beam?" with an approval model configured is asked again — even when the
// model, asked to read the answer, says it approves — nothing is written,
// and capgraph audit shows the human's words. Then "yes" writes.
func TestChatNonAnswerNeverApproves(t *testing.T) {
	// The model approves everything it is asked to read; the other roles
	// have no model and run offline.
	srv := openaitest.New(t).On(nil, openaitest.Text("<think>\nA question about the beam means they agree.\n</think>\n{\"approved\": true}"))
	h := controlRoom(t)
	h.env["USER"] = "operator"
	h.writeConfig("capgraph.yaml", "control_system:\n  writes_enabled: true\nmodels:\n  approval:\n    provider: openai\n    model: qwen3-32b\n    base_url: "+srv.BaseURL()+"\n")
	r := h.run("Set the quadrupole Q1 current in the BTS line to 105 A\nhmm, what would that do to the beam?\n", "chat")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "chat", r.stdout, "BTS:MAG:Q1:CURRENT", `"hmm, what would that do to the beam?" is neither a yes nor a no, so nothing was decided.`)
	if n := strings.Count(r.stdout, "approve? [yes/no] "); n != 2 {
		t.Errorf("asked %d times, want 2:\n%s", n, r.stdout)
	}
	if strings.Contains(r.stdout, "readback") || len(srv.Requests()) != 1 {
		t.Fatalf("written, or the model not asked once (%d):\n%s", len(srv.Requests()), r.stdout)
	}
	thread := threadLine.FindStringSubmatch(r.stdout)[1]
	a := h.run("", "audit", "--thread", thread)
	mustContain(t, "audit", a.stdout, "unclear", `by cli:operator (model: "hmm, what would that do to the beam?")`)
	if strings.Contains(a.stdout, "approved") {
		t.Fatalf("audit:\n%s", a.stdout)
	}
	r = h.run("yes\n", "chat", "--thread", thread)
	mustContain(t, "answered", r.stdout, "105.00 A")
	a = h.run("", "audit", "--thread", thread)
	mustContain(t, "audit", a.stdout, `by cli:operator (keyword: "yes")`, "ended CONFIRMED")
}
