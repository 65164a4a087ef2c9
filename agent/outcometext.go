package agent

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

// How an attempt of a side-effecting step ended, in the words every
// frontend shows a human (the server's chat answers, the terminal; the page
// writes the same sentences): one source, so an operator reads the same
// thing wherever they look.

// OutcomeLabel is an outcome as a frontend labels it: the outcomes a human
// must act on (mismatch, unconfirmed) in capitals.
func OutcomeLabel(o capabilities.Outcome) string {
	switch o {
	case capabilities.OutcomeMismatch, capabilities.OutcomeUnconfirmed:
		return strings.ToUpper(string(o))
	}
	return string(o)
}

// DescribeOutcome says what became of the attempt a record with an
// outcome ends, from the values before and the readback, and for mismatch
// and unconfirmed what to check:
//
//	set BTS:MAG:Q1:CURRENT 92.00 → 105.00 A (readback 105.00 A).
//	set BTS:MAG:Q4:CURRENT 92.00 → 105.00 A may or may not have been applied (…). It was not retried: check BTS:MAG:Q4:CURRENT on the machine before asking for the change again.
func DescribeOutcome(r AuditRecord) string {
	what := changesText(r.Changes, r.Before)
	if what == "" {
		what = r.Summary
		if strings.TrimSpace(what) == "" {
			what = r.Capability
		}
	}
	msg := strings.TrimSuffix(strings.TrimSpace(r.Message), ".")
	rb := ""
	if len(r.Readback) > 0 {
		rb = " (readback " + readingsText(r.Readback) + ")"
	}
	var s string
	switch r.Outcome {
	case capabilities.OutcomeConfirmed:
		s = what + rb
		if r.Reconciled {
			s += ", established by a readback after the run was interrupted"
		}
	case capabilities.OutcomeFailed:
		s = what + " was not applied" + prefixed(": ", msg)
	case capabilities.OutcomeMismatch:
		s = what + " was carried out, but the readback differs from what was asked" + rb + ". It was not retried: check " + checkText(r) + " on the machine"
	case capabilities.OutcomeUnconfirmed:
		s = what + " may or may not have been applied" + wrapped(msg) + ". It was not retried: check " + checkText(r) + " on the machine before asking for the change again"
	case capabilities.OutcomeUnrequested:
		// Message is the operator's sentence, said in the answer already.
		s = what + " was not carried out: the request did not ask for this change"
		if r.Reason == RefusedIntentMismatch {
			s = what + " was not carried out: it is not the change the request asked for"
		}
	default: // refused
		s = what + " was not carried out" + prefixed(": ", msg)
	}
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return onTarget(r.Target, s)
}

// DescribeBefore lists an approval's changes beside the value each target
// had when it was asked, and what the application says the target is
// ("BTS:MAG:Q1:CURRENT: now 92.00 A → 105.00 A — quadrupole Q1 magnet
// current": the human judges the device, not only its name), or nothing
// when the capability cannot read its targets.
func DescribeBefore(a *state.Approval) []string {
	if a == nil || a.Action == nil || len(a.Before) == 0 {
		return nil
	}
	var lines []string
	for _, ch := range a.Action.Changes {
		if b, ok := readingFor(a.Before, ch.Target); ok {
			line := fmt.Sprintf("%s: now %s → %s", ch.Target, FormatValue(b.Value, b.Unit), FormatValue(ch.Value, ch.Unit))
			if d := strings.TrimSpace(ch.Description); d != "" {
				line += " — " + d
			}
			lines = append(lines, line)
		}
	}
	return lines
}

// FormatValue writes a value as an operator reads it: a number with two
// decimals (92.00) unless it is very large or small, then its unit.
func FormatValue(v any, unit string) string {
	var s string
	switch x := v.(type) {
	case float64:
		s = numberText(x)
	case int:
		s = numberText(float64(x))
	case json.Number:
		if f, err := x.Float64(); err == nil {
			s = numberText(f)
		} else {
			s = x.String()
		}
	case string:
		s = x
	case nil:
		s = "?"
	default:
		b, err := json.Marshal(x)
		if err != nil {
			b = []byte(fmt.Sprint(x))
		}
		s = string(b)
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}

func numberText(f float64) string {
	if a := math.Abs(f); a == 0 || (a >= 0.01 && a < 1e6) {
		return fmt.Sprintf("%.2f", f)
	}
	return fmt.Sprintf("%g", f)
}

// changesText says what an action changes, from the value before when it
// is known: "set BTS:MAG:Q1:CURRENT 92.00 → 105.00 A".
func changesText(changes []capabilities.Change, before []capabilities.Reading) string {
	parts := make([]string, 0, len(changes))
	for _, ch := range changes {
		to := FormatValue(ch.Value, ch.Unit)
		b, ok := readingFor(before, ch.Target)
		switch {
		case !ok:
			parts = append(parts, "set "+ch.Target+" to "+to)
		case b.Unit == ch.Unit || b.Unit == "":
			parts = append(parts, "set "+ch.Target+" "+FormatValue(b.Value, "")+" → "+to)
		default:
			parts = append(parts, "set "+ch.Target+" "+FormatValue(b.Value, b.Unit)+" → "+to)
		}
	}
	return strings.Join(parts, "; ")
}

// readingsText is a readback: "105.00 A", or "Q1 105.00 A; Q2 3.00 A".
func readingsText(rs []capabilities.Reading) string {
	if len(rs) == 1 {
		return FormatValue(rs[0].Value, rs[0].Unit)
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.Target + " " + FormatValue(r.Value, r.Unit)
	}
	return strings.Join(parts, "; ")
}

// checkText names what a human should check.
func checkText(r AuditRecord) string {
	var ts []string
	for _, ch := range r.Changes {
		ts = append(ts, ch.Target)
	}
	if len(ts) == 0 {
		return "the result of " + r.Capability
	}
	return strings.Join(ts, ", ")
}

func readingFor(rs []capabilities.Reading, target string) (capabilities.Reading, bool) {
	for _, r := range rs {
		if r.Target == target {
			return r, true
		}
	}
	return capabilities.Reading{}, false
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

func wrapped(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}
