package controlroom_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/demo/controlroom"
)

// childCommand makes this test binary the capgraph command when tmux runs
// it with the variable set: the terminal test drives the real program in a
// real terminal without building another binary.
const childCommand = "CAPGRAPH_TEST_AS_COMMAND"

func TestMain(m *testing.M) {
	if os.Getenv(childCommand) == "1" {
		os.Args = append([]string{"capgraph"}, strings.Fields(os.Getenv("CAPGRAPH_TEST_ARGS"))...)
		cli.Main(controlroom.App())
		return
	}
	os.Exit(m.Run())
}

// tmuxOrSkip returns tmux's path; without it the test skips (fails under
// CI=true: scripts/setup/tmux.sh installs it).
func tmuxOrSkip(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is not installed (run: source scripts/setup/tmux.sh)")
		}
		t.Skip("tmux is not installed (run: source scripts/setup/tmux.sh)")
	}
	return p
}

// tmuxSession is the chat running in a detached tmux session of its own
// server (its own socket), so nothing of the user's tmux is touched.
type tmuxSession struct {
	t            *testing.T
	tmux, socket string
}

func (s tmuxSession) cmd(args ...string) string {
	s.t.Helper()
	out, err := exec.Command(s.tmux, append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// screen is the pane as the person sees it: the visible rows and the
// scrollback, without colours; styled is the same with the escape
// sequences of its colours and attributes.
func (s tmuxSession) screen() (plain, styled string) {
	return s.cmd("capture-pane", "-p", "-J", "-S", "-200"), s.cmd("capture-pane", "-p", "-e", "-J", "-S", "-200")
}

// waitFor waits until the screen shows every text, or fails showing it.
func (s tmuxSession) waitFor(texts ...string) string {
	s.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		plain, _ := s.screen()
		missing := ""
		for _, w := range texts {
			if !strings.Contains(plain, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return plain
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the terminal never showed %q:\n%s", missing, plain)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The terminal renders the assistant's Markdown (the fourth
// finding: "**What failed:**" and "⚠️" printed raw): in a real terminal
// (tmux, 100 columns) the error report of a refused write shows its
// sections bold and without Markdown's marks, the technical report under
// its title, and a slash command at the approval prompt is a command.
func TestTerminalRendersMarkdownInTmux(t *testing.T) {
	tmux := tmuxOrSkip(t)
	dir := t.TempDir()
	s := tmuxSession{t: t, tmux: tmux, socket: filepath.Join(dir, "tmux.sock")}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The pane stays after the chat ends, so its last lines can be read.
	run := fmt.Sprintf("env %s=1 CAPGRAPH_TEST_ARGS='--store memory chat' HOME=%s TERM=xterm-256color %s; echo \"[exit $?]\"; sleep 120", childCommand, dir, self)
	s.cmd("-f", "/dev/null", "new-session", "-d", "-x", "100", "-y", "50", "-c", dir, run)
	t.Cleanup(func() { _ = exec.Command(tmux, "-S", s.socket, "kill-server").Run() })
	s.waitFor("you> ")

	s.cmd("send-keys", "-l", "Set the quadrupole Q1 current in the BTS line to 105 A")
	s.cmd("send-keys", "Enter")
	plain := s.waitFor("Technical report", "you> ")
	_, styled := s.screen()
	for _, want := range []string{"Your request could not be completed.", "You asked:", "What failed:", "What you can do:", "Analysis:", "Error type:"} {
		if !strings.Contains(plain, want) {
			t.Errorf("the screen lacks %q:\n%s", want, plain)
		}
	}
	for _, mark := range []string{"**", "<details>", "<summary>", "</details>"} {
		if strings.Contains(plain, mark) {
			t.Errorf("the screen shows Markdown's %q:\n%s", mark, plain)
		}
	}
	// Bold section names: the bold attribute (1) set before them.
	if !boldBefore.MatchString(styled) {
		t.Errorf("\"What failed:\" is not bold:\n%q", styled)
	}
	s.cmd("send-keys", "-l", "/exit")
	s.cmd("send-keys", "Enter")
	s.waitFor("bye — resume with:", "[exit 0]")
}

// boldBefore: "What failed:" after the bold attribute and perhaps a colour.
var boldBefore = regexp.MustCompile(`\x1b\[(?:[0-9;]*;)?1m(?:\x1b\[[0-9;]*m)*What failed:`)
