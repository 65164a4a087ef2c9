package capabilities

import (
	"context"
	"encoding/json"
	"reflect"
	"time"
)

// Cardinality of a required context type.
type Cardinality string

const (
	Single   Cardinality = "single"   // exactly one value of the type
	Multiple Cardinality = "multiple" // one or more values of the type
)

// Requirement is a context type a capability consumes. Key.Required
// makes one that also states the values' Go type, which the registry
// compares with the providers'.
type Requirement struct {
	Type        string      `json:"type"`
	Cardinality Cardinality `json:"cardinality,omitempty"` // default Single
	goType      reflect.Type
}

// Capability is one thing the agent can do. Execute receives the planned step
// with its resolved inputs and returns values for the context store.
//
// A capability may also implement ErrorClassifier, RetryPolicyProvider,
// ClassifierGuideProvider, OrchestratorGuideProvider, FallbackProvider and
// ApprovalRequirer.
type Capability interface {
	// Name is unique; plans reference it.
	Name() string
	// Description is one sentence for prompts and the capability overview.
	Description() string
	// Provides lists the context types the capability produces.
	Provides() []string
	// Requires lists the context types it consumes.
	Requires() []Requirement
	// Execute runs one step. Return an *Error to state a classification.
	Execute(ctx context.Context, step Step) (Output, error)
}

// ErrorContext is what a classifier knows about a failure.
type ErrorContext struct {
	Capability string
	StepIndex  int
	Attempt    int
	Elapsed    time.Duration
	Task       string
}

// ErrorClassifier classifies a capability's own errors. Returning a
// Classification with SeverityUnset defers to the default classifier.
type ErrorClassifier interface {
	ClassifyError(err error, ec ErrorContext) Classification
}

// RetryPolicyProvider gives a capability its own retry policy; it wins over
// the application's per-capability config and the global default.
type RetryPolicyProvider interface {
	RetryPolicy() RetryPolicy
}

// ClassifierExample is a few-shot example for the classifier.
type ClassifierExample struct {
	Query  string `json:"query"`
	Result bool   `json:"result"`
	Reason string `json:"reason"`
}

// ClassifierGuide tells the classifier when the capability is relevant.
type ClassifierGuide struct {
	Instructions string              `json:"instructions"`
	Examples     []ClassifierExample `json:"examples,omitempty"`
}

// ClassifierGuideProvider supplies a classifier guide. A capability without
// one is judged on its Description alone (by the LLM, or lexically offline),
// so a guide with examples makes selection markedly more reliable.
type ClassifierGuideProvider interface {
	ClassifierGuide() *ClassifierGuide
}

// OrchestratorExample is a few-shot planning example.
type OrchestratorExample struct {
	Step     PlannedStep `json:"step"`
	Scenario string      `json:"scenario"`
	Notes    string      `json:"notes,omitempty"`
}

// OrchestratorGuide tells the planner how to use the capability. Lower
// Priority sorts first in the planner prompt.
type OrchestratorGuide struct {
	Instructions string                `json:"instructions"`
	Examples     []OrchestratorExample `json:"examples,omitempty"`
	Priority     int                   `json:"priority,omitempty"`
	// Parameters is the JSON schema of a step's parameters, shown to the
	// planner; New infers it from its Args struct.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// OrchestratorGuideProvider supplies an orchestrator guide.
type OrchestratorGuideProvider interface {
	OrchestratorGuide() *OrchestratorGuide
}

// FallbackProvider names capabilities to try, in order, when this one fails
// permanently (before replanning). They must provide the same context types.
type FallbackProvider interface {
	Fallbacks() []string
}

// ApprovalRequirer decides per step whether a human must approve it first
// (in selective approval mode). summary says what will happen, in words a
// human can judge ("run the orbit feedback's calibration, which takes the
// feedback off for a minute"). It is for capabilities without side effects:
// a side effect (SideEffecter) is approved whatever the mode, and its
// summary is the Action's (ActionDescriber), which the audit log records.
type ApprovalRequirer interface {
	RequiresApproval(step Step) (required bool, summary string)
}

// InputRef names a context value a step consumes: {TYPE: key}.
type InputRef struct {
	Type string `json:"type"`
	Key  string `json:"key"`
}

// PlannedStep is one step of a plan as the orchestrator writes it.
type PlannedStep struct {
	ContextKey      string         `json:"context_key"`
	Capability      string         `json:"capability"`
	TaskObjective   string         `json:"task_objective"`
	SuccessCriteria string         `json:"success_criteria,omitempty"`
	ExpectedOutput  string         `json:"expected_output,omitempty"`
	Parameters      map[string]any `json:"parameters,omitempty"`
	Inputs          []InputRef     `json:"inputs,omitempty"`
}

// Step is what Execute receives: the planned step, its resolved inputs and
// facts about this execution.
type Step struct {
	PlannedStep
	// Index of the step in the plan, from 0.
	Index int
	// Task is the turn's task, as extracted.
	Task string
	// Attempt counts executions of this step in this turn, from 1.
	Attempt int
	// IdempotencyKey is the same for repeats of one in-flight attempt (after a
	// crash) and differs between attempts: thread/turn/plan/step/attempt. A
	// side-effecting capability can use it to recognise a repeat.
	IdempotencyKey string
	// Inputs resolved from the context store, in the order of Inputs.
	Resolved []ContextEntry
	// WritesEnabled is the global writes switch; side-effecting capabilities
	// must refuse when it is off (return ErrWritesDisabled).
	WritesEnabled bool
	// Approved is true when a human approved this step before it ran.
	Approved bool
	// Target is the named target system the turn acts on ("live",
	// "simulator"; empty when none is configured): a Targeter reads and
	// writes that one (target.go).
	Target string
}

// Output is what a successful step produces.
type Output struct {
	// Values are stored in the context store. A value whose Key is empty is
	// stored under the step's context key.
	Values []ContextValue
	// Artifacts are renderable results beside the values: a time series,
	// a table, a figure, a link (artifact.go). The agent validates them
	// (an invalid one fails the step, CRITICAL), keeps them with the
	// step's result and sends each to the frontends.
	Artifacts []Artifact
}

// ContextValue is one output value of a step.
type ContextValue struct {
	Type    string
	Key     string
	Value   any
	Summary string // short, for prompts and the offline responder
}

// Result is a convenience for the common one-value output.
func Result(contextType string, value any, summary string) Output {
	return Output{Values: []ContextValue{{Type: contextType, Value: value, Summary: summary}}}
}
