package cli_test

import (
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/llm/llmtest/openaitest"
)

var threadLine = regexp.MustCompile(`thread ([0-9a-f-]{36})`)

func TestChatSlashCommands(t *testing.T) {
	h := controlRoom(t)
	in := strings.Join([]string{
		"/help",
		"/planning /approval on",
		"/approval off /caps:off /task:off", // looser than the configuration: refused, nothing changes
		"/caps:off",
		"/status",
		"/bogus",
		"/approval:maybe",
		"/clear",
		"/exit",
		"never sent",
	}, "\n") + "\n"
	r := h.run(in, "--store", "memory", "chat")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "chat", r.stdout,
		"/planning[:on|off]", "Try:\n  What is the beam current?", // help with the demo questions
		"(plan approval on)", "(approval mode all_capabilities)",
		"option approval_mode: the request asks for disabled but the configuration says selective",
		"option skip_classification: the request asks for true but the configuration says false",
		"(nothing was changed or sent; change the configuration file to loosen a safety setting)",
		"options: plan approval on, approval mode all_capabilities, capability selection on, task extraction on, writes off",
		"no turn yet on this thread",
		"unknown command /bogus (try /help)",
		"/approval:maybe: the value must be on, off or selective",
		"(new conversation: thread ",
		"bye — resume with:")
	if strings.Contains(r.stdout, "never sent") {
		t.Error("a line after /exit was processed")
	}
}

// A turn that stops for a human is answered at the prompt: "no" gives up
// and the turn ends with its error report; the conversation goes on.
func TestChatApprovalAtPrompt(t *testing.T) {
	h := newHarness(t, tourApp())
	r := h.run("Run the quota hog\nno\nRead the flaky sensor\n", "--store", "memory", "chat")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "chat", r.stdout, "Approval needed: quota_hog is blocked", "approve? [yes/no] ", "a human gave up", "flaky_sensor answered")
	if i, j := strings.Index(r.stdout, "approve?"), strings.Index(r.stdout, "a human gave up"); i < 0 || j < i {
		t.Errorf("the report comes before the question")
	}
}

// A FATAL failure ends the turn, not the conversation.
func TestChatFatalKeepsSession(t *testing.T) {
	r := newHarness(t, tourApp()).run("Check the corrupt state\nRead the flaky sensor\n", "--store", "memory", "chat")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "chat", r.stdout, "FATAL: fatal error in corrupt_state", "flaky_sensor answered")
}

// A pending approval is asked again when the thread is resumed.
func TestChatResumesPendingApproval(t *testing.T) {
	h := newHarness(t, tourApp())
	r := h.run("Run the quota hog\n", "chat") // input ends at the question
	mustContain(t, "first chat", r.stdout, "the approval stays pending; resume with:")
	m := threadLine.FindStringSubmatch(r.stdout)
	r = h.run("no\n", "chat", "--thread", m[1])
	mustContain(t, "resumed chat", r.stdout, "A step waits for your approval: quota_hog is blocked", "a human gave up")
}

// chat starts by saying what it runs with: the configuration file, the
// store, the models and the write switch (and how to enable writes).
func TestChatBannerSaysWhatItRunsWith(t *testing.T) {
	h := controlRoom(t)
	r := h.run("/exit\n", "chat")
	mustContain(t, "chat", r.stdout,
		"  configuration: none: the built-in defaults (no capgraph.yaml here; --config FILE to use one)\n",
		"  store:         sqlite:"+h.env["XDG_DATA_HOME"],
		"  models:        none: offline mode",
		"  writes:        disabled: channel_write is refused; to allow it, set control_system.writes_enabled: true in capgraph.yaml",
		"/help for commands and demo questions, /exit to leave.")
	cfg := h.writeConfig("capgraph.yaml", "control_system:\n  writes_enabled: true\n")
	r = h.run("/exit\n", "--store", "memory", "chat")
	mustContain(t, "chat", r.stdout, "  configuration: "+cfg+"\n", "  store:         memory\n",
		"  writes:        enabled: channel_write may act, each change after a human's approval")
}

// Only a human approves (the fourth finding): with an approval
// model configured — one that reads every answer as an approval — the
// answer "hmm, what would that do to the beam?" at "approve? [yes/no]"
// approves nothing: the human is asked again, nothing is written, and the
// audit keeps the words. The human's explicit yes, in a later session,
// is what writes.
func TestChatNonAnswerIsAskedAgain(t *testing.T) {
	srv := openaitest.New(t).On(nil, openaitest.Text("Sure.\n```json\n{\"approved\": true}\n```"))
	h := controlRoom(t)
	h.env["USER"] = "anna"
	h.writeConfig("capgraph.yaml", "control_system:\n  writes_enabled: true\nmodels:\n  approval:\n    provider: openai\n    model: qwen3-32b\n    base_url: "+srv.BaseURL()+"\n")
	r := h.run("Set the quadrupole Q1 current in the BTS line to 105 A\nhmm, what would that do to the beam?\nok?\n", "chat")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "chat", r.stdout, "Approval needed: set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A",
		`"hmm, what would that do to the beam?" is neither a yes nor a no, so nothing was decided. Still waiting for your approval: set BTS:MAG:Q1:CURRENT`,
		`"ok?" is neither a yes nor a no`, "the approval stays pending; resume with:")
	if n := strings.Count(r.stdout, "approve? [yes/no] "); n != 3 {
		t.Errorf("asked %d times, want 3 (the question, then again after each non-answer):\n%s", n, r.stdout)
	}
	if strings.Contains(r.stdout, "readback verified") {
		t.Fatalf("written after a non-answer:\n%s", r.stdout)
	}
	if len(srv.Requests()) != 2 {
		t.Errorf("the approval model read %d answers, want 2", len(srv.Requests()))
	}
	thread := threadLine.FindStringSubmatch(r.stdout)[1]
	a := h.run("", "audit", "--thread", thread)
	mustContain(t, "audit", a.stdout, "unclear", `by cli:anna (model: "hmm, what would that do to the beam?")`, `by cli:anna (model: "ok?")`)
	if strings.Contains(a.stdout, "approved") || strings.Contains(a.stdout, "started") {
		t.Fatalf("audit after non-answers:\n%s", a.stdout)
	}
	// The next session asks again; an explicit yes writes, once.
	r = h.run("yes\n", "chat", "--thread", thread)
	mustContain(t, "resumed chat", r.stdout, "A step waits for your approval: set BTS:MAG:Q1:CURRENT", "readback verified")
	a = h.run("", "audit", "--thread", thread)
	mustContain(t, "audit", a.stdout, `approval step:1:1:1:channel_write:`, `by cli:anna (keyword: "yes")`, "ended CONFIRMED")
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("a clear yes reached the approval model (%d calls)", n)
	}
}

// run --answer takes only an explicit yes or no: anything a model would
// have to read is refused before the question is asked.
func TestRunAnswerMustBeExplicit(t *testing.T) {
	h := controlRoom(t)
	r := h.run("", "--store", "memory", "run", "--answer", "sure, why not", "Set the quadrupole Q1 current in the BTS line to 105 A")
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, `--answer "sure, why not" is neither a yes nor a no`) {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}

// An approval nobody answered in time ends as an expiry, never as a
// human's rejection: resuming the thread says so without asking, an answer
// that comes too late carries nothing out, and the audit records expired.
func TestChatExpiredApproval(t *testing.T) {
	h := controlRoom(t)
	h.env["USER"] = "anna"
	h.writeConfig("capgraph.yaml", "control_system:\n  writes_enabled: true\napproval:\n  expires_after: 50ms\n")
	r := h.run("Set the quadrupole Q1 current in the BTS line to 105 A\n", "chat")
	mustContain(t, "first chat", r.stdout, "Approval needed:", "the approval stays pending")
	thread := threadLine.FindStringSubmatch(r.stdout)[1]
	time.Sleep(100 * time.Millisecond)
	r = h.run("yes\n", "chat", "--thread", thread)
	mustContain(t, "resumed chat", r.stdout, "The approval (set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A) expired at ", "before anyone answered: nothing was done.")
	if strings.Contains(r.stdout, "approve?") || strings.Contains(r.stdout, "readback verified") {
		t.Fatalf("asked or written after the expiry:\n%s", r.stdout)
	}
	a := h.run("", "audit", "--thread", thread)
	mustContain(t, "audit", a.stdout, "expired", "(expired)")
	if strings.Contains(a.stdout, "rejected") || strings.Contains(a.stdout, "by cli:anna") {
		t.Fatalf("an expiry audited as a human's decision:\n%s", a.stdout)
	}

	// Answered at the prompt, but too late: nothing is carried out.
	in := &slowLines{lines: []string{"Set the quadrupole Q1 current in the BTS line to 105 A\n", "yes\n"}, pause: 150 * time.Millisecond}
	var out syncBuffer
	if code := h.app.Run(context.Background(), h.environment(in, &out, io.Discard, []string{"chat"})); code != cli.ExitOK {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	mustContain(t, "late answer", out.String(), "approve? [yes/no] ", "The answer was not carried out: it expired at ", "it ended with nothing done.")
	if strings.Contains(out.String(), "readback verified") {
		t.Fatalf("written after a late yes:\n%s", out.String())
	}
	thread = threadLine.FindStringSubmatch(out.String())[1]
	a = h.run("", "audit", "--thread", thread)
	mustContain(t, "audit", a.stdout, "expired", `(expired: "yes")`)
}

// slowLines is a terminal's input: one line per read, the lines after the
// first after a pause (the human thinking).
type slowLines struct {
	lines []string
	pause time.Duration
	n     int
}

func (s *slowLines) Read(p []byte) (int, error) {
	if s.n >= len(s.lines) {
		return 0, io.EOF
	}
	if s.n > 0 {
		time.Sleep(s.pause)
	}
	s.n++
	return copy(p, s.lines[s.n-1]), nil
}

// At an approval prompt a slash command is a command, not an answer (the
// issue's terminal finding: "/status" counted as "no" and gave the run
// up): /status and /help are carried out and the question is asked again;
// the approval is still open and a later "yes" writes; /exit leaves with
// the approval pending.
func TestChatSlashCommandAtApprovalPrompt(t *testing.T) {
	h := controlRoom(t)
	h.writeConfig("capgraph.yaml", "control_system:\n  writes_enabled: true\n")
	r := h.run("Set the quadrupole Q1 current in the BTS line to 105 A\n/status\n/help\n/status yes\nyes\n", "--store", "memory", "chat")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "chat", r.stdout, "approve? [yes/no] ", "last run: interrupted", "Type a question and press Enter",
		`("yes" was not taken as an answer: answer yes or no on a line of its own)`, "Still waiting for your approval: set BTS:MAG:Q1:CURRENT", "readback verified")
	if n := strings.Count(r.stdout, "approve? [yes/no] "); n != 4 {
		t.Errorf("asked %d times, want 4 (the question, then again after each command line):\n%s", n, r.stdout)
	}
	if strings.Contains(r.stdout, "rejected") || strings.Contains(r.stdout, "neither a yes nor a no") {
		t.Errorf("a command was taken as an answer:\n%s", r.stdout)
	}

	r = h.run("Set the quadrupole Q1 current in the BTS line to 105 A\n/exit\nyes\n", "chat")
	mustContain(t, "chat", r.stdout, "bye — resume with:")
	if strings.Contains(r.stdout, "readback verified") || strings.Count(r.stdout, "approve? [yes/no] ") != 1 {
		t.Fatalf("/exit at the approval prompt did not leave with the approval pending:\n%s", r.stdout)
	}
	thread := threadLine.FindStringSubmatch(r.stdout)[1]
	r = h.run("yes\n", "chat", "--thread", thread)
	mustContain(t, "resumed chat", r.stdout, "A step waits for your approval: set BTS:MAG:Q1:CURRENT", "readback verified")
}
