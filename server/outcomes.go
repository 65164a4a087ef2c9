package server

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

// How an attempt of a side-effecting step ended (capabilities.Outcome) is
// shown on every face: the agent's audit records that carry an outcome
// (ended, refused, unrequested) go to the run's followers as "audit"
// events (the page draws a badge per step, AG-UI sends CUSTOM "outcome"),
// and a chat answer ends with one line per outcome (outcomeMarkdown).

// publicOutcome is what a run's followers see of an audit record: nil for
// a record without an outcome (planned, asked, approved, started), else
// the attempt's outcome without who ran it, the approval id (it ends in a
// secret of the turn), the idempotency key or the stored result.
func publicOutcome(r *agent.AuditRecord) *agent.AuditRecord {
	if r == nil || r.Outcome == "" {
		return nil
	}
	return &agent.AuditRecord{Time: r.Time, Event: r.Event, Outcome: r.Outcome, Reason: r.Reason, Message: r.Message,
		Capability: r.Capability, Summary: r.Summary, Changes: r.Changes, Turn: r.Turn, Plan: r.Plan, Step: r.Step, Attempt: r.Attempt,
		Before: r.Before, Readback: r.Readback, Reconciled: r.Reconciled, ResultSummary: r.ResultSummary, Duration: r.Duration}
}

// outcomeLabel is an outcome as a chat answer writes it: the outcomes a
// human must act on in capitals.
func outcomeLabel(o capabilities.Outcome) string {
	switch o {
	case capabilities.OutcomeMismatch, capabilities.OutcomeUnconfirmed:
		return strings.ToUpper(string(o))
	}
	return string(o)
}

// outcomeLine is one attempt's outcome as a line of Markdown:
//
//	**confirmed** — set BTS:MAG:Q1:CURRENT 92.00 → 105.00 A (readback 105.00 A)
func outcomeLine(r agent.AuditRecord) string {
	what := actionText(r.Changes, r.Before)
	if what == "" {
		what = nonEmptyText(r.Summary, r.Capability)
	}
	msg := strings.TrimSuffix(strings.TrimSpace(r.Message), ".")
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** — ", outcomeLabel(r.Outcome))
	switch r.Outcome {
	case capabilities.OutcomeConfirmed:
		b.WriteString(what)
		if rb := readingsText(r.Readback); rb != "" {
			b.WriteString(" (readback " + rb + ")")
		}
		if r.Reconciled {
			b.WriteString(", established by a readback after the run was interrupted")
		}
	case capabilities.OutcomeFailed:
		b.WriteString(what + " was not applied")
		if msg != "" {
			b.WriteString(": " + msg)
		}
	case capabilities.OutcomeMismatch:
		b.WriteString(what + " was carried out, but the readback differs from what was asked")
		if rb := readingsText(r.Readback); rb != "" {
			b.WriteString(" (readback " + rb + ")")
		}
		b.WriteString(". It was not retried: check " + targetsText(r) + " on the machine.")
	case capabilities.OutcomeUnconfirmed:
		b.WriteString(what + " may or may not have been applied")
		if msg != "" {
			b.WriteString(" (" + msg + ")")
		}
		b.WriteString(". It was not retried: check " + targetsText(r) + " on the machine before asking for the change again.")
	case capabilities.OutcomeUnrequested:
		b.WriteString(what + " was not carried out: the request did not ask for this change")
		if msg != "" {
			b.WriteString(" (" + msg + ")")
		}
	default: // refused
		b.WriteString(what + " was not carried out")
		if msg != "" {
			b.WriteString(": " + msg)
		}
	}
	s := b.String()
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// outcomeMarkdown is the outcomes of a turn's side-effecting steps, one
// paragraph each, to end a chat answer with ("" when there were none).
func outcomeMarkdown(recs []agent.AuditRecord) string {
	if len(recs) == 0 {
		return ""
	}
	lines := make([]string, len(recs))
	for i, r := range recs {
		lines[i] = outcomeLine(r)
	}
	return strings.Join(lines, "\n\n")
}

// approvalPrompt is what an approval request shows a human in a chat
// answer: its summary and, for each change, the value now beside the value
// asked ("BTS:MAG:Q1:CURRENT: now 92.00 A → 105.00 A").
func approvalPrompt(a *state.Approval) string {
	if a == nil {
		return ""
	}
	if b := approvalBefore(a); b != "" {
		return a.Summary + "\n\n" + b
	}
	return a.Summary
}

// approvalBefore lists an approval's changes with the value each target
// had when it was asked, one Markdown list item each ("" when the
// capability cannot read its targets).
func approvalBefore(a *state.Approval) string {
	if a == nil || a.Action == nil || len(a.Before) == 0 {
		return ""
	}
	var lines []string
	for _, ch := range a.Action.Changes {
		if before, ok := readingOf(a.Before, ch.Target); ok {
			lines = append(lines, fmt.Sprintf("- %s: now %s → %s", ch.Target, quantityText(before.Value, before.Unit), quantityText(ch.Value, ch.Unit)))
		}
	}
	return strings.Join(lines, "\n")
}

// actionText says what an action changes, from the value before when it is
// known: "set BTS:MAG:Q1:CURRENT 92.00 → 105.00 A".
func actionText(changes []capabilities.Change, before []capabilities.Reading) string {
	parts := make([]string, 0, len(changes))
	for _, ch := range changes {
		to := quantityText(ch.Value, ch.Unit)
		b, ok := readingOf(before, ch.Target)
		switch {
		case !ok:
			parts = append(parts, "set "+ch.Target+" to "+to)
		case b.Unit == ch.Unit || b.Unit == "":
			parts = append(parts, "set "+ch.Target+" "+quantityText(b.Value, "")+" → "+to)
		default:
			parts = append(parts, "set "+ch.Target+" "+quantityText(b.Value, b.Unit)+" → "+to)
		}
	}
	return strings.Join(parts, "; ")
}

// readingsText is a readback: "105.00 A", or "Q1 105.00 A; Q2 3.00 A".
func readingsText(rs []capabilities.Reading) string {
	if len(rs) == 1 {
		return quantityText(rs[0].Value, rs[0].Unit)
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.Target + " " + quantityText(r.Value, r.Unit)
	}
	return strings.Join(parts, "; ")
}

// targetsText names what a human should check.
func targetsText(r agent.AuditRecord) string {
	var ts []string
	for _, ch := range r.Changes {
		ts = append(ts, ch.Target)
	}
	if len(ts) == 0 {
		return "what " + nonEmptyText(r.Capability, "the step") + " acts on"
	}
	return strings.Join(ts, ", ")
}

func readingOf(rs []capabilities.Reading, target string) (capabilities.Reading, bool) {
	for _, r := range rs {
		if r.Target == target {
			return r, true
		}
	}
	return capabilities.Reading{}, false
}

// quantityText writes a value as an operator reads it: a number with two
// decimals (92.00) unless it is very large or small, then its unit.
func quantityText(v any, unit string) string {
	var s string
	switch x := v.(type) {
	case float64:
		s = numberText(x)
	case json.Number:
		if f, err := x.Float64(); err == nil {
			s = numberText(f)
		} else {
			s = x.String()
		}
	case int:
		s = numberText(float64(x))
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

func nonEmptyText(s, alt string) string {
	if strings.TrimSpace(s) == "" {
		return alt
	}
	return s
}
