package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/cli"
)

// A write stops for approval; without --answer the run ends there (exit 1:
// not answered) and says how to answer; with --answer no nothing is written.
func TestRunApproval(t *testing.T) {
	h := controlRoom(t)
	h.writeConfig("capgraph.yaml", "control_system:\n  writes_enabled: true\n")
	q := "Set the quadrupole Q1 current in the BTS line to 105 A"
	r := h.run("", "run", "--thread", "w1", q)
	if r.code != cli.ExitNotAnswered {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "Approval needed: set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A")
	mustContain(t, "stderr", r.stderr, "approval needed: set BTS:MAG:Q1:CURRENT", "thread w1 waits for approval (answer with: capgraph chat --thread w1)")
	// chat --thread asks it again; no means nothing is written.
	r = h.run("no\n", "chat", "--thread", "w1")
	mustContain(t, "chat", r.stdout, "A step waits for your approval: set BTS:MAG:Q1:CURRENT")
	if strings.Contains(r.stdout, "readback verified") {
		t.Errorf("written after no:\n%s", r.stdout)
	}
	r = h.run("", "--store", "memory", "run", "--answer", "yes", q)
	mustContain(t, "approved run", r.stdout, "Set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A (readback verified)")
	r = h.run("", "--store", "memory", "run", q)
	mustContain(t, "memory store", r.stderr, "--store memory keeps nothing: use --answer yes|no")
}

func TestRunWritesDisabledByDefaultIsAnErrorReport(t *testing.T) {
	r := controlRoom(t).run("", "--store", "memory", "run", "Set the quadrupole Q1 current in the BTS line to 105 A")
	if r.code != cli.ExitNotAnswered {
		t.Fatalf("an error report exits 1; got %d: %s", r.code, r.stderr)
	}
	mustContain(t, "error report", r.stdout, "Your request could not be completed", "writes_enabled")
}

// The default store is SQLite in the data directory; the thread is named
// so the conversation can go on.
func TestRunDefaultStoreIsSQLiteInDataDir(t *testing.T) {
	h := controlRoom(t)
	r := h.run("", "run", "What is the beam current?")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, "thread ", "chat --thread ")
	db := h.env["XDG_DATA_HOME"] + "/capgraph/capgraph.db"
	if _, err := statFile(db); err != nil {
		t.Fatalf("default store %s not created: %v", db, err)
	}
	// A second command on the same thread sees the first turn.
	thread := threadOf(t, r.stderr)
	r = h.run("", "graph", "--thread", thread)
	mustContain(t, "graph --thread", r.stdout, "channel_finding: done", "channel_read: done", "attempt 1 ok")
}

func TestRunTerminalShowsLiveStatusLine(t *testing.T) {
	h := newHarness(t, roomApp(1))
	h.term = true
	r := h.run("", "--store", "memory", "run", "What is the beam current?")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "terminal output", r.stdout, "\r\033[K", "step 1 of 3: channel_finding", "step 2 of 3: channel_read",
		"step 2 (channel_read) retrying in ", "s — attempt 1 of 3 failed: The control", "SR:DCCT:CURRENT")
	// The line is erased before the answer, which is rendered Markdown
	// (styled: escape sequences, no Markdown marks).
	last := r.stdout[strings.LastIndex(r.stdout, "\r\033[K"):]
	if answer := ansi.ReplaceAllString(last, ""); !strings.HasPrefix(strings.TrimSpace(answer), "(Offline mode") || !strings.Contains(last, "\033[") {
		t.Errorf("the answer does not follow an erased line, rendered: %q", last[:min(len(last), 80)])
	}
	if r.stderr != "" {
		t.Errorf("stderr %q: a memory store names no thread to continue", r.stderr)
	}
}

func TestRunPlainRetryLines(t *testing.T) {
	r := newHarness(t, roomApp(2)).run("", "--store", "memory", "run", "What is the beam current?")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "event lines", r.stderr, "retry: step 2 (channel_read) attempt 1 of 3 failed", "retry: step 2 (channel_read) attempt 2 of 3 failed")
	mustContain(t, "answer", r.stdout, "SR:DCCT:CURRENT", "mA")
}

// FATAL: exit 2 (the run did not end) with a one-line reason, nothing on stdout.
func TestRunFatalExitsNonZeroWithOneLine(t *testing.T) {
	r := newHarness(t, tourApp()).run("", "--store", "memory", "run", "Check the corrupt state")
	if r.code != cli.ExitInfrastructure {
		t.Fatalf("exit %d, want %d\n%s", r.code, cli.ExitInfrastructure, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	last := lines[len(lines)-1]
	if want := "tour: fatal error in corrupt_state: The capability's internal state is corrupt; the run must stop."; last != want {
		t.Errorf("last stderr line %q, want %q", last, want)
	}
	if r.stdout != "" {
		t.Errorf("stdout %q", r.stdout)
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "no command given"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"run without question", []string{"--store", "memory", "run"}, "a question is required"},
		{"unknown flag", []string{"run", "--nope", "q"}, "flag provided but not defined: -nope"},
		{"bad store", []string{"--store", "redis://x", "run", "q"}, ""},
		{"chat with argument", []string{"--store", "memory", "chat", "hello"}, `unexpected argument "hello"`},
		{"graph bad format", []string{"graph", "--format", "svg"}, `--format "svg"`},
		{"config without check", []string{"config"}, "want: config check [FILE]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := controlRoom(t).run("", tt.args...)
			if tt.name == "bad store" {
				// A bad --store value is a configuration problem, not usage;
				// run exits 2 for either (it could not run).
				if r.code != cli.ExitInfrastructure || !strings.Contains(r.stderr, `"redis://x" is not memory, sqlite:PATH or postgres://`) {
					t.Fatalf("exit %d stderr %q", r.code, r.stderr)
				}
				return
			}
			if r.code != cli.ExitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, cli.ExitUsage, r.stderr)
			}
			mustContain(t, "stderr", r.stderr, tt.want)
		})
	}
}

func TestHelp(t *testing.T) {
	r := controlRoom(t).run("", "help")
	if r.code != cli.ExitOK {
		t.Fatal(r.code)
	}
	for _, c := range []string{"run", "chat", "serve", "graph", "capabilities", "config check", "--store", "--config"} {
		mustContain(t, "help", r.stdout, c)
	}
	r = controlRoom(t).run("", "run", "-h")
	if r.code != cli.ExitOK || !strings.Contains(r.stderr, "-thread") {
		t.Fatalf("run -h: exit %d, %q", r.code, r.stderr)
	}
}

func TestAppWithoutCapabilities(t *testing.T) {
	code := cli.App{}.Run(context.Background(), cli.Env{Args: []string{"capabilities"}})
	if code != cli.ExitError {
		t.Fatalf("exit %d", code)
	}
}

// The exit statuses of run are what CI needs: 0 only for an answer; 1 for
// a turn that ended without one (the error report, a refusal, a wait for
// approval); 2 when it could not run or did not end (usage, configuration,
// FATAL).
func TestRunExitCodesForCI(t *testing.T) {
	h := controlRoom(t)
	writes := h.writeConfig("writes.yaml", "control_system:\n  writes_enabled: true\n")
	bad := h.writeConfig("bad.yaml", "limits:\n  max_node_steps: 0\n")
	q1 := "Set the quadrupole Q1 current in the BTS line to 105 A"
	for _, tc := range []struct {
		name string
		args []string
		want int
		out  string // stdout or stderr contains
	}{
		{"answered", []string{"--store", "memory", "run", "What is the beam current?"}, cli.ExitOK, "SR:DCCT:CURRENT"},
		{"approved and written", []string{"--store", "memory", "--config", writes, "run", "--answer", "yes", q1}, cli.ExitOK, "readback verified"},
		{"error report", []string{"--store", "memory", "run", q1}, cli.ExitNotAnswered, "Your request could not be completed"},
		{"refused by the human", []string{"--store", "memory", "--config", writes, "run", "--answer", "no", q1}, cli.ExitNotAnswered, ""},
		{"waits for approval", []string{"--config", writes, "run", q1}, cli.ExitNotAnswered, "Approval needed"},
		{"usage", []string{"run"}, cli.ExitInfrastructure, "a question is required"},
		{"bad configuration", []string{"--config", bad, "run", "What is the beam current?"}, cli.ExitInfrastructure, "max_node_steps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.run("", tc.args...)
			if r.code != tc.want {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", r.code, tc.want, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout+r.stderr, tc.out) {
				t.Fatalf("output lacks %q:\nstdout %s\nstderr %s", tc.out, r.stdout, r.stderr)
			}
		})
	}
	r := newHarness(t, tourApp()).run("", "--store", "memory", "run", "Check the corrupt state")
	if r.code != cli.ExitInfrastructure {
		t.Fatalf("FATAL: exit %d, want %d", r.code, cli.ExitInfrastructure)
	}
}
