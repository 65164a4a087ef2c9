// Package llm gives the agent's nodes their language models, one per role
// (task_extraction, classifier, orchestrator, response, approval, error),
// behind the small Model interface. Providers come from langchaingo; this is
// the only package that imports it. Errors are typed: HTTP status and
// Retry-After survive, so failures classify by data, not by message text.
//
// Every role calls its model through Ask, so replies are read alike: the
// asking role is named by every error (also an application's own Model's),
// reasoning is stripped from the text and from streamed chunks (package
// replytext), and a reply cut off by the token limit (Response.FinishReason
// FinishLength) is asked again with a larger limit. JSON replies carry their
// Schema; RoleConfig.JSONMode decides whether it is sent as structured
// output, plain JSON mode or not at all.
package llm
