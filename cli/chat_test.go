package cli_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/cli"
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
