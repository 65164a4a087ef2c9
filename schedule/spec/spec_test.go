package spec_test

import (
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/schedule/spec"
)

// Due times are computed in the schedule's zone, across a daylight saving
// change too; bad expressions and zones are named.
func TestNextInTheScheduleZone(t *testing.T) {
	s, err := spec.Parse("0 7 * * 1-5", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	// Friday 2026-03-27 08:00 Berlin → Monday 2026-03-30 07:00 (summer time since Sunday).
	got := s.Next(time.Date(2026, 3, 27, 8, 0, 0, 0, berlin))
	if want := time.Date(2026, 3, 30, 5, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("next %v, want %v", got.UTC(), want)
	}
	if got := s.String(); got != "0 7 * * 1-5 (Europe/Berlin)" {
		t.Fatalf("String %q", got)
	}
	every, _ := spec.Parse("*/15 * * * *", "")
	if got := every.Next(time.Date(2026, 1, 1, 10, 15, 0, 0, time.UTC)); !got.Equal(time.Date(2026, 1, 1, 10, 30, 0, 0, time.UTC)) {
		t.Fatalf("strictly after: %v", got)
	}
	for _, tc := range []struct{ expr, tz, want string }{
		{"", "", "empty"},
		{"0 7 * *", "", "not a cron expression"},
		{"61 * * * *", "", "not a cron expression"},
		{"0 7 * * *", "Mars/Olympus", "unknown time zone"},
		{"0 7 * * *", "Local", "depends on the host"},
		{"CRON_TZ=UTC 0 7 * * *", "", "timezone"},
	} {
		if _, err := spec.Parse(tc.expr, tc.tz); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q, %q) = %v, want an error saying %q", tc.expr, tc.tz, err, tc.want)
		}
	}
}
