package prompts

// HistoryMessage is one earlier chat message.
type HistoryMessage struct {
	Role    string
	Content string
}

// FormatRetry is what the previous attempt's reply got wrong, shown on the
// next attempt so the model does not repeat it. All empty on a first
// attempt.
type FormatRetry struct {
	// FormatError is the exact parse error of the previous reply.
	FormatError string
	// ExpectedShape describes the reply wanted.
	ExpectedShape string
	// PreviousReply is that reply (shortened).
	PreviousReply string
}

// TaskExtractionData feeds the task_extraction template.
type TaskExtractionData struct {
	History []HistoryMessage
	Message string
	FormatRetry
}

// TaskSelectionData feeds the task_selection template (the capabilities, in
// the system prompt) and its turn template, task_extraction_turn (the chat).
type TaskSelectionData struct {
	Capabilities []ClassifierCapability
	History      []HistoryMessage
	Message      string
	FormatRetry
}

// Example is a classifier few-shot example.
type Example struct {
	Query  string
	Result bool
	Reason string
}

// ClassifierCapability is one capability as the classifier sees it.
type ClassifierCapability struct {
	Name         string
	Description  string
	Instructions string
	// Examples are shuffled with a seeded source (see ShuffledExamples).
	Examples []Example
}

// ClassifierData feeds the per-capability classifier template.
type ClassifierData struct {
	Task       string
	Capability ClassifierCapability
	// PreviousFailure says why the previous selection failed (after a reclassification).
	PreviousFailure string
	FormatRetry
}

// ClassifierBatchedData feeds the batched classifier template.
type ClassifierBatchedData struct {
	Task            string
	Capabilities    []ClassifierCapability
	PreviousFailure string
	FormatRetry
}

// PlanExample is a numbered orchestrator example.
type PlanExample struct {
	Number   int
	Scenario string
	// Step is the example step as JSON.
	Step  string
	Notes string
}

// PlannerCapability is one active capability as the planner sees it.
type PlannerCapability struct {
	Name string
	// SideEffects: the capability acts on the outside world.
	SideEffects  bool
	Description  string
	Provides     []string
	Requires     []string
	Instructions string
	// Parameters is the JSON schema of a step's parameters, when the
	// capability states one (capabilities.New infers it).
	Parameters string
	Examples   []PlanExample
}

// ContextItem is one value in the context store.
type ContextItem struct {
	Type          string
	Key           string
	TaskObjective string
	Summary       string
	Turn          int
}

// OrchestratorData feeds the orchestrator template.
type OrchestratorData struct {
	Task             string
	DependsOnHistory bool
	History          []HistoryMessage
	Capabilities     []PlannerCapability
	// AvailableContext is the context store: earlier turns' results and, when
	// replanning, what this turn's finished steps produced.
	AvailableContext []ContextItem
	// ReplanReason is the failed step's classification (FormatForLLM), after a failure.
	ReplanReason string
	FailedStep   string
	// FormatError is the exact parse error of the previous reply; PreviousReply is that reply.
	FormatError   string
	PreviousReply string
	// Intent says what the user asked for and what a side-effecting step may
	// therefore do; set when an active capability has side effects.
	Intent string
}

// StepNote tells the responder how a step went (recovered, fallback used, failed).
type StepNote struct {
	Capability string
	Note       string
}

// ResponseData feeds the response template.
type ResponseData struct {
	Task    string
	History []HistoryMessage
	// Context is what this turn's steps produced, in plan order.
	Context []ContextItem
	// EarlierContext is set only when the task depends on history: the
	// earlier turns' context this turn's steps read.
	EarlierContext []ContextItem
	Notes          []StepNote
	// Conversational is set when no step ran: answer from the capability overview.
	Conversational     bool
	CapabilityOverview string
}

// ClarifyData feeds the clarify template.
type ClarifyData struct {
	Task               string
	History            []HistoryMessage
	Reason             string
	CapabilityOverview string
}

// ErrorData feeds the error explanation template (the error node).
type ErrorData struct {
	Task string
	// Report holds the facts of the failure: operation, capability,
	// severity, limit and the classification formatted for the model.
	Report string
	// CapabilityOverview lists what the assistant can do ("• name: description").
	CapabilityOverview string
}

// ApprovalData feeds the approval template: what a human was asked to
// approve. The human's reply goes to the model as the user message, never
// into the system prompt.
type ApprovalData struct {
	// Kind is the approval's kind: plan, step or escalation.
	Kind string
	// Summary is the question the human was shown.
	Summary string
}
