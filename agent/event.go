package agent

import (
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

// EventType names an agent event. Frontends map these to their protocols.
type EventType string

const (
	EventRunStart         EventType = "run_start"         // a turn started or resumed
	EventNodeStart        EventType = "node_start"        // an infrastructure node or capability started
	EventNodeEnd          EventType = "node_end"          // it ended (Err set on failure)
	EventStatus           EventType = "status"            // a short human status line (Text)
	EventTask             EventType = "task"              // the extracted task (Text)
	EventCapabilities     EventType = "capabilities"      // the selected capabilities (Capabilities)
	EventPlan             EventType = "plan"              // a plan was made (Plan)
	EventStepStart        EventType = "step_start"        // a plan step started (Step, Total, Capability)
	EventStepEnd          EventType = "step_end"          // a plan step ended (Err set on failure)
	EventRetry            EventType = "retry"             // a retry is scheduled (Retry)
	EventToken            EventType = "token"             // a chunk of the answer (Text)
	EventAnswerReset      EventType = "answer_reset"      // discard the Node's tokens streamed so far: its stream failed and the answer starts again (Text: why)
	EventApprovalRequired EventType = "approval_required" // the run waits for a human (Approval)
	EventMessage          EventType = "message"           // the turn's assistant message (Message)
	EventUsage            EventType = "usage"             // LLM tokens used so far this turn (Usage)
	EventModelCall        EventType = "model_call"        // an LLM call of Node (Call, Duration; Err on failure), sent when the node returns
	EventDone             EventType = "done"              // the turn ended (Status)
	// EventDenied: a capability the caller may not use was refused
	// (Capability; Step is the plan step or -1; Text says why). See
	// TurnRequest.AllowedCapabilities.
	EventDenied EventType = "denied"
	// EventAudit: an audit record of a side-effecting step was stored
	// (Audit). A server copies it to its audit log file and does not show
	// it to clients.
	EventAudit EventType = "audit"
)

// EventArtifact: a renderable result of a plan step (Artifact; Step,
// Capability, Attempt), one event per artifact, right after the step's
// successful step_end. An id seen before replaces that artifact (a step run
// again after a crash).
const EventArtifact EventType = "artifact"

// RunStatus is how a turn ended.
type RunStatus string

const (
	RunAnswered    RunStatus = "answered"    // an answer, clarification or error report was written
	RunInterrupted RunStatus = "interrupted" // waiting for an approval
	RunFailed      RunStatus = "failed"      // a FATAL error or an engine failure
	RunCanceled    RunStatus = "canceled"    // the caller canceled; the run can be resumed
	// RunWaiting (a done event only): a retry waits until the event's NotBefore, and the
	// run parked instead of waiting (graph.WithParkAfter on the call's
	// context): Resume with a zero Answer at that time continues it.
	RunWaiting RunStatus = "waiting"
)

// RetryInfo describes a scheduled retry.
type RetryInfo struct {
	Node      string        `json:"node"`
	Attempt   int           `json:"attempt"` // the attempt that failed
	Max       int           `json:"max"`
	Delay     time.Duration `json:"delay"`
	NotBefore time.Time     `json:"not_before"`
	Reason    string        `json:"reason"`
	// Capability and Step name the plan step retried (Node is the
	// capability running it, a fallback if one stands in); Step is -1 and
	// Capability empty for an infrastructure node.
	Capability string `json:"capability,omitempty"`
	Step       int    `json:"step"`
}

// ModelCall is one LLM call a node made (EventModelCall): a turn's
// timeline shows it under its node. A reply cut off by the token limit and
// asked again is two calls.
type ModelCall struct {
	// Role is the model role called (llm.Role: "classifier", "response", …).
	Role string `json:"role"`
	// Model is the model that answered, as its provider named it.
	Model string `json:"model,omitempty"`
	Usage Usage  `json:"usage"`
}

// Usage is token use this turn.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// CachedPromptTokens: of PromptTokens, those the provider read from its
	// prompt cache (a model call's usage; llm.Usage.CachedPromptTokens).
	CachedPromptTokens int `json:"cached_prompt_tokens,omitempty"`
}

// Event is one observable fact of a turn. Only the fields its Type names are set.
type Event struct {
	Type   EventType `json:"type"`
	Thread string    `json:"thread"`
	RunID  string    `json:"run_id,omitempty"`
	Time   time.Time `json:"time"`
	// Seq numbers the events of a run from 1, for reconnecting clients.
	Seq int `json:"seq"`

	Node       string `json:"node,omitempty"`
	Step       int    `json:"step,omitempty"`  // plan step index, from 0
	Total      int    `json:"total,omitempty"` // plan steps
	Capability string `json:"capability,omitempty"`
	// Attempt numbers the attempts of a plan step's capability from 1
	// (step_start, step_end); a fallback starts again at 1.
	Attempt      int             `json:"attempt,omitempty"`
	Text         string          `json:"text,omitempty"`
	Capabilities []string        `json:"capabilities,omitempty"`
	Plan         *state.Plan     `json:"plan,omitempty"`
	Retry        *RetryInfo      `json:"retry,omitempty"`
	Approval     *state.Approval `json:"approval,omitempty"`
	Message      *state.Message  `json:"message,omitempty"`
	Usage        *Usage          `json:"usage,omitempty"`
	Call         *ModelCall      `json:"call,omitempty"`
	Status       RunStatus       `json:"status,omitempty"`
	// NotBefore is when a waiting run (Status RunWaiting) goes on.
	NotBefore time.Time     `json:"not_before,omitzero"`
	Duration  time.Duration `json:"duration,omitempty"`
	Err       string        `json:"error,omitempty"`
	Audit     *AuditRecord  `json:"audit,omitempty"`
	// Artifact is the artifact of an EventArtifact.
	Artifact *capabilities.Artifact `json:"artifact,omitempty"`
	// Detail is what the observer-only events carry (observe.go).
	Detail *Detail `json:"detail,omitempty"`
}
