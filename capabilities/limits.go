package capabilities

import (
	"fmt"
	"strconv"
)

// Limits say what a quantity's values mean, so a capability can answer "is
// the beam ok?" with a verdict and the values that back it instead of a
// list of numbers. A capability declares them for what it reads (the
// control-room demo's channels carry them) and judges each value with
// Judge.
type Limits struct {
	// Normal is the band of normal operation.
	Normal Range `json:"normal"`
	// Alarm is the band outside which a value is an alarm; between Normal
	// and Alarm it is a warning. An unbounded Alarm side makes every value
	// outside Normal on that side an alarm.
	Alarm Range `json:"alarm,omitzero"`
}

// Range is an interval; a nil bound is open on that side.
type Range struct {
	Low  *float64 `json:"low,omitempty"`
	High *float64 `json:"high,omitempty"`
}

// Between is the range [low, high]; AtMost and AtLeast are open on one side.
func Between(low, high float64) Range { return Range{Low: &low, High: &high} }
func AtMost(high float64) Range       { return Range{High: &high} }
func AtLeast(low float64) Range       { return Range{Low: &low} }

// Contains reports whether v lies in the range.
func (r Range) Contains(v float64) bool {
	return (r.Low == nil || v >= *r.Low) && (r.High == nil || v <= *r.High)
}

// IsZero reports whether the range has no bound.
func (r Range) IsZero() bool { return r.Low == nil && r.High == nil }

// Format renders the range with format for its numbers: "450 to 510",
// "at most 5e-09", "at least 8".
func (r Range) Format(format func(float64) string) string {
	switch {
	case r.Low != nil && r.High != nil:
		return format(*r.Low) + " to " + format(*r.High)
	case r.High != nil:
		return "at most " + format(*r.High)
	case r.Low != nil:
		return "at least " + format(*r.Low)
	}
	return "any value"
}

// String renders the range with the shortest numbers.
func (r Range) String() string {
	return r.Format(func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) })
}

// Verdict is what a value means under its limits.
type Verdict string

const (
	VerdictNormal  Verdict = "normal"
	VerdictWarning Verdict = "warning"
	VerdictAlarm   Verdict = "alarm"
)

// Judge says what v means: normal inside Normal, an alarm outside Alarm
// (or outside Normal on a side Alarm leaves open), a warning between.
func (l Limits) Judge(v float64) Verdict {
	if l.Normal.Contains(v) {
		return VerdictNormal
	}
	low := l.Normal.Low != nil && v < *l.Normal.Low
	switch {
	case low && l.Alarm.Low == nil, !low && l.Alarm.High == nil:
		return VerdictAlarm
	case l.Alarm.Contains(v):
		return VerdictWarning
	}
	return VerdictAlarm
}

// Describe renders the limits for a person: "normal 490 to 510, alarm
// outside 400 to 520".
func (l Limits) Describe(format func(float64) string) string {
	s := "normal " + l.Normal.Format(format)
	switch a := l.Alarm; {
	case a.Low != nil && a.High != nil:
		s += fmt.Sprintf(", alarm outside %s", a.Format(format))
	case a.High != nil:
		s += ", alarm above " + format(*a.High)
	case a.Low != nil:
		s += ", alarm below " + format(*a.Low)
	}
	return s
}
