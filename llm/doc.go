// Package llm gives the agent's nodes their language models, one per role
// (task_extraction, classifier, orchestrator, response, approval, error),
// behind the small Model interface. Providers come from langchaingo; this is
// the only package that imports it. Errors are typed: HTTP status and
// Retry-After survive, so failures classify by data, not by message text.
package llm
