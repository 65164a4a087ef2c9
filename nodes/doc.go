// Package nodes holds the infrastructure nodes that turn a chat message into
// a plan and an answer: task extraction, classifier, orchestrator, respond and
// clarify. Each uses its LLM role when one is configured and a deterministic
// offline strategy otherwise (or when the LLM is unreachable and fallback to
// offline is set).
package nodes
