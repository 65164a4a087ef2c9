package capabilities_test

import (
	"testing"

	"github.com/capgraph/capgraph/capabilities"
)

// A value's verdict under its limits: normal inside the normal band, a
// warning between it and the alarm band, an alarm beyond; an open alarm
// side makes every value outside normal on that side an alarm.
func TestLimitsJudge(t *testing.T) {
	beam := capabilities.Limits{Normal: capabilities.Between(490, 510), Alarm: capabilities.Between(400, 520)}
	vacuum := capabilities.Limits{Normal: capabilities.AtMost(5e-9), Alarm: capabilities.AtMost(1e-8)}
	lifetime := capabilities.Limits{Normal: capabilities.AtLeast(8)}
	for _, tc := range []struct {
		l    capabilities.Limits
		v    float64
		want capabilities.Verdict
	}{
		{beam, 500, capabilities.VerdictNormal}, {beam, 490, capabilities.VerdictNormal}, {beam, 480, capabilities.VerdictWarning},
		{beam, 515, capabilities.VerdictWarning}, {beam, 399, capabilities.VerdictAlarm}, {beam, 521, capabilities.VerdictAlarm},
		{vacuum, 2.6e-9, capabilities.VerdictNormal}, {vacuum, 7e-9, capabilities.VerdictWarning}, {vacuum, 2e-8, capabilities.VerdictAlarm},
		{vacuum, -1, capabilities.VerdictNormal},
		{lifetime, 10.5, capabilities.VerdictNormal}, {lifetime, 7.9, capabilities.VerdictAlarm},
	} {
		if got := tc.l.Judge(tc.v); got != tc.want {
			t.Errorf("%s: Judge(%g) = %s, want %s", tc.l.Describe(fmtG), tc.v, got, tc.want)
		}
	}
	if got := beam.Describe(fmtG); got != "normal 490 to 510, alarm outside 400 to 520" {
		t.Errorf("Describe %q", got)
	}
	if got := lifetime.Describe(fmtG); got != "normal at least 8" {
		t.Errorf("Describe %q", got)
	}
	if got := vacuum.Describe(fmtG); got != "normal at most 5e-09, alarm above 1e-08" {
		t.Errorf("Describe %q", got)
	}
}

func fmtG(v float64) string { return capabilities.AtMost(v).String()[len("at most "):] }
