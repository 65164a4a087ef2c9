package state

import (
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/intent"
)

// MessageRole says who wrote a chat message (not to be confused with a model
// role, which says what a model is used for).
type MessageRole string

const (
	RoleUser      MessageRole = "user"
	RoleAssistant MessageRole = "assistant"
	RoleSystem    MessageRole = "system"
)

// MessageKind says what an assistant message is, so frontends can render it.
type MessageKind string

const (
	KindAnswer          MessageKind = "answer"
	KindClarification   MessageKind = "clarification"
	KindApprovalRequest MessageKind = "approval_request"
	KindErrorReport     MessageKind = "error_report"
	KindRejected        MessageKind = "rejected"
)

// Message is one chat message.
type Message struct {
	Role    MessageRole `json:"role"`
	Content string      `json:"content"`
	Kind    MessageKind `json:"kind,omitempty"`
	Turn    int         `json:"turn,omitempty"`
	Time    time.Time   `json:"time,omitzero"`
	// Report is the structured error report of a message of kind
	// error_report; Content is its Markdown.
	Report *ErrorReport `json:"report,omitempty"`
}

// State is the agent's whole state.
type State struct {
	// Messages persist across turns.
	Messages []Message `json:"messages"`
	// Context persists across turns.
	Context capabilities.ContextStore `json:"context,omitempty"`
	// Turn is reset at the start of every turn.
	Turn Turn `json:"turn"`
	// Metadata is stored with the thread's checkpoints (owner, tenant,
	// title); the agent carries it from turn to turn.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Options are the per-turn switches (slash commands and config defaults).
type Options struct {
	// PlanApproval asks a human to approve the plan before any step runs.
	PlanApproval bool `json:"plan_approval,omitempty"`
	// ApprovalMode: "disabled", "selective" or "all_capabilities".
	ApprovalMode string `json:"approval_mode,omitempty"`
	// SkipTaskExtraction uses the user message as the task.
	SkipTaskExtraction bool `json:"skip_task_extraction,omitempty"`
	// SkipClassification activates every capability.
	SkipClassification bool `json:"skip_classification,omitempty"`
	// WritesEnabled is the global switch for side-effecting capabilities.
	WritesEnabled bool `json:"writes_enabled,omitempty"`
	// Target is the named target system the turn's side effects act on
	// ("live", "simulator"); empty when none is configured. The posture of
	// each target is the configuration's, read where a step executes.
	Target string `json:"target,omitempty"`
}

// The safety settings of Options a request can name (their JSON names).
const (
	SettingWritesEnabled      = "writes_enabled"
	SettingApprovalMode       = "approval_mode"
	SettingPlanApproval       = "plan_approval"
	SettingSkipClassification = "skip_classification"
	SettingSkipTaskExtraction = "skip_task_extraction"
	SettingTarget             = "target"
)

// RaisableSettings are the settings a per-key permission may let a request
// raise above the configuration. The write switch is not among them: it is
// the process's own configuration, checked where a write executes.
func RaisableSettings() []string {
	return []string{SettingApprovalMode, SettingPlanApproval, SettingSkipClassification, SettingSkipTaskExtraction}
}

// Turn is everything about the current turn.
type Turn struct {
	Number    int       `json:"number"`
	ID        string    `json:"id,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	// Input is the user message that started the turn.
	Input   string  `json:"input"`
	Options Options `json:"options,omitzero"`
	// Trace is the turn's trace context, stored so that a resume of the
	// turn (in any process) continues its trace; empty unless the agent has
	// an observer that traces (docs/observability.md).
	Trace *TraceContext `json:"trace,omitempty"`

	Task               *Task    `json:"task,omitempty"`
	ActiveCapabilities []string `json:"active_capabilities,omitempty"`
	Plan               *Plan    `json:"plan,omitempty"`
	Control            Control  `json:"control"`
	// Results records every step execution, in completion order.
	Results []StepResult `json:"results,omitempty"`
	// PendingApproval is the approval the turn waits for, if any.
	PendingApproval *Approval `json:"pending_approval,omitempty"`
	// Approvals records answered approvals (by id), so an answer is used once.
	Approvals []ApprovalDecision `json:"approvals,omitempty"`
	// Done is set when the turn's one assistant message has been written.
	Done bool `json:"done,omitempty"`
}

// Task is the self-contained task extracted from the conversation.
type Task struct {
	Text             string `json:"text"`
	DependsOnHistory bool   `json:"depends_on_history,omitempty"`
	// Intent says whether the user asks to read, to change, or
	// hypothetically; a side-effecting step runs only for a change.
	Intent intent.Intent `json:"intent,omitzero"`
}

// StepStatus is the state of a plan step.
type StepStatus string

const (
	StepPending StepStatus = "pending"
	StepDone    StepStatus = "done"
	StepFailed  StepStatus = "failed"  // failed for good (after recovery was exhausted)
	StepSkipped StepStatus = "skipped" // never started: the turn ended before it (a rejection, a failure)
	// StepRejected: a human rejected the step's approval; it did not run.
	StepRejected StepStatus = "rejected"
)

// Plan is the orchestrator's plan for the turn.
type Plan struct {
	Steps []PlanStep `json:"steps"`
	// Number counts plans made this turn, from 1.
	Number  int       `json:"number"`
	Created time.Time `json:"created,omitzero"`
	// Approved is true once a human approved the plan (plan approval mode).
	Approved bool `json:"approved,omitempty"`
}

// PlanStep is a planned step with its execution status.
type PlanStep struct {
	capabilities.PlannedStep
	// DependsOn lists the indices of earlier steps whose outputs it reads. Steps
	// whose dependencies are done may run together.
	DependsOn []int      `json:"depends_on,omitempty"`
	Status    StepStatus `json:"status"`
	// Attempts counts executions of this step.
	Attempts int `json:"attempts,omitempty"`
	// FirstAttemptAt is when the first execution started (retry max_elapsed).
	FirstAttemptAt time.Time `json:"first_attempt_at,omitzero"`
	// NotBefore delays the next attempt (a durable retry delay).
	NotBefore time.Time `json:"not_before,omitzero"`
	// Fallback is the capability currently standing in for Capability.
	Fallback string `json:"fallback,omitempty"`
	// FallbacksTried lists fallbacks already used.
	FallbacksTried []string `json:"fallbacks_tried,omitempty"`
	// Recovered is set when the step succeeded after at least one retry.
	Recovered bool `json:"recovered,omitempty"`
	// Approved is set when a human approved this step.
	Approved bool `json:"approved,omitempty"`
	// Grant is the approval of a side-effecting step, bound to its action;
	// the step runs only while the action it describes has Grant's digest
	// and the grant has not expired.
	Grant *Grant `json:"grant,omitempty"`
	// Error is the step's unresolved failure, if any. Control.Error holds only
	// one failure; when concurrent steps fail together, the others wait here.
	Error *ErrorInfo `json:"error,omitempty"`
}

// Effective returns the capability that runs the step (a fallback, if one stands in).
func (s PlanStep) Effective() string {
	if s.Fallback != "" {
		return s.Fallback
	}
	return s.Capability
}

// Control holds the recovery bookkeeping the router decides from.
type Control struct {
	// Error is the failure being recovered from, if any.
	Error *ErrorInfo `json:"error,omitempty"`
	// Retries holds retry state of infrastructure nodes by node name (steps
	// keep theirs in the plan).
	Retries map[string]RetryState `json:"retries,omitempty"`
	// PlansCreated counts plans made this turn.
	PlansCreated int `json:"plans_created"`
	// Reclassifications counts reclassifications this turn.
	Reclassifications int `json:"reclassifications"`
	// ReclassificationReason says why the previous selection failed.
	ReclassificationReason string `json:"reclassification_reason,omitempty"`
	// NodeSteps counts node executions this turn (the step limit).
	NodeSteps int `json:"node_steps"`
	// Tokens counts LLM tokens used this turn, every role's (the usage
	// reported); BudgetTokens is what counts against the token budget.
	Tokens int `json:"tokens"`
	// TokensByRole splits Tokens by model role.
	TokensByRole map[string]int `json:"tokens_by_role,omitempty"`
	// LimitExceeded names the limit that ended the turn, if any.
	LimitExceeded string `json:"limit_exceeded,omitempty"`
	// Blocked is set while the run is paused on resource exhaustion.
	Blocked *ErrorInfo `json:"blocked,omitempty"`
	// Paused is the time the turn spent waiting for human answers; it does
	// not count against the turn's wall-clock limit.
	Paused time.Duration `json:"paused,omitempty"`
}

// ErrorInfo describes a failure of a node or step.
type ErrorInfo struct {
	// Node is the graph node that failed ("orchestrator", or a capability).
	Node string `json:"node"`
	// Capability is set when a capability failed.
	Capability string `json:"capability,omitempty"`
	// StepIndex is the plan step, or -1 for an infrastructure node.
	StepIndex      int                         `json:"step_index"`
	Classification capabilities.Classification `json:"classification"`
	// Message is the original error text.
	Message string `json:"message"`
	// Attempt is the attempt that failed, from 1.
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	// Elapsed is how long the failed attempt ran.
	Elapsed time.Duration `json:"elapsed"`
	// Policy is the retry policy in force (snapshot).
	Policy capabilities.RetryPolicy `json:"policy,omitzero"`
	// Retry is true when the policy allows another attempt at NotBefore.
	Retry     bool      `json:"retry,omitempty"`
	NotBefore time.Time `json:"not_before,omitzero"`
}

// RetryState is the retry bookkeeping of an infrastructure node.
type RetryState struct {
	Attempts  int       `json:"attempts"`
	FirstAt   time.Time `json:"first_at,omitzero"`
	NotBefore time.Time `json:"not_before,omitzero"`
}

// StepResult records one step execution.
type StepResult struct {
	StepIndex     int           `json:"step_index"`
	Capability    string        `json:"capability"`
	TaskObjective string        `json:"task_objective,omitempty"`
	Success       bool          `json:"success"`
	Attempt       int           `json:"attempt"`
	Duration      time.Duration `json:"duration"`
	Error         string        `json:"error,omitempty"`
	Severity      string        `json:"severity,omitempty"`
	At            time.Time     `json:"at"`
	Plan          int           `json:"plan"`
	// Artifacts are the renderable results of a successful execution
	// (capabilities.Output.Artifacts, checked and given ids by the agent).
	// They belong to the turn: the turn's later checkpoints carry them, and
	// the next turn starts without them.
	Artifacts []capabilities.Artifact `json:"artifacts,omitempty"`
}

// Grant is a human's approval of one side-effecting step's exact action.
type Grant struct {
	// ApprovalID is the approval the human answered.
	ApprovalID string `json:"approval_id"`
	// Digest is the approved action's capabilities.Action.Digest.
	Digest string `json:"digest"`
	// By is who approved, as the frontend names them ("" when unknown).
	By string `json:"by,omitempty"`
	// At is when the answer was given.
	At time.Time `json:"at"`
	// Expires is when the grant stops covering the step (zero: never).
	Expires time.Time `json:"expires,omitzero"`
	// Before is the machine state the grant holds for (read when the step
	// last started): a retry whose targets moved beyond their tolerance
	// since asks the human again.
	Before []capabilities.Reading `json:"before,omitempty"`
}

// ApprovalKind says what is to be approved.
type ApprovalKind string

const (
	ApprovalPlan       ApprovalKind = "plan"
	ApprovalStep       ApprovalKind = "step"
	ApprovalEscalation ApprovalKind = "escalation"
)

// Approval is a pending request for a human decision.
type Approval struct {
	ID         string         `json:"id"`
	Kind       ApprovalKind   `json:"kind"`
	Capability string         `json:"capability,omitempty"`
	StepIndex  int            `json:"step_index"`
	Summary    string         `json:"summary"`
	Arguments  map[string]any `json:"arguments,omitempty"`
	Plan       *Plan          `json:"plan,omitempty"`
	// Action is what a side-effecting step will do; ActionDigest is its
	// digest, which the answer carries back so the step runs only if it
	// still describes the same action.
	Action       *capabilities.Action `json:"action,omitempty"`
	ActionDigest string               `json:"action_digest,omitempty"`
	// Before is the machine state the question shows (the targets' values
	// read when it was asked, capabilities.Readbacker): the approval holds
	// only while the machine stays within the changes' tolerance of it.
	Before  []capabilities.Reading `json:"before,omitempty"`
	Created time.Time              `json:"created"`
	Expires time.Time              `json:"expires,omitzero"`
}

// ApprovalDecision is a human's answer to an approval.
type ApprovalDecision struct {
	ID       string    `json:"id"`
	Approved bool      `json:"approved"`
	Answer   string    `json:"answer,omitempty"`
	Plan     *Plan     `json:"plan,omitempty"` // an edited plan, for plan approvals
	At       time.Time `json:"at"`
	// Asked is when the approval was requested; At - Asked is the time the
	// turn waited for the human.
	Asked time.Time `json:"asked,omitzero"`
	// Kind is the kind of the approval answered.
	Kind ApprovalKind `json:"kind,omitempty"`
	// By is who answered, as the frontend names them ("" when unknown).
	By string `json:"by,omitempty"`
	// Summary and ActionDigest are the answered approval's (copied when the
	// answer is checked), so the node that asked reads what was approved.
	Summary      string                 `json:"summary,omitempty"`
	ActionDigest string                 `json:"action_digest,omitempty"`
	Before       []capabilities.Reading `json:"before,omitempty"`
	// Rule says how the answer was decided (Answer* rules); only a human's
	// explicit answer approves.
	Rule string `json:"rule,omitempty"`
	// Tokens is what the approval model spent reading an unclear answer
	// (role "approval"); Apply adds it to the turn's tokens once, when the
	// decision is first recorded.
	Tokens int `json:"tokens,omitempty"`
}

// How an answer to an approval was decided (ApprovalDecision.Rule, and the
// audit record's rule). Only AnswerExplicit, AnswerToken, AnswerKeyword and
// AnswerPlan can approve: a model may read a reply only as a rejection
// (or as unclear, which is no decision: the human is asked again).
const (
	// AnswerExplicit: an API's approved flag (a button on the page, the
	// native API's "approved", AG-UI's resume).
	AnswerExplicit = "explicit"
	// AnswerToken: a chat message naming the approval's token with a yes or no.
	AnswerToken = "token"
	// AnswerKeyword: the human's words are an explicit yes or no
	// ("yes", "approve", "ja", "oui", "no", "abbrechen").
	AnswerKeyword = "keyword"
	// AnswerModel: the approval model read a free-text reply as a rejection.
	AnswerModel = "model"
	// AnswerPlan: an edited plan was sent in answer to a plan approval.
	AnswerPlan = "edited_plan"
	// AnswerExpired: nobody answered in time (a late answer, the agent's
	// own expiry or a frontend's, agent.Agent.ExpireApproval).
	AnswerExpired = "expired"
	// AnswerSuperseded: a new message that is not an answer replaced the
	// question (agent.Agent.Run); the approval ends with nothing done.
	AnswerSuperseded = "superseded"
)

// Approval modes (Options.ApprovalMode).
const (
	// ApprovalModeDisabled: no step asks for approval.
	ApprovalModeDisabled = "disabled"
	// ApprovalModeSelective: a capability decides per step (the default).
	ApprovalModeSelective = "selective"
	// ApprovalModeAll: every capability step asks for approval.
	ApprovalModeAll = "all_capabilities"
)

// Mode returns the approval mode, ApprovalModeSelective when unset.
func (o Options) Mode() string {
	if o.ApprovalMode == "" {
		return ApprovalModeSelective
	}
	return o.ApprovalMode
}

// TraceContext is a W3C trace context (https://www.w3.org/TR/trace-context/):
// the traceparent and tracestate headers, as text.
type TraceContext struct {
	TraceParent string `json:"traceparent,omitempty"`
	TraceState  string `json:"tracestate,omitempty"`
}
