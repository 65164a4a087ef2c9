package errornode

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/state"
)

// limitText says in words what a limit means, naming it as the
// configuration does (the router's limit names are the keys under limits:).
var limitText = map[string]string{
	router.LimitExecutionTime:    "the request ran out of time (" + router.LimitExecutionTime + ")",
	router.LimitNodeSteps:        "the request took too many steps (" + router.LimitNodeSteps + ")",
	router.LimitTokens:           "the request used up its token budget (" + router.LimitTokens + ")",
	router.LimitPlanning:         "no plan worked within the planning budget (" + router.LimitPlanning + ")",
	router.LimitReclassification: "no capability selection worked within the budget (" + router.LimitReclassification + ")",
	router.LimitAttempts:         "the operation kept failing after every allowed retry (" + router.LimitAttempts + ")",
}

// causeText describes decisions that carry no error of their own.
var causeText = map[router.Cause]string{
	router.CauseUnknownCapability: "the plan named a capability that does not exist",
	router.CauseStepFailed:        "a step failed for good",
	router.CauseStuck:             "the plan's remaining steps could not run (their dependencies never finished)",
	router.CauseTerminalNotDone:   "the final step finished without writing an answer",
}

// nodeWords names the infrastructure nodes in an operator's words.
var nodeWords = map[string]string{
	state.NodeTaskExtraction: "understanding the request",
	state.NodeClassifier:     "choosing the capabilities",
	state.NodeOrchestrator:   "planning",
	state.NodePlanApproval:   "the plan approval",
	state.NodeRespond:        "writing the answer",
	state.NodeClarify:        "asking a clarifying question",
}

// BuildReport builds the report of state s, deciding why the turn reached
// the error node with the router (a pure function, so it agrees with the
// decision that sent the turn here). sideEffects reports whether a
// capability acts on the outside world (nil: none is known to); done steps
// of such capabilities are reported as changes. The explanation is left
// empty: the node fills it.
func BuildReport(s state.State, rc router.Config, sideEffects func(capability string) bool, now time.Time) state.ErrorReport {
	return buildReport(s, router.Decide(s, rc), sideEffects, now)
}

// buildReport builds the report of state s, which decision d sent to the
// error node.
func buildReport(s state.State, d router.Decision, sideEffects func(capability string) bool, now time.Time) state.ErrorReport {
	t := s.Turn
	c := t.Control
	r := state.ErrorReport{Time: now, Asked: t.Input, Failure: state.ReportFailure{Step: -1, Limit: d.Limit}}
	if t.Task != nil && strings.TrimSpace(t.Task.Text) != "" {
		r.Asked = t.Task.Text
	}
	r.Details = state.ReportDetails{Cause: string(d.Cause), NodeSteps: c.NodeSteps, Tokens: c.Tokens,
		Plans: c.PlansCreated, Reclassifications: c.Reclassifications}
	if !t.StartedAt.IsZero() && now.After(t.StartedAt) {
		r.Details.Elapsed = now.Sub(t.StartedAt)
	}

	e := d.Error
	if e == nil {
		e = router.CurrentError(s)
	}
	f := &r.Failure
	if e != nil {
		r.Details.Classification, r.Details.Error = e.Classification, e.Message
		f.Node, f.Capability, f.Severity, f.Kind = e.Node, e.Capability, e.Classification.Severity, e.Classification.Kind
		f.Reason = e.Classification.UserMessage
		if f.Reason == "" {
			f.Reason = e.Message
		}
		if e.Attempt > 1 {
			f.Attempts = e.Attempt
		}
		if v, ok := e.Classification.Metadata[capabilities.MetaSafetyAbortReason]; ok {
			f.SafetyStop = oneLine(fmt.Sprint(v))
		}
		f.Operation = nodeWords[e.Node]
		if f.Operation == "" {
			f.Operation = e.Node
		}
		if e.StepIndex >= 0 {
			f.Step = e.StepIndex
			f.Operation = fmt.Sprintf("step %d", e.StepIndex+1)
			if t.Plan != nil && e.StepIndex < len(t.Plan.Steps) {
				f.Operation = stepLabel(e.StepIndex, t.Plan.Steps[e.StepIndex].TaskObjective)
			}
		}
	}
	if f.Severity == capabilities.SeverityUnset {
		f.Severity = capabilities.Critical
	}
	if strings.TrimSpace(f.Reason) == "" {
		f.Reason = limitText[d.Limit]
		if f.Reason == "" {
			f.Reason = causeText[d.Cause]
		}
		if f.Reason == "" {
			f.Reason = "the request could not be completed"
		}
	}
	if r.Details.Classification.Severity == capabilities.SeverityUnset {
		r.Details.Classification.Severity = f.Severity
		r.Details.Classification.UserMessage = f.Reason
	}
	if f.Operation == "" {
		f.Operation = "the request"
	}

	for _, rs := range c.Retries {
		r.Details.RetryAttempts += max(rs.Attempts-1, 0)
	}
	if t.Plan != nil {
		for _, st := range t.Plan.Steps {
			r.Details.RetryAttempts += max(st.Attempts-1, 0)
		}
	}
	r.Steps = reportSteps(s, e, sideEffects)
	r.Suggestions = suggestions(r)
	return r
}

// reportSteps lists what the turn did: every step that succeeded, in any
// plan of the turn (a change made under a replaced plan is still a
// change), then the current plan's steps that failed or were not carried
// out. Respond and clarify are left out.
func reportSteps(s state.State, e *state.ErrorInfo, sideEffects func(string) bool) []state.ReportStep {
	t := s.Turn
	acts := func(name string) bool { return sideEffects != nil && sideEffects(name) }
	done := func(i int, capability, objective string) state.ReportStep {
		return state.ReportStep{Step: i, Capability: capability, Objective: objective, Status: state.StepDone,
			Outcome: outcome(s, capability, objective), SideEffect: acts(capability)}
	}
	type key struct{ plan, step int }
	seen := map[key]bool{}
	var out []state.ReportStep
	for _, res := range t.Results {
		if !res.Success || terminal(res.Capability) {
			continue
		}
		seen[key{res.Plan, res.StepIndex}] = true
		out = append(out, done(res.StepIndex, res.Capability, res.TaskObjective))
	}
	if t.Plan == nil {
		return out
	}
	for i, st := range t.Plan.Steps {
		switch {
		case terminal(st.Effective()):
			continue
		case st.Status == state.StepDone:
			if !seen[key{t.Plan.Number, i}] {
				out = append(out, done(i, st.Effective(), st.TaskObjective))
			}
			continue
		}
		status := st.Status
		if st.Error != nil || (e != nil && e.StepIndex == i) {
			status = state.StepFailed
		}
		if status == "" {
			status = state.StepPending
		}
		out = append(out, state.ReportStep{Step: i, Capability: st.Effective(), Objective: st.TaskObjective, Status: status,
			SideEffect: acts(st.Effective())})
	}
	return out
}

func terminal(capability string) bool {
	return capability == state.NodeRespond || capability == state.NodeClarify
}

// outcome is what a successful step produced, from the summaries of the
// context entries it wrote this turn.
func outcome(s state.State, capability, objective string) string {
	var parts []string
	for _, ce := range s.Context.Entries() {
		if ce.Turn == s.Turn.Number && ce.Capability == capability && ce.TaskObjective == objective &&
			strings.TrimSpace(ce.Summary) != "" && !slices.Contains(parts, oneLine(ce.Summary)) {
			parts = append(parts, oneLine(ce.Summary))
		}
	}
	return strings.Join(parts, "; ")
}

// suggestions are what the user can do: a warning first when something
// was changed, then the failure's own suggestions, then advice by limit,
// kind and severity.
func suggestions(r state.ErrorReport) []string {
	var out []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(r.Changed()) > 0 {
		add("Check the current state of what was changed (listed above) before you ask again: repeating the request could make the change a second time.")
	}
	own := metaStrings(r.Details.Classification.Metadata[capabilities.MetaSuggestions])
	for _, s := range own {
		add(sentence(s))
	}
	f := r.Failure
	switch f.Limit {
	case router.LimitExecutionTime:
		add("Ask for less at once (fewer channels, a shorter time range), or try again when the systems answer faster.")
		add("An administrator can raise limits." + router.LimitExecutionTime + ".")
	case router.LimitNodeSteps:
		add("Split the request into smaller ones.")
	case router.LimitTokens:
		add("Ask a shorter question, or start a new conversation.")
		add("An administrator can raise limits." + router.LimitTokens + ".")
	case router.LimitPlanning:
		add("Rephrase the request, naming exactly what you need (a channel, a device, a time range).")
	case router.LimitReclassification:
		add("Rephrase the request, or ask what the assistant can do.")
	}
	switch f.Kind {
	case capabilities.KindAuth:
		add("Ask an administrator to check the access rights or credentials" + forCapability(f.Capability) + ".")
	case capabilities.KindWritesDisabled:
		if len(own) > 0 {
			break // the refusal says where the switch is
		}
		add("Writes to the control system are disabled; an operator can enable them (control_system.writes_enabled).")
	case capabilities.KindPanic, capabilities.KindUnknown:
		add("If it happens again, tell whoever maintains the assistant; the report's details say where it failed.")
	}
	switch f.Severity {
	case capabilities.Retriable:
		add("Try again in a few minutes.")
	case capabilities.Replanning, capabilities.Reclassification:
		// Unless a budget's advice above already says to rephrase.
		if !slices.ContainsFunc(out, func(s string) bool { return strings.HasPrefix(s, "Rephrase the request") }) {
			add("Rephrase the request, naming exactly what you need.")
		}
	}
	if len(out) == 0 || (len(out) == 1 && len(r.Changed()) > 0) {
		add("Try again, or rephrase the request.")
	}
	return out
}

func forCapability(c string) string {
	if c == "" {
		return ""
	}
	return " for " + c
}

// metaStrings reads a metadata value that is a string or a list of them
// (a list decoded from JSON is []any).
func metaStrings(v any) []string {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return []string{x}
	case []string:
		return x
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	return []string{fmt.Sprint(v)}
}

// sentence capitalises s and ends it with a full stop.
func sentence(s string) string {
	s = oneLine(s)
	if s == "" {
		return ""
	}
	if c := s[0]; c >= 'a' && c <= 'z' {
		s = string(c-'a'+'A') + s[1:]
	}
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "!") && !strings.HasSuffix(s, "?") {
		s += "."
	}
	return s
}

func stepLabel(i int, objective string) string {
	if strings.TrimSpace(objective) == "" {
		return fmt.Sprintf("step %d", i+1)
	}
	return fmt.Sprintf("step %d (%s)", i+1, oneLine(objective))
}

// severityWords says what a severity means to an operator.
func severityWords(f state.ReportFailure) string {
	switch f.Severity {
	case capabilities.Retriable:
		if f.Attempts > 1 {
			return fmt.Sprintf("It looked temporary, but it persisted through %d attempts", f.Attempts)
		}
		return "It looked temporary, but it could not be retried in time"
	case capabilities.Replanning:
		return "The plan could not work, and no other plan did"
	case capabilities.Reclassification:
		return "The capabilities chosen did not fit the request, and no other choice did"
	case capabilities.Fatal:
		return "The system had to stop"
	}
	return "It cannot be fixed automatically"
}

// Markdown renders the report for an operator: what was asked, what was
// done (changes first and in bold), what failed and why, what was not
// carried out, and what they can do. Details stay in the structured report.
func Markdown(r state.ErrorReport) string {
	var b strings.Builder
	b.WriteString("⚠️ **Your request could not be completed.**\n\n")
	fmt.Fprintf(&b, "**You asked:** %s\n\n", oneLine(r.Asked))

	var done, notDone []state.ReportStep
	for _, st := range r.Steps {
		if st.Status == state.StepDone {
			done = append(done, st)
		} else if st.Status != state.StepFailed || st.Step != r.Failure.Step {
			notDone = append(notDone, st)
		}
	}
	doubt := inDoubt(r)
	if len(done) == 0 && doubt != "" {
		fmt.Fprintf(&b, "**What was done:** %s\n\n", doubtText(r, doubt))
	} else if len(done) == 0 {
		b.WriteString("**What was done:** nothing — no step was completed.\n\n")
	} else {
		b.WriteString("**What was done:**\n")
		for _, st := range done {
			line := upper(stepLabel(st.Step, st.Objective))
			switch {
			case st.SideEffect && st.Outcome != "":
				line += ": **" + st.Outcome + "** — a change was made"
			case st.SideEffect:
				line += " — a change was made (" + st.Capability + ")"
			case st.Outcome != "":
				line += ": " + st.Outcome
			}
			b.WriteString("- " + line + "\n")
		}
		if doubt != "" {
			b.WriteString("- " + doubtText(r, doubt) + "\n")
		}
		b.WriteString("\n")
	}

	f := r.Failure
	if f.Node == "" {
		// No operation failed: a limit or the plan itself ended the request.
		fmt.Fprintf(&b, "**What failed:** %s (severity: %s).", strings.TrimSuffix(upper(oneLine(f.Reason)), "."), f.Severity)
	} else {
		fmt.Fprintf(&b, "**What failed:** %s: %s. %s (severity: %s).", upper(f.Operation), strings.TrimSuffix(oneLine(f.Reason), "."),
			severityWords(f), f.Severity)
	}
	if f.SafetyStop != "" {
		b.WriteString(" Stopped for safety: " + strings.TrimSuffix(f.SafetyStop, ".") + ".")
	}
	if f.Node == "" || f.Limit == router.LimitAttempts && f.Severity == capabilities.Retriable {
		// The severity's words already say every attempt failed.
	} else if l := limitText[f.Limit]; l != "" && l != f.Reason {
		b.WriteString(" The request stopped because " + l + ".")
	} else if f.Limit != "" && l == "" {
		b.WriteString(" The request stopped at the limit " + f.Limit + ".")
	}
	b.WriteString("\n\n")
	if r.ExplainedBy == state.ExplainedByModel && strings.TrimSpace(r.Explanation) != "" {
		fmt.Fprintf(&b, "**Explanation:** %s\n\n", strings.TrimSpace(r.Explanation))
	}
	if len(notDone) > 0 {
		b.WriteString("**Not carried out:**\n")
		for _, st := range notDone {
			line := upper(stepLabel(st.Step, st.Objective))
			if st.Status == state.StepFailed {
				line += " — also failed"
			}
			b.WriteString("- " + line + "\n")
		}
		b.WriteString("\n")
	}
	if len(r.Suggestions) > 0 {
		b.WriteString("**What you can do:**\n")
		for _, s := range r.Suggestions {
			b.WriteString("- " + s + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// Explain is the deterministic explanation, used when no model explains.
func Explain(r state.ErrorReport) string {
	f := r.Failure
	var why string
	switch {
	case f.Limit != "" && limitText[f.Limit] != "":
		why = "The request stopped because " + limitText[f.Limit] + "."
	case f.Limit != "":
		why = "The request stopped because the limit " + f.Limit + " was reached."
	case inDoubt(r) == capabilities.OutcomeUnconfirmed:
		// Instead of the severity's words: what the operator must do.
		why = "Whether the change was made is not known: check the machine before asking for it again."
	case inDoubt(r) == capabilities.OutcomeMismatch:
		why = "The machine does not read what was asked: check the machine before asking for it again."
	default:
		why = severityWords(f) + "."
	}
	s := fmt.Sprintf("%s failed: %s. %s", upper(f.Operation), strings.TrimSuffix(oneLine(f.Reason), "."), why)
	if f.Node == "" {
		s = why
		if f.Limit == "" {
			s = upper(strings.TrimSuffix(oneLine(f.Reason), ".")) + "."
		}
	}
	if ch := r.Changed(); len(ch) > 0 {
		s += fmt.Sprintf(" Before that, %d change(s) were made; see what was done above.", len(ch))
	}
	return s
}

// inDoubt is the outcome of a failed side-effecting step that may have
// changed the machine (mismatch, unconfirmed: the classification's
// capabilities.MetaOutcome), or "" for any other failure.
func inDoubt(r state.ErrorReport) capabilities.Outcome {
	o, _ := r.Details.Classification.Metadata[capabilities.MetaOutcome].(string)
	switch capabilities.Outcome(o) {
	case capabilities.OutcomeMismatch, capabilities.OutcomeUnconfirmed:
		return capabilities.Outcome(o)
	}
	return ""
}

// doubtText says what became of the failed step whose outcome is in doubt,
// for "What was done": never "nothing".
func doubtText(r state.ErrorReport, o capabilities.Outcome) string {
	what := upper(r.Failure.Operation)
	if o == capabilities.OutcomeMismatch {
		return what + " was carried out, but the machine does not read what was asked (**mismatch**)."
	}
	return what + " may or may not have changed the machine (**unconfirmed**)."
}

func upper(s string) string {
	if s != "" && s[0] >= 'a' && s[0] <= 'z' {
		return string(s[0]-'a'+'A') + s[1:]
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
