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
