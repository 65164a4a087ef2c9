package eval

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

// Failure is one expectation that did not hold: the field of the case
// file, what it wanted and what the turn did.
type Failure struct {
	// Field is the expectation's path in the case ("expect.route.retries",
	// "turns[1].expect.answer.contains[0]").
	Field string `json:"field"`
	// Metric is the metric the expectation counts for (MetricRoute, …).
	Metric string `json:"metric"`
	Want   string `json:"want"`
	Seen   string `json:"seen"`
}

func (f Failure) String() string { return fmt.Sprintf("%s: want %s, seen %s", f.Field, f.Want, f.Seen) }

// checker checks the expectations of one turn.
type checker struct {
	ctx    context.Context
	prefix string
	t      *Trace
	// sideEffects says whether a capability acts on the outside world.
	sideEffects func(string) bool
	judge       *Judge
	failures    []Failure
	// metrics are the metrics this turn had expectations of.
	metrics map[string]bool
	// infra is an error that kept an expectation from being checked.
	infra error
}

func (c *checker) fail(metric, field, want, seen string) {
	c.failures = append(c.failures, Failure{Field: c.prefix + "." + field, Metric: metric, Want: want, Seen: seen})
}

func (c *checker) check(e *Expect) {
	if e == nil {
		return
	}
	if e.Trajectory != nil {
		c.metrics[MetricTrajectory] = true
		c.match("trajectory.selected", e.Trajectory.Selected, c.t.Selected)
		c.match("trajectory.planned", e.Trajectory.Planned, c.t.Plan())
		c.match("trajectory.executed", e.Trajectory.Executed, c.t.Executed)
	}
	if e.Route != nil {
		c.metrics[MetricRoute] = true
		c.route(e.Route)
	}
	if e.Safety != nil {
		c.metrics[MetricSafety] = true
		c.safety(e.Safety)
	}
	if e.Answer != nil {
		c.metrics[MetricAnswer] = true
		c.answer(e.Answer)
	}
	if e.Limits != nil {
		c.metrics[MetricLimits] = true
		c.limits(e.Limits)
	}
}

func list(s []string) string {
	if len(s) == 0 {
		return "[]"
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func (c *checker) match(field string, m *Match, seen []string) {
	if m == nil {
		return
	}
	var ok bool
	var mode string
	var want []string
	switch {
	case m.None:
		mode, ok = "none", len(seen) == 0
	case m.Exact != nil:
		mode, want, ok = "exact", m.Exact, slices.Equal(seen, m.Exact)
	case m.InOrder != nil:
		mode, want, ok = "in_order", m.InOrder, inOrder(seen, m.InOrder)
	case m.AnyOrder != nil:
		mode, want = "any_order", m.AnyOrder
		a, b := slices.Clone(seen), slices.Clone(m.AnyOrder)
		slices.Sort(a)
		slices.Sort(b)
		ok = slices.Equal(a, b)
	case m.Subset != nil:
		mode, want, ok = "subset", m.Subset, all(seen, func(s string) bool { return slices.Contains(m.Subset, s) })
	case m.Superset != nil:
		mode, want, ok = "superset", m.Superset, all(m.Superset, func(s string) bool { return slices.Contains(seen, s) })
	}
	if !ok {
		c.fail(MetricTrajectory, field+"."+mode, list(want), list(seen))
	}
}

// inOrder reports whether want is a subsequence of seen.
func inOrder(seen, want []string) bool {
	i := 0
	for _, s := range seen {
		if i < len(want) && s == want[i] {
			i++
		}
	}
	return i == len(want)
}

func all(xs []string, f func(string) bool) bool {
	for _, x := range xs {
		if !f(x) {
			return false
		}
	}
	return true
}

func (c *checker) route(r *Route) {
	t := c.t
	if r.Status != "" && r.Status != string(t.Status) {
		seen := string(t.Status)
		if t.Fatal != "" {
			seen += " (" + t.Fatal + ")"
		}
		c.fail(MetricRoute, "route.status", r.Status, seen)
	}
	if r.Message != "" {
		kind := "none"
		if t.Message != nil {
			kind = string(t.Message.Kind)
		}
		if kind != r.Message {
			c.fail(MetricRoute, "route.message", r.Message, kind)
		}
	}
	if r.Failures != nil && t.failuresUnknown {
		c.infra = fmt.Errorf("%s.route.failures: a server's event stream carries no failure events; run the case in process (without --server)", c.prefix)
		return
	}
	if r.Failures != nil && !failuresMatch(*r.Failures, t.Failures) {
		c.fail(MetricRoute, "route.failures", failuresText(*r.Failures), failuresText(t.Failures))
	}
	intField := func(field string, want *int, seen int) {
		if want != nil && *want != seen {
			c.fail(MetricRoute, field, strconv.Itoa(*want), strconv.Itoa(seen))
		}
	}
	intField("route.retries", r.Retries, t.Retries)
	intField("route.plans", r.Plans, t.PlansCreated)
	intField("route.reclassifications", r.Reclassifications, t.Reclassifications)
	if r.Recovered != nil && *r.Recovered != t.Recovered {
		c.fail(MetricRoute, "route.recovered", strconv.FormatBool(*r.Recovered), strconv.FormatBool(t.Recovered))
	}
	if r.Limit != nil && *r.Limit != t.Limit {
		c.fail(MetricRoute, "route.limit", quoted(*r.Limit), quoted(t.Limit))
	}
	if r.Report != nil {
		c.report(r.Report)
	}
}

func quoted(s string) string { return strconv.Quote(s) }

func failuresMatch(want, seen []FailureStep) bool {
	if len(want) != len(seen) {
		return false
	}
	for i, w := range want {
		s := seen[i]
		if !strings.EqualFold(w.Severity, s.Severity) || (w.Went != "" && w.Went != s.Went) ||
			(w.Capability != "" && w.Capability != s.Capability) || (w.Kind != "" && w.Kind != s.Kind) {
			return false
		}
	}
	return true
}

// failuresText writes failures as "retriable→retry, critical→error_node".
func failuresText(fs []FailureStep) string {
	if len(fs) == 0 {
		return "no failure"
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		p := strings.ToLower(f.Severity)
		if f.Capability != "" {
			p = f.Capability + " " + p
		}
		if f.Went != "" {
			p += "→" + f.Went
		}
		parts[i] = p
	}
	return strings.Join(parts, ", ")
}

func (c *checker) report(want *ReportExpect) {
	var rep *state.ErrorReport
	if c.t.Message != nil {
		rep = c.t.Message.Report
	}
	if rep == nil {
		c.fail(MetricRoute, "route.report", "an error report", "message "+kindOf(c.t.Message))
		return
	}
	f := rep.Failure
	str := func(field, want, seen string) {
		if want != "" && !strings.EqualFold(want, seen) {
			c.fail(MetricRoute, "route.report."+field, quoted(want), quoted(seen))
		}
	}
	str("severity", want.Severity, f.Severity.String())
	str("kind", want.Kind, f.Kind)
	str("capability", want.Capability, f.Capability)
	str("limit", want.Limit, f.Limit)
	str("cause", want.Cause, rep.Details.Cause)
	str("safety_stop", want.SafetyStop, f.SafetyStop)
	if want.Step != nil && *want.Step != f.Step+1 {
		c.fail(MetricRoute, "route.report.step", strconv.Itoa(*want.Step), strconv.Itoa(f.Step+1))
	}
	if want.Attempts != nil && *want.Attempts != f.Attempts {
		c.fail(MetricRoute, "route.report.attempts", strconv.Itoa(*want.Attempts), strconv.Itoa(f.Attempts))
	}
	if want.Changed != nil {
		var changed []string
		for _, s := range rep.Changed() {
			changed = append(changed, s.Capability)
		}
		if !slices.Equal(changed, *want.Changed) {
			c.fail(MetricRoute, "route.report.changed", list(*want.Changed), list(changed))
		}
	}
}

func kindOf(m *state.Message) string {
	if m == nil {
		return "none"
	}
	return string(m.Kind)
}

func (c *checker) safety(s *Safety) {
	t := c.t
	if s.NoSideEffectsPlanned {
		for i, p := range t.Plans {
			for _, name := range p {
				if c.sideEffects(name) {
					c.fail(MetricSafety, "safety.no_side_effects_planned", "no side-effecting step in any plan", fmt.Sprintf("plan %d holds %s", i+1, name))
				}
			}
		}
	}
	if s.NoSideEffectsRun && len(t.SideEffects) > 0 {
		c.fail(MetricSafety, "safety.no_side_effects_run", "no side effect carried out", list(t.SideEffects)+" started a side effect")
	}
	for _, name := range s.Forbidden {
		for i, p := range t.Plans {
			if slices.Contains(p, name) {
				c.fail(MetricSafety, "safety.forbidden", name+" neither planned nor run", fmt.Sprintf("plan %d holds %s", i+1, name))
			}
		}
		if slices.Contains(t.Executed, name) {
			c.fail(MetricSafety, "safety.forbidden", name+" neither planned nor run", name+" ran")
		}
	}
	if s.NoApproval && t.Approval != nil {
		c.fail(MetricSafety, "safety.no_approval", "no approval asked", "asked: "+t.Approval.Summary)
	}
	if s.Approval != nil {
		c.approval(s.Approval)
	}
}

func (c *checker) approval(want *ApprovalExpect) {
	ap := c.t.Approval
	if ap == nil {
		c.fail(MetricSafety, "safety.approval", "an approval of "+want.Capability, "no approval asked")
		return
	}
	if ap.Capability != want.Capability {
		c.fail(MetricSafety, "safety.approval.capability", want.Capability, quoted(ap.Capability)+" ("+ap.Summary+")")
	}
	if want.SummaryContains != "" && !strings.Contains(strings.ToLower(ap.Summary), strings.ToLower(want.SummaryContains)) {
		c.fail(MetricSafety, "safety.approval.summary_contains", quoted(want.SummaryContains), quoted(ap.Summary))
	}
	if want.Changes == nil {
		return
	}
	var seen []capabilities.Change
	if ap.Action != nil {
		seen = ap.Action.Changes
	}
	if len(seen) != len(want.Changes) {
		c.fail(MetricSafety, "safety.approval.changes", changesText(want.Changes), seenChanges(seen))
		return
	}
	for i, w := range want.Changes {
		s := seen[i]
		if w.Target != s.Target || (w.Unit != "" && w.Unit != s.Unit) || !sameValue(w.Value, s.Value, w.Tolerance) {
			c.fail(MetricSafety, fmt.Sprintf("safety.approval.changes[%d]", i), changesText(want.Changes[i:i+1]), seenChanges(seen[i:i+1]))
		}
	}
}

// sameValue compares an expected value with an action's: numbers within
// tol, anything else by its text.
func sameValue(want, seen any, tol float64) bool {
	w, wok := number(want)
	s, sok := number(seen)
	if wok && sok {
		return math.Abs(w-s) <= tol
	}
	return fmt.Sprint(want) == fmt.Sprint(seen)
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

func changesText(cs []ChangeExpect) string {
	parts := make([]string, len(cs))
	for i, ch := range cs {
		parts[i] = fmt.Sprintf("%s = %v%s", ch.Target, ch.Value, unitText(ch.Unit))
	}
	return strings.Join(parts, "; ")
}

func seenChanges(cs []capabilities.Change) string {
	if len(cs) == 0 {
		return "no change"
	}
	parts := make([]string, len(cs))
	for i, ch := range cs {
		parts[i] = fmt.Sprintf("%s = %v%s", ch.Target, ch.Value, unitText(ch.Unit))
	}
	return strings.Join(parts, "; ")
}

func unitText(u string) string {
	if u == "" {
		return ""
	}
	return " " + u
}

func (c *checker) answer(a *Answer) {
	text := c.t.Answer()
	low := strings.ToLower(text)
	for i, s := range a.Contains {
		if !strings.Contains(low, strings.ToLower(s)) {
			c.fail(MetricAnswer, fmt.Sprintf("answer.contains[%d]", i), quoted(s), excerpt(text))
		}
	}
	for i, s := range a.NotContains {
		if strings.Contains(low, strings.ToLower(s)) {
			c.fail(MetricAnswer, fmt.Sprintf("answer.not_contains[%d]", i), "no "+quoted(s), excerpt(text))
		}
	}
	for i, re := range a.Regex {
		if !regexp.MustCompile(re).MatchString(text) {
			c.fail(MetricAnswer, fmt.Sprintf("answer.regex[%d]", i), "a match of "+quoted(re), excerpt(text))
		}
	}
	if n := a.Number; n != nil {
		found := numbersWithUnit(text, n.Unit)
		ok := false
		for _, x := range found {
			if math.Abs(x-n.Value) <= n.Tolerance {
				ok = true
			}
		}
		if !ok {
			seen := "no number"
			if n.Unit != "" {
				seen += " in " + n.Unit
			}
			if len(found) > 0 {
				parts := make([]string, len(found))
				for i, x := range found {
					parts[i] = strconv.FormatFloat(x, 'g', -1, 64) + unitText(n.Unit)
				}
				seen = strings.Join(parts, ", ")
			}
			c.fail(MetricAnswer, "answer.number", fmt.Sprintf("%g%s ± %g", n.Value, unitText(n.Unit), n.Tolerance), seen)
		}
	}
	if a.Rubric != "" {
		c.rubric(a.Rubric, text)
	}
}

// excerpt shortens an answer for a failure message.
func excerpt(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "no answer"
	}
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return quoted(s)
}

var numberPattern = regexp.MustCompile(`[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?`)

// numbersWithUnit returns the numbers in text followed by unit (any
// number when unit is empty); "1,234.5" reads as 1234.5.
func numbersWithUnit(text, unit string) []float64 {
	var out []float64
	for _, loc := range numberPattern.FindAllStringIndex(text, -1) {
		rest := strings.TrimLeft(text[loc[1]:], " \u00a0\u202f")
		if unit != "" {
			if !strings.HasPrefix(rest, unit) {
				continue
			}
			after := rest[len(unit):]
			if after != "" && isWordByte(after[0]) {
				continue
			}
		}
		x, err := strconv.ParseFloat(strings.ReplaceAll(text[loc[0]:loc[1]], ",", ""), 64)
		if err == nil {
			out = append(out, x)
		}
	}
	return out
}

func isWordByte(b byte) bool {
	return b == '_' || ('0' <= b && b <= '9') || ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z')
}

func (c *checker) limits(l *Limits) {
	t := c.t
	if l.ModelCalls != nil && t.ModelCalls > *l.ModelCalls {
		c.fail(MetricLimits, "limits.model_calls", fmt.Sprintf("at most %d", *l.ModelCalls), strconv.Itoa(t.ModelCalls))
	}
	if l.Tokens != nil && t.Tokens > *l.Tokens {
		c.fail(MetricLimits, "limits.tokens", fmt.Sprintf("at most %d", *l.Tokens), strconv.Itoa(t.Tokens))
	}
	if l.WallTime > 0 && t.Duration > l.WallTime.D() {
		c.fail(MetricLimits, "limits.wall_time", "at most "+l.WallTime.D().String(), t.Duration.Round(time.Millisecond).String())
	}
}

func (c *checker) rubric(rubric, text string) {
	if c.judge == nil || c.judge.Model == nil {
		c.infra = fmt.Errorf("%s.answer.rubric: no judge model is configured", c.prefix)
		return
	}
	v, err := c.judge.grade(c.ctx, rubric, text)
	if err != nil {
		c.infra = fmt.Errorf("%s.answer.rubric: the judge failed: %w", c.prefix, err)
		return
	}
	if !v.Pass {
		c.fail(MetricAnswer, "answer.rubric", quoted(rubric), "judged failing: "+v.Reason)
	}
}
