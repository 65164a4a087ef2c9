package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

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
		"flaky":     {"retry: flaky_sensor attempt 1 of 4 failed", "retry: flaky_sensor attempt 2 of 4 failed", "flaky_sensor answered", "recovered"},
		"dead":      {"retry: dead_sensor attempt 2 of 3 failed", "ERROR REPORT", "**Error Severity:** RETRIABLE"},
		"moved":     {"plan 2:", "moved_sensor answered"},
		"misrouted": {"misrouted_request answered"},
		"interlock": {"ERROR REPORT", "**Error Severity:** CRITICAL", "interlock active", "ask the shift operator to check the interlock panel"},
		"corrupt":   {"FATAL — the run stopped: fatal error in corrupt_state: The capability's internal state is corrupt; the run must stop."},
		"quota":     {"approval needed: quota_hog is blocked", "approve? no", "ERROR REPORT", "a human gave up"},
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
	if n := strings.Count(out.String(), "ERROR REPORT"); n != 3 {
		t.Errorf("%d error reports, want 3 (dead, interlock, quota)", n)
	}
}
