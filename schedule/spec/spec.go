// Package spec parses the when of a scheduled run: a standard five-field
// cron expression (minute hour day-of-month month day-of-week, with the
// usual *, lists, ranges, steps, month and weekday names, and @hourly,
// @daily, @weekly, @monthly, @yearly) read in a named time zone. It is a
// leaf package, so the configuration can check a schedule without pulling
// in the scheduler.
package spec

import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // a named zone works on hosts without a zoneinfo database

	"github.com/robfig/cron/v3"
)

// Spec is a parsed cron expression in its time zone.
type Spec struct {
	expr  string
	loc   *time.Location
	sched cron.Schedule
}

var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Zone reads a schedule's time zone: "" or "UTC" is UTC; "Local" is
// refused, as a schedule must not depend on the host's setting.
func Zone(tz string) (*time.Location, error) {
	switch tz {
	case "", "UTC":
		return time.UTC, nil
	case "Local":
		return nil, fmt.Errorf("timezone Local depends on the host; name the zone (Europe/Berlin, America/Chicago)")
	}
	l, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q (want a name such as Europe/Berlin or UTC)", tz)
	}
	return l, nil
}

// Expr checks a cron expression alone.
func Expr(expr string) error {
	_, err := parseExpr(expr)
	return err
}

func parseExpr(expr string) (cron.Schedule, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil, fmt.Errorf("the cron expression is empty")
	}
	if strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ=") {
		return nil, fmt.Errorf("%q: give the time zone in timezone, not in the expression", expr)
	}
	s, err := parser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("%q is not a cron expression (minute hour day-of-month month day-of-week, e.g. \"0 7 * * 1-5\"): %v", expr, err)
	}
	return s, nil
}

// Parse reads expr in zone tz (see Zone).
func Parse(expr, tz string) (Spec, error) {
	loc, err := Zone(tz)
	if err != nil {
		return Spec{}, err
	}
	s, err := parseExpr(expr)
	if err != nil {
		return Spec{}, err
	}
	return Spec{expr: strings.TrimSpace(expr), loc: loc, sched: s}, nil
}

// Next is the first due time strictly after t.
func (s Spec) Next(t time.Time) time.Time {
	if s.sched == nil {
		return time.Time{}
	}
	return s.sched.Next(t.In(s.loc))
}

// String is the expression and its zone: "0 7 * * 1-5 (Europe/Berlin)".
func (s Spec) String() string {
	if s.loc == nil {
		return s.expr
	}
	return s.expr + " (" + s.loc.String() + ")"
}

// Location is the zone the expression is read in.
func (s Spec) Location() *time.Location {
	if s.loc == nil {
		return time.UTC
	}
	return s.loc
}
