// Package nodes holds the infrastructure nodes that turn a chat message into
// a plan and an answer: task extraction, classifier, orchestrator, respond
// and clarify. Each asks its model role when one is configured and runs a
// deterministic offline strategy otherwise (or when the model is
// unreachable and the fallback is offline). Build all five with New(cfg), or
// one with NewTaskExtraction, NewClassifier, NewOrchestrator, NewRespond or
// NewClarify; every node is a Node, a capabilities.ErrorClassifier and a
// capabilities.RetryPolicyProvider, and reports its progress with
// graph.Emit (Status, Token, AnswerReset, TaskExtracted,
// CapabilitiesSelected, NotSelected, PlanMade, OfflineFallback,
// ModelDecision).
//
// A turn asks only the models it needs (needs.go): task extraction only
// when the message needs the earlier turns, the classifier only when the
// candidates' guides do not fit the planner's prompt, and both in one call
// where both are needed (combined.go). Every prompt is a system prompt that
// stays the same from turn to turn, for the providers' prompt caches, and
// the turn's content after it (prompts.Set.RenderPrompt).
//
// What each node does offline and with a model, the errors it returns and
// the state it writes: docs/models.md, "The infrastructure nodes".
package nodes
