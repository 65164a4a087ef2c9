package nodes

import (
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/state"
)

// Payloads the nodes emit with graph.Emit for frontends. The agent maps them
// to its events; they are small values, safe to copy.

// Status is a short human status line ("Selecting capabilities…").
type Status struct {
	Node string
	Text string
}

// Token is a chunk of the streamed answer (respond) or questions (clarify).
type Token struct {
	Node string
	Text string
}

// AnswerReset says the Token chunks Node streamed so far are void: the
// model's stream failed part way and the node will be retried (or the turn
// ends in an error report). A frontend discards the partial text it shows for
// Node; the next Token chunks start the answer afresh.
type AnswerReset struct {
	Node   string
	Reason string
}

// TaskExtracted carries the task the turn works on and what the user asks
// for (read, change or hypothetical).
type TaskExtracted struct {
	Task             string
	DependsOnHistory bool
	Offline          bool
	Intent           intent.Intent
}

// CapabilitiesSelected carries the classifier's selection, after dependency
// expansion. Added lists capabilities pulled in only as providers of a
// required context type; Withheld lists the side-effecting capabilities that
// were not considered because the user did not ask for a change.
type CapabilitiesSelected struct {
	Capabilities []string
	Added        []string
	Offline      bool
	Withheld     []string
}

// NotSelected says a capability was left out because its classification
// call failed (per-capability mode).
type NotSelected struct {
	Capability string
	Err        string
}

// PlanMade carries a new plan.
type PlanMade struct {
	Plan    state.Plan
	Offline bool
}

// OfflineFallback says a node answered with its offline strategy because its
// model could not be reached (Config fallback "offline").
type OfflineFallback struct {
	Node   string
	Reason string
}

// ModelDecision says whether a node asks its model this turn, and why:
// task extraction and the classifier decide by rules and the
// configuration, before any call (docs/models.md, "Fewer model calls").
type ModelDecision struct {
	Node string
	// Skipped: the node decides without a model call.
	Skipped bool
	Reason  string
}

// Text is the decision in a line: "classifier: all 4 capabilities fit the
// planner's prompt (1 270 of 4 000 tokens), no model call".
func (d ModelDecision) Text() string { return d.Node + ": " + d.Reason }
