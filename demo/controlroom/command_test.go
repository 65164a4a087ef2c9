package controlroom_test

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/demo/controlroom"
	"github.com/capgraph/capgraph/demo/controlroom/plant"
)

// The command as shipped: the capgraph command line over its default
// application, as a user runs it.

// result is what one command line printed and returned.
type result struct {
	code           int
	stdout, stderr string
}

// harness runs command lines of the control-room App in a private
// directory with a private environment (the default SQLite store lands in
// the test's temporary directory).
type harness struct {
	t   *testing.T
	app cli.App
	dir string
	env map[string]string
}

func controlRoom(t *testing.T) *harness {
	t.Helper()
	dir := t.TempDir()
	return &harness{t: t, app: controlroom.App(), dir: dir, env: map[string]string{
		"HOME": filepath.Join(dir, "home"), "XDG_DATA_HOME": filepath.Join(dir, "data"),
	}}
}

// writeConfig writes a configuration file in the harness directory.
func (h *harness) writeConfig(name, text string) string {
	h.t.Helper()
	p := filepath.Join(h.dir, name)
	if err := writeFile(p, text); err != nil {
		h.t.Fatal(err)
	}
	return p
}

// run runs one command line with stdin.
func (h *harness) run(stdin string, args ...string) result {
	h.t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	term := false
	code := h.app.Run(ctx, cli.Env{Args: args, Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Dir: h.dir, Terminal: &term,
		Getenv: func(k string) string { return h.env[k] }})
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// mustContain fails unless s contains every want.
func mustContain(t *testing.T, what, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}

var threadLine = regexp.MustCompile(`thread ([0-9a-f-]{36})`)

// The default command set answers every control-room demo question
// correctly offline, with the facts the demo data says a correct answer has.
func TestRunAnswersDemoQuestions(t *testing.T) {
	for _, d := range plant.Demo {
		t.Run(d.Question, func(t *testing.T) {
			h := controlRoom(t)
			args := []string{"--store", "memory", "run", d.Question}
			if d.NeedsWrites {
				args = append([]string{"--config", h.writeConfig("writes.yaml", "control_system:\n  writes_enabled: true\n")}, args...)
			}
			if d.NeedsApproval {
				args = append(args, "--answer", "yes")
			}
			r := h.run("", args...)
			if r.code != cli.ExitOK {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
			}
			mustContain(t, "answer", r.stdout, d.Facts...)
			// Without a terminal, progress is plain event lines on stderr.
			for i, c := range d.Capabilities {
				mustContain(t, "event lines", r.stderr, "step "+itoa(i+1)+" of ")
				mustContain(t, "event lines", r.stderr, c+" done")
			}
			if strings.Contains(r.stdout, "\r") || strings.Contains(r.stdout, "· step") {
				t.Errorf("progress leaked into stdout: %q", r.stdout)
			}
		})
	}
}

func itoa(i int) string { return string(rune('0' + i)) }

// Offline, a question about something the machine does not have gets an
// answer saying so and what exists, in one plan: no replanning, no error
// report.
func TestRunSaysWhatDoesNotExist(t *testing.T) {
	r := controlRoom(t).run("", "--store", "memory", "run", "What is the vacuum in sector 42?")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "answer", r.stdout, "There is no sector 42; the machine has sectors 1 to 12.", "SR:C01:VAC:GAUGE1", "Nothing was read")
	for _, bad := range []string{"ERROR REPORT", "REPLANNING", "max_planning_attempts"} {
		if strings.Contains(r.stdout, bad) {
			t.Errorf("answer has %q:\n%s", bad, r.stdout)
		}
	}
	if strings.Count(r.stderr, "plan ") != 1 {
		t.Errorf("want one plan:\n%s", r.stderr)
	}
}

// A three-turn conversation whose later turns reuse the first turn's
// subject: the channel found in turn 1 is read in turn 2 and its history
// retrieved in turn 3. The history is kept in the (SQLite) store, so a
// second chat with --thread resumes it.
func TestChatThreeTurnsReuseContext(t *testing.T) {
	h := controlRoom(t)
	r := h.run("find the beam current channel\nread it\nshow its history over the last hour\n/exit\n", "chat")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	turns := strings.Split(r.stdout, "you> ")
	if len(turns) != 5 { // banner, three answers, bye
		t.Fatalf("%d prompts:\n%s", len(turns)-1, r.stdout)
	}
	mustContain(t, "turn 1", turns[1], "SR:DCCT:CURRENT")
	mustContain(t, "turn 2 (read it)", turns[2], "SR:DCCT:CURRENT = ", "mA", "read at")
	mustContain(t, "turn 3 (its history)", turns[3], "SR:DCCT:CURRENT: ", " samples, min", "min", "max", "mean", "over the last hour")
	mustContain(t, "bye", turns[4], "resume with: capgraph chat --thread ")

	m := threadLine.FindStringSubmatch(turns[0])
	if m == nil {
		t.Fatalf("no thread in banner %q", turns[0])
	}
	r = h.run("/status\n", "chat", "--thread", m[1])
	mustContain(t, "resumed chat", r.stdout, "resuming a conversation of 6 messages", "messages: 6; last run: answered", "archiver_retrieval", "done")
}
