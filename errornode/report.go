package errornode

import (
	"encoding/json"
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
		f.MaxAttempts = e.Policy.MaxAttempts
		if v, ok := e.Classification.Metadata[capabilities.MetaSafetyAbortReason]; ok {
			f.SafetyStop = oneLine(fmt.Sprint(v))
		}
		f.Operation = nodeWords[e.Node]
		if f.Operation == "" {
			f.Operation = e.Node
		}
		if e.StepIndex >= 0 {
			f.Step = e.StepIndex
			f.Operation = stepLabel(e.StepIndex, "", e.Capability)
			if t.Plan != nil && e.StepIndex < len(t.Plan.Steps) {
				f.Operation = stepLabel(e.StepIndex, objectiveWords(t.Plan.Steps[e.StepIndex].TaskObjective, r.Asked), e.Capability)
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
	r.Steps = reportSteps(s, e, sideEffects, r.Asked)
	r.Suggestions = suggestions(r)
	return r
}

// reportSteps lists what the turn did: every step that succeeded, in any
// plan of the turn (a change made under a replaced plan is still a
// change), then the current plan's steps that failed or were not carried
// out. Respond and clarify are left out.
func reportSteps(s state.State, e *state.ErrorInfo, sideEffects func(string) bool, asked string) []state.ReportStep {
	t := s.Turn
	acts := func(name string) bool { return sideEffects != nil && sideEffects(name) }
	done := func(i int, capability, objective string) state.ReportStep {
		return state.ReportStep{Step: i, Capability: capability, Objective: objectiveWords(objective, asked), Status: state.StepDone,
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
		failure := st.Error
		if failure == nil && e != nil && e.StepIndex == i {
			failure = e
		}
		if failure != nil {
			status = state.StepFailed
		}
		if status == "" {
			status = state.StepPending
		}
		rs := state.ReportStep{Step: i, Capability: st.Effective(), Objective: objectiveWords(st.TaskObjective, asked), Status: status,
			SideEffect: acts(st.Effective())}
		if failure != nil {
			rs.Attempts, rs.MaxAttempts = max(failure.Attempt, st.Attempts), failure.Policy.MaxAttempts
			rs.Error = oneLine(failure.Classification.UserMessage)
			if rs.Error == "" {
				rs.Error = oneLine(failure.Message)
			}
		}
		out = append(out, rs)
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
	kindAdvice := false
	if len(own) == 0 {
		// The capability gave no advice: advice by the kind of failure.
		if a := adviceByKind(f); a != "" {
			add(a)
			kindAdvice = true
		}
	}
	switch f.Kind {
	case capabilities.KindAuth:
		if len(own) > 0 {
			add("Ask an administrator to check the access rights or credentials" + forCapability(f.Capability) + ".")
		}
	case capabilities.KindWritesDisabled:
		if len(own) > 0 {
			break // the refusal says where the switch is
		}
		add("Changes to the machine are switched off; an operator can switch them on (control_system.writes_enabled).")
	case capabilities.KindPanic, capabilities.KindUnknown:
		add("If it happens again, tell whoever maintains the assistant; the technical report below says where it failed.")
	}
	switch f.Severity {
	case capabilities.Retriable:
		if !kindAdvice {
			add("Try again in a few minutes.")
		}
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

// adviceByKind is what an operator can do about a failure of that kind
// when the capability says nothing itself ("" for kinds with no advice of
// their own).
func adviceByKind(f state.ReportFailure) string {
	const system = "the system the step asks"
	switch f.Kind {
	case capabilities.KindTimeout:
		return "Check that " + system + " is running and not overloaded, then try again in a few minutes."
	case capabilities.KindConnection:
		return "Check that " + system + " is up and reachable from the assistant (network, address), then try again."
	case capabilities.KindNotFound:
		return "Ask what exists (for example \"which channels measure the vacuum?\"), then ask again with one of those names."
	case capabilities.KindAuth:
		return "Ask an administrator to check the access rights or credentials" + forCapability(f.Capability) + "."
	case capabilities.KindRateLimit:
		return "Wait a minute before asking again: the service limits how often it may be asked."
	case capabilities.KindQuota, capabilities.KindResourceExhausted:
		return "Wait until the quota or resource is available again, or ask an administrator to raise it."
	case capabilities.KindLimitViolation:
		return "Ask for a value within the allowed range (ask for the limits if you do not know them)."
	case capabilities.KindServerError:
		return "Try again later; if it keeps failing, tell whoever runs " + system + "."
	case capabilities.KindInvalidInput, capabilities.KindFormat:
		return "Rephrase the request, naming exactly what you need (a channel, a device, a time range)."
	}
	return ""
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

// stepLabel names a step for people: "step 2 (read the beam current)",
// by its objective, else by its capability in words ("step 2 (channel
// read)").
func stepLabel(i int, objective, capability string) string {
	what := oneLine(objective)
	if what == "" {
		what = strings.ReplaceAll(capability, "_", " ")
	}
	if what == "" {
		return fmt.Sprintf("step %d", i+1)
	}
	return fmt.Sprintf("step %d (%s)", i+1, what)
}

// objectiveWords is a step's objective without the words that repeat what
// was asked: an offline plan's objectives are the task itself ("What is
// the beam current?") or wrap it ("Find the channel names for: What is the
// beam current?"), and the report says what was asked once.
func objectiveWords(objective, asked string) string {
	obj, ask := oneLine(objective), oneLine(asked)
	if ask == "" || obj == "" {
		return obj
	}
	i := strings.Index(strings.ToLower(obj), strings.ToLower(ask))
	if i < 0 {
		return obj
	}
	rest := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(obj[:i]+obj[i+len(ask):]), ":—-–,; "))
	// "Find the channel names for" → "Find the channel names".
	for _, w := range []string{" for", " about", " of", " in"} {
		if strings.HasSuffix(strings.ToLower(rest), w) {
			rest = strings.TrimSpace(rest[:len(rest)-len(w)])
		}
	}
	return rest
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

// Markdown renders the report for every frontend that shows text (Chat
// Completions, Responses, MCP, the terminal). First the operator's part:
// what was asked (once), what was done (changes first and in bold), what
// failed and why, what was not carried out, what they can do, and the
// explanation ("Analysis": the model's, or the deterministic one). Then the
// technical report, folded in a <details> block (Open WebUI and LibreChat
// render it folded): error type, failed operation, capability, error
// message, cause, execution statistics, successful and failed steps, and
// the classification's metadata as JSON. The message's Content is exactly
// this; the structured report (Message.Report) carries the same fields.
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
			line := upper(stepLabel(st.Step, st.Objective, st.Capability))
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
	if len(notDone) > 0 {
		b.WriteString("**Not carried out:**\n")
		for _, st := range notDone {
			b.WriteString("- " + upper(stepLabel(st.Step, st.Objective, st.Capability)) + notDoneWords(st) + "\n")
		}
		b.WriteString("\n")
	}
	if len(r.Suggestions) > 0 {
		b.WriteString("**What you can do:**\n")
		for _, s := range r.Suggestions {
			b.WriteString("- " + s + "\n")
		}
		b.WriteString("\n")
	}
	if ex := strings.TrimSpace(r.Explanation); ex != "" {
		fmt.Fprintf(&b, "**Analysis:** %s\n\n", ex)
	}
	b.WriteString(Technical(r))
	return strings.TrimRight(b.String(), "\n")
}

// TechnicalSummary is the summary line of the folded technical report.
const TechnicalSummary = "Technical report"

// Technical renders the technical report folded in a <details> block: the
// facts a developer or a support engineer needs, which the operator's part
// leaves out.
func Technical(r state.ErrorReport) string {
	f, d := r.Failure, r.Details
	var b strings.Builder
	b.WriteString("<details>\n<summary>" + TechnicalSummary + "</summary>\n\n")
	field := func(name, value string) {
		if value = strings.TrimSpace(value); value != "" {
			fmt.Fprintf(&b, "- **%s:** %s\n", name, value)
		}
	}
	kind := f.Kind
	switch {
	case kind == "" && f.Limit != "":
		kind = "limit"
	case kind == "":
		kind = capabilities.KindUnknown
	}
	field("Error type", code(kind)+" (severity "+code(f.Severity.String())+")")
	field("Failed operation", htmlSafe(f.Operation))
	if f.Node != "" && f.Node != f.Capability {
		field("Node", code(f.Node))
	}
	if f.Capability != "" {
		field("Capability", code(f.Capability))
	}
	field("Error message", code(d.Error))
	cause := code(d.Cause)
	if f.Limit != "" {
		cause += ", limit " + code(f.Limit)
	}
	field("Cause", cause)
	stats := []string{plural(d.NodeSteps, "node step"), plural(d.Plans, "plan"), plural(d.Reclassifications, "reclassification"),
		plural(d.RetryAttempts, "retry", "retries"), plural(d.Tokens, "token")}
	if f.Attempts > 0 {
		stats = append([]string{attemptsText(f.Attempts, f.MaxAttempts)}, stats...)
	}
	if d.Elapsed > 0 {
		stats = append(stats, d.Elapsed.Round(time.Millisecond).String())
	}
	field("Execution statistics", strings.Join(stats, ", "))
	var ok, failed []string
	for _, st := range r.Steps {
		label := fmt.Sprintf("step %d (%s)", st.Step+1, code(st.Capability))
		switch st.Status {
		case state.StepDone:
			ok = append(ok, label)
		case state.StepFailed:
			if st.Attempts > 0 {
				label += ", " + attemptsText(st.Attempts, st.MaxAttempts)
			}
			failed = append(failed, label)
		}
	}
	if len(ok) == 0 {
		ok = []string{"none"}
	}
	field("Successful steps", strings.Join(ok, "; "))
	field("Failed steps", strings.Join(failed, "; "))
	field("Explained by", r.ExplainedBy)
	if md := d.Classification.Metadata; len(md) > 0 {
		// json.Marshal escapes <, > and &: nothing in it can close the block.
		if raw, err := json.MarshalIndent(md, "", "  "); err == nil {
			b.WriteString("\n**Metadata:**\n\n```json\n" + string(raw) + "\n```\n")
		}
	}
	b.WriteString("\n</details>\n")
	return b.String()
}

// notDoneWords says what became of a step that was not carried out: a
// step stopped after an attempt its policy would have repeated is not
// "failed" for good.
func notDoneWords(st state.ReportStep) string {
	switch st.Status {
	case state.StepFailed:
		if st.MaxAttempts > st.Attempts && st.Attempts > 0 {
			return fmt.Sprintf(" — %s failed; it was not tried again, because the request stopped", attemptsText(st.Attempts, st.MaxAttempts))
		}
		if st.Attempts > 1 {
			return fmt.Sprintf(" — failed too, on all %d attempts", st.Attempts)
		}
		return " — failed too"
	case state.StepSkipped:
		return " — skipped"
	case state.StepRejected:
		return " — rejected"
	}
	return ""
}

// attemptsText: "attempt 1 of 4", "3 attempts".
func attemptsText(n, max int) string {
	if max > 0 && n <= max {
		return fmt.Sprintf("attempt %d of %d", n, max)
	}
	return plural(n, "attempt")
}

func plural(n int, one string, many ...string) string {
	if n == 1 {
		return "1 " + one
	}
	if len(many) > 0 {
		return fmt.Sprintf("%d %s", n, many[0])
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// code renders text as inline code: one line, no backtick inside.
func code(s string) string {
	s = strings.ReplaceAll(oneLine(s), "`", "'")
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}

// htmlSafe keeps text from opening or closing HTML inside the <details>
// block.
func htmlSafe(s string) string {
	return strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(oneLine(s))
}

// Explain is the deterministic explanation, used when no model explains.
// It adds what the report's lines do not say: what a failure of that kind
// means, what recovery was tried before the report, and whether asking
// again is safe.
func Explain(r state.ErrorReport) string {
	f := r.Failure
	var parts []string
	switch inDoubt(r) {
	case capabilities.OutcomeUnconfirmed:
		parts = append(parts, "Whether the change was made is not known: check the machine before asking for it again.")
	case capabilities.OutcomeMismatch:
		parts = append(parts, "The machine does not read what was asked: check the machine before asking for it again.")
	}
	if m := kindMeaning[f.Kind]; m != "" && inDoubt(r) == "" {
		parts = append(parts, m)
	}
	if tried := recoveryTried(r); tried != "" {
		parts = append(parts, tried)
	}
	switch ch := r.Changed(); {
	case len(ch) > 0:
		parts = append(parts, fmt.Sprintf("Before that, %s made: asking again would make %s again.", plural(len(ch), "change was", "changes were"), map[bool]string{true: "it", false: "them"}[len(ch) == 1]))
	case inDoubt(r) == "" && f.Kind != capabilities.KindWritesDisabled:
		parts = append(parts, "Nothing was changed, so asking again is safe.")
	}
	return strings.Join(parts, " ")
}

// kindMeaning says what a failure of each kind means, beyond its message.
var kindMeaning = map[string]string{
	capabilities.KindTimeout:           "A timeout means the system did not answer within the time allowed: it is busy, stuck or down, and another wording of the request would not change that.",
	capabilities.KindConnection:        "The system could not be reached at all: it is down, or the network path to it is broken.",
	capabilities.KindNotFound:          "What the step looked for does not exist under that name, so trying again unchanged cannot find it.",
	capabilities.KindAuth:              "The system refused the assistant's credentials or access: the request itself is fine, the access is not.",
	capabilities.KindRateLimit:         "The service refuses more requests for a while (a rate limit); it accepts them again after a pause.",
	capabilities.KindQuota:             "A quota of the service is used up; it comes back when the quota resets or is raised.",
	capabilities.KindResourceExhausted: "A resource the step needs (memory, disk, a budget) is used up; retrying at once would fail the same way.",
	capabilities.KindLimitViolation:    "The value is outside what the system accepts, so it was refused before anything was written.",
	capabilities.KindWritesDisabled:    "Changes to the machine are switched off in this assistant's configuration, so nothing was written.",
	capabilities.KindServerError:       "The service failed on its own side; the request was not the problem.",
	capabilities.KindInvalidInput:      "The step could not use what it was given: the request did not name what it needs clearly enough.",
	capabilities.KindFormat:            "A reply came back in a shape the assistant could not read.",
	capabilities.KindPanic:             "The capability crashed: a defect in its code, not in the request.",
	capabilities.KindRejected:          "A human declined the step, so it was not carried out.",
}

// recoveryTried says what the framework did before giving up, from the
// counters the report's lines leave out.
func recoveryTried(r state.ErrorReport) string {
	f, d := r.Failure, r.Details
	switch f.Limit {
	case router.LimitAttempts:
		if f.Attempts > 1 {
			if f.MaxAttempts == f.Attempts {
				return fmt.Sprintf("It was tried %d times, the most its retry policy allows, waiting longer before each retry.", f.Attempts)
			}
			return fmt.Sprintf("It was tried %d times before the retries ran out.", f.Attempts)
		}
		return "The request stopped because " + limitText[f.Limit] + "."
	case router.LimitPlanning:
		return fmt.Sprintf("%s made, each with a different approach, and the planning budget (%s) allows no more.", plural(d.Plans, "plan was", "plans were"), router.LimitPlanning)
	case router.LimitReclassification:
		return fmt.Sprintf("The capabilities were chosen again %s, and the budget (%s) allows no more.", plural(d.Reclassifications, "time"), router.LimitReclassification)
	case router.LimitExecutionTime, router.LimitTokens, router.LimitNodeSteps:
		return fmt.Sprintf("The request stopped because %s: by then it had taken %s and used %s in %s.", limitText[f.Limit],
			plural(d.NodeSteps, "step"), plural(d.Tokens, "model token"), d.Elapsed.Round(time.Millisecond))
	case "":
	default:
		return "The request stopped because the limit " + f.Limit + " was reached."
	}
	switch {
	case f.Node == "":
	case f.Severity == capabilities.Critical || f.Severity == capabilities.Fatal:
		return "It was not retried: a failure of this kind does not go away by trying again."
	case f.Attempts > 1:
		return fmt.Sprintf("It was tried %d times.", f.Attempts)
	}
	return ""
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
