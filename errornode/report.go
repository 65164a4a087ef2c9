package errornode

import (
	"fmt"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/state"
)

// Report is the structured part of an error report, built from the state
// alone so it is the same whether or not a model explains it.
type Report struct {
	Time            time.Time
	Severity        capabilities.Severity
	Task            string
	FailedOperation string
	Capability      string
	// Classification of the failure (its FormatForLLM block is the details).
	Classification capabilities.Classification
	// Cause is why the router sent the turn here; Limit names an exhausted limit or budget.
	Cause router.Cause
	Limit string
	// Execution statistics.
	Operations    int
	Elapsed       time.Duration
	RetryAttempts int
	Completed     []string
	Failed        []string
}

// limitText says in words what a limit means.
var limitText = map[string]string{
	router.LimitExecutionTime:    "the turn ran out of time (max_execution_time)",
	router.LimitNodeSteps:        "the turn took too many steps (max_node_steps)",
	router.LimitTokens:           "the turn used up its token budget (max_tokens)",
	router.LimitPlanning:         "no plan worked within the planning budget (max_planning_attempts)",
	router.LimitReclassification: "no capability selection worked within the budget (max_reclassifications)",
	router.LimitAttempts:         "the operation kept failing after every allowed retry (max_attempts)",
}

// causeText describes decisions that carry no error of their own.
var causeText = map[router.Cause]string{
	router.CauseUnknownCapability: "the plan named a capability that does not exist",
	router.CauseStepFailed:        "a step failed for good",
	router.CauseStuck:             "the plan's remaining steps could not run (their dependencies never finished)",
	router.CauseTerminalNotDone:   "the final step finished without writing an answer",
}

// BuildReport builds the report for state s, deciding why the turn reached
// the error node with the router (a pure function, so it agrees with the
// decision that sent the turn here).
func BuildReport(s state.State, rc router.Config, now time.Time) Report {
	d := router.Decide(s, rc)
	t := s.Turn
	r := Report{Time: now, Cause: d.Cause, Limit: d.Limit}
	if t.Task != nil {
		r.Task = t.Task.Text
	} else {
		r.Task = t.Input
	}
	if !t.StartedAt.IsZero() && now.After(t.StartedAt) {
		r.Elapsed = now.Sub(t.StartedAt)
	}
	e := d.Error
	if e == nil {
		e = router.CurrentError(s)
	}
	if e != nil {
		r.Classification = e.Classification
		r.Severity = e.Classification.Severity
		r.FailedOperation = e.Node
		r.Capability = e.Capability
		if e.StepIndex >= 0 && t.Plan != nil && e.StepIndex < len(t.Plan.Steps) {
			r.FailedOperation = fmt.Sprintf("step %d: %s", e.StepIndex+1, t.Plan.Steps[e.StepIndex].TaskObjective)
		}
	}
	if r.Severity == capabilities.SeverityUnset {
		r.Severity = capabilities.Critical
	}
	if r.Classification.UserMessage == "" {
		msg := limitText[d.Limit]
		if msg == "" {
			msg = causeText[d.Cause]
		}
		if msg == "" {
			msg = "the request could not be completed"
		}
		r.Classification.Severity = r.Severity
		r.Classification.UserMessage = msg
	}
	if r.FailedOperation == "" {
		r.FailedOperation = "turn"
	}
	r.Operations = t.Control.NodeSteps
	for _, rs := range t.Control.Retries {
		if rs.Attempts > 1 {
			r.RetryAttempts += rs.Attempts - 1
		}
	}
	if t.Plan != nil {
		for i, st := range t.Plan.Steps {
			if st.Attempts > 1 {
				r.RetryAttempts += st.Attempts - 1
			}
			label := fmt.Sprintf("Step %d: %s", i+1, st.TaskObjective)
			switch {
			case st.Status == state.StepDone:
				r.Completed = append(r.Completed, label)
			case st.Status == state.StepFailed || st.Error != nil || (e != nil && e.StepIndex == i):
				r.Failed = append(r.Failed, label)
			}
		}
	}
	return r
}

// Markdown renders the report.
func (r Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "⚠️ **ERROR REPORT** - %s\n\n", r.Time.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "**Error Severity:** %s\n", strings.ToUpper(r.Severity.String()))
	fmt.Fprintf(&b, "**Task:** %s\n", oneLine(r.Task))
	fmt.Fprintf(&b, "**Failed Operation:** %s\n", oneLine(r.FailedOperation))
	if r.Capability != "" {
		fmt.Fprintf(&b, "**Capability:** %s\n", r.Capability)
	}
	if r.Limit != "" {
		fmt.Fprintf(&b, "**Limit Exceeded:** %s\n", r.Limit)
	}
	b.WriteString("\n")
	b.WriteString(r.Classification.FormatForLLM())
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "**Execution Stats:** Total operations: %d, Execution time: %.1fs", r.Operations, r.Elapsed.Seconds())
	if r.RetryAttempts > 0 {
		fmt.Fprintf(&b, ", Retry attempts: %d", r.RetryAttempts)
	}
	b.WriteString("\n")
	if len(r.Completed)+len(r.Failed) > 0 {
		b.WriteString("\n**Execution Summary:**\n")
		for _, c := range r.Completed {
			fmt.Fprintf(&b, "✅ %s\n", oneLine(c))
		}
		for _, f := range r.Failed {
			fmt.Fprintf(&b, "❌ %s\n", oneLine(f))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// Explain is the deterministic explanation used when no model explains.
func (r Report) Explain() string {
	what := r.Classification.UserMessage
	var why string
	switch {
	case r.Limit != "":
		why = "The request stopped because " + limitText[r.Limit] + "."
		if limitText[r.Limit] == "" {
			why = "The request stopped because the limit " + r.Limit + " was reached."
		}
	case r.Severity == capabilities.Retriable:
		why = "The failure looked temporary, but it persisted through every allowed retry."
	case r.Severity == capabilities.Replanning:
		why = "The agent tried other plans, but none could complete the task."
	case r.Severity == capabilities.Reclassification:
		why = "The agent tried selecting other capabilities, but none fit the task."
	default:
		why = "This kind of failure cannot be recovered from automatically."
	}
	op := r.FailedOperation
	if r.Capability != "" {
		op = r.Capability
	}
	s := fmt.Sprintf("%s failed: %s. %s", op, strings.TrimSuffix(oneLine(what), "."), why)
	if sug, ok := r.Classification.Metadata[capabilities.MetaSuggestions]; ok {
		s += fmt.Sprintf(" Suggestion: %v.", strings.TrimSuffix(fmt.Sprint(sug), "."))
	} else {
		s += " You can try again, rephrase the request, or ask an operator to check the system."
	}
	return s
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 500 {
		cut := 500
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
