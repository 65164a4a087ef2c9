package state

import (
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

// ErrorReport is the structured report of a turn that ended in the error
// node. The turn's error_report message carries it (Message.Report), so it
// is stored with the conversation and sent with the message event;
// frontends and API users read its fields instead of matching text. The
// message's Markdown is rendered from it for an operator; Details is for
// developers and is not in that Markdown.
type ErrorReport struct {
	// Asked is what the user asked: the extracted task, else their message.
	Asked string `json:"asked"`
	// Steps are the plan's steps (respond and clarify left out) with what
	// became of each. Done steps say what they produced or changed.
	Steps []ReportStep `json:"steps,omitempty"`
	// Failure is what failed and why.
	Failure ReportFailure `json:"failure"`
	// Suggestions are what the user can do, most specific first.
	Suggestions []string `json:"suggestions"`
	// Explanation says in two or three sentences why the request failed:
	// the error model's, or the deterministic one (ExplainedBy).
	Explanation string `json:"explanation"`
	// ExplainedBy is ExplainedByModel or ExplainedByRules.
	ExplainedBy string `json:"explained_by"`
	// Details are for developers.
	Details ReportDetails `json:"details"`
	// Time is when the report was written.
	Time time.Time `json:"time"`
}

// Who wrote ErrorReport.Explanation.
const (
	ExplainedByModel = "model" // the error model role
	ExplainedByRules = "rules" // the deterministic explanation
)

// ReportStep is one plan step in an error report.
type ReportStep struct {
	// Step is the plan step's index, from 0.
	Step int `json:"step"`
	// Capability ran the step (a fallback, when one stood in).
	Capability string `json:"capability"`
	// Objective is the step's objective without the words that only repeat
	// what was asked (Asked says it once); empty when nothing else is left.
	Objective string `json:"objective,omitempty"`
	// Status is done, failed, skipped or pending (not carried out).
	Status StepStatus `json:"status"`
	// Outcome says what a done step produced or changed, in the
	// capability's words (the summaries of its outputs).
	Outcome string `json:"outcome,omitempty"`
	// SideEffect marks a capability that acts on the outside world: a done
	// step with SideEffect changed something.
	SideEffect bool `json:"side_effect,omitempty"`
	// Attempts of a step that failed or was cut short, and how many its
	// retry policy allowed (0: not known), so a step stopped after its first
	// attempt is not reported as having failed for good.
	Attempts    int `json:"attempts,omitempty"`
	MaxAttempts int `json:"max_attempts,omitempty"`
	// Error is the failed attempt's reason, for a step that failed.
	Error string `json:"error,omitempty"`
}

// ReportFailure is what failed in a turn and why.
type ReportFailure struct {
	// Operation names what failed in words: "step 2 (read the beam
	// current)", "planning", or "the request" for a limit with no failure.
	Operation string `json:"operation"`
	// Node is the graph node that failed, if one did.
	Node string `json:"node,omitempty"`
	// Step is the failed plan step's index, or -1.
	Step       int    `json:"step"`
	Capability string `json:"capability,omitempty"`
	// Severity of the failure, and its kind (capabilities.Kind…).
	Severity capabilities.Severity `json:"severity"`
	Kind     string                `json:"kind,omitempty"`
	// Reason says why, in plain words.
	Reason string `json:"reason"`
	// Limit names the exhausted limit or budget (router.Limit…), if any.
	Limit string `json:"limit,omitempty"`
	// Attempts of the failed operation, when it was retried, and how many
	// its retry policy allowed (0: not known).
	Attempts    int `json:"attempts,omitempty"`
	MaxAttempts int `json:"max_attempts,omitempty"`
	// SafetyStop says why the operation was stopped for safety (the
	// classification's safety_abort_reason), if it was.
	SafetyStop string `json:"safety_stop,omitempty"`
}

// ReportDetails are the technical facts of an error report.
type ReportDetails struct {
	// Cause is why the router sent the turn to the error node (router.Cause).
	Cause string `json:"cause"`
	// Error is the original error text.
	Error string `json:"error,omitempty"`
	// Classification of the failure, with its metadata.
	Classification capabilities.Classification `json:"classification"`
	// NodeSteps, Tokens, Plans and Reclassifications are the turn's counters.
	NodeSteps         int `json:"node_steps"`
	Tokens            int `json:"tokens"`
	Plans             int `json:"plans"`
	Reclassifications int `json:"reclassifications"`
	// RetryAttempts counts retries of every step and node this turn.
	RetryAttempts int `json:"retry_attempts"`
	// Elapsed is the turn's time until the report.
	Elapsed time.Duration `json:"elapsed"`
}

// Changed returns the done steps that acted on the outside world.
func (r ErrorReport) Changed() []ReportStep {
	var out []ReportStep
	for _, s := range r.Steps {
		if s.Status == StepDone && s.SideEffect {
			out = append(out, s)
		}
	}
	return out
}
