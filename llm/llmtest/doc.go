// Package llmtest is the scripted fake model every capgraph test uses in
// place of a real LLM. Script text replies, errors and streamed chunks per
// role (or for any role), answer by prompt content with matchers, and inspect
// the call log afterwards. A Model is safe for concurrent use; when a script
// runs out it returns an *ExhaustedError naming the role, never a panic.
package llmtest
