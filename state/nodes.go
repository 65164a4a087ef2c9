package state

// Names of the agent graph's nodes, defined once here so that every layer
// (router, nodes, the error node, the agent, the server's progress text) can
// use them without importing the code that implements them. A plan step
// names a registered capability or one of the two terminal steps, NodeRespond
// and NodeClarify.
const (
	// NodeTaskExtraction states the task of a turn.
	NodeTaskExtraction = "task_extraction"
	// NodeClassifier selects the capabilities the task needs.
	NodeClassifier = "classifier"
	// NodeOrchestrator plans the steps.
	NodeOrchestrator = "orchestrator"
	// NodePlanApproval asks a human to approve the plan before any step runs
	// (Options.PlanApproval).
	NodePlanApproval = "plan_approval"
	// NodeRespond writes the answer; always available to a plan.
	NodeRespond = "respond"
	// NodeClarify asks the user clarifying questions; always available to a plan.
	NodeClarify = "clarify"
	// NodeError writes the error report and its explanation; it ends the turn.
	NodeError = "error"
)
