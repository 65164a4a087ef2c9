package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/examples/errortour/tour"
)

// The tour visits every scenario and shows what the user sees for each
// severity.
func TestErrorTourShowsEverySeverity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	sections := strings.Split(out.String(), strings.Repeat("─", 72)+"\n")
	want := map[string][]string{
		"flaky":     {"retry: step 1 (flaky_sensor) attempt 1 of 4 failed", "retry: step 1 (flaky_sensor) attempt 2 of 4 failed", "flaky_sensor answered", "recovered"},
		"dead":      {"retry: step 1 (dead_sensor) attempt 2 of 3 failed", "Your request could not be completed", "(severity: retriable)"},
		"moved":     {"plan 2:", "moved_sensor answered"},
		"misrouted": {"misrouted_request answered"},
		"interlock": {"Your request could not be completed", "(severity: critical)", "Stopped for safety: interlock active", "- Ask the shift operator to check the interlock panel."},
		"corrupt":   {"FATAL — the run stopped: fatal error in corrupt_state: The capability's internal state is corrupt; the run must stop."},
		"quota":     {"approval needed: quota_hog is blocked", "approve? no", "Your request could not be completed", "a human gave up"},
		"primary":   {"backup_sensor answered", "the fallback for primary_source"},
	}
	if len(sections) != len(tour.Scenarios)+2 {
		t.Fatalf("%d sections for %d scenarios:\n%s", len(sections)-2, len(tour.Scenarios), out.String())
	}
	for i, sc := range tour.Scenarios {
		sec := sections[i+1]
		if !strings.Contains(sec, sc.Capability+" — severity "+sc.Severity) {
			t.Errorf("section %d is not %s:\n%s", i+1, sc.Keyword, sec)
		}
		for _, w := range want[sc.Keyword] {
			if !strings.Contains(sec, w) {
				t.Errorf("%s lacks %q:\n%s", sc.Keyword, w, sec)
			}
		}
	}
	// Only FATAL ends without a message; every other stop has its answer or report.
	if n := strings.Count(out.String(), "Your request could not be completed"); n != 3 {
		t.Errorf("%d error reports, want 3 (dead, interlock, quota)", n)
	}
}

// The tour's command line: every scenario can be tried from a chat — the
// retry, the fallback, the escalation to a human (answered no here), the
// fatal stop that ends the turn but not the conversation.
func TestErrorTourAppInChat(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	var lines []string
	for _, sc := range tour.Scenarios {
		lines = append(lines, sc.Question)
		if sc.Keyword == "quota" {
			lines = append(lines, "no")
		}
	}
	var out, errb bytes.Buffer
	code := App().Run(ctx, cli.Env{Args: []string{"--store", "memory", "chat"}, Stdin: strings.NewReader(strings.Join(lines, "\n") + "\n/help\n/exit\n"),
		Stdout: &out, Stderr: &errb, Dir: dir, Getenv: func(k string) string { return map[string]string{"HOME": dir}[k] }})
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	s := out.String()
	for _, want := range []string{
		"flaky_sensor answered 42.0 units on attempt 3", "flaky_sensor succeeded after 3 attempts",
		"it persisted through 3 attempts (severity: retriable)", "moved_sensor answered", "misrouted_request answered",
		"Stopped for safety: interlock active",
		"FATAL: fatal error in corrupt_state",
		"Approval needed: quota_hog is blocked", "approve? [yes/no]", "a human gave up",
		"backup_sensor answered", "the fallback for primary_source",
		"Try:\n  Read the flaky sensor", // /help offers the scenarios
	} {
		if !strings.Contains(s, want) {
			t.Errorf("chat lacks %q:\n%s", want, s)
		}
	}
}
