// Package vocab names the settings of the model layer, once: the model
// roles, the providers, the JSON modes, the fallback when a provider cannot
// be reached, and how the classifier asks its model. Package llm and package
// nodes use these names; package config checks a configuration file against
// them without importing either (and so without langchaingo); package state
// counts a turn's tokens by role. It imports nothing.
package vocab

// Role names what a model is used for. Each role is configured on its own
// and falls back to the default role.
type Role string

// The model roles.
const (
	RoleDefault        Role = "default"
	RoleTaskExtraction Role = "task_extraction"
	RoleClassifier     Role = "classifier"
	RoleOrchestrator   Role = "orchestrator"
	RoleResponse       Role = "response"
	RoleApproval       Role = "approval"
	RoleError          Role = "error"
)

// Roles lists every role, default first.
func Roles() []Role {
	return []Role{RoleDefault, RoleTaskExtraction, RoleClassifier, RoleOrchestrator, RoleResponse, RoleApproval, RoleError}
}

// The providers.
const (
	ProviderOpenAI    = "openai"    // OpenAI and any OpenAI-compatible server (vLLM, Ollama /v1, LiteLLM, gateways)
	ProviderAnthropic = "anthropic" // Anthropic Messages API
	ProviderGoogleAI  = "googleai"  // Google Gemini API
	ProviderOllama    = "ollama"    // Ollama's native API
)

// Providers lists the supported providers.
func Providers() []string {
	return []string{ProviderOpenAI, ProviderAnthropic, ProviderGoogleAI, ProviderOllama}
}

// How a JSON reply is asked for (a role's json_mode).
const (
	// JSONModeAuto: structured output with the reply's JSON schema; when the
	// server rejects the request (HTTP 400 or 422) the call is repeated with
	// JSON mode, then without either, and what worked is kept for the
	// model. The default.
	JSONModeAuto = "auto"
	// JSONModeSchema: always the JSON schema (OpenAI response_format
	// json_schema, Ollama format: <schema>).
	JSONModeSchema = "json_schema"
	// JSONModeObject: always plain JSON mode (response_format json_object,
	// Ollama format: "json").
	JSONModeObject = "json_object"
	// JSONModeOff: no response format is sent; the prompt alone asks for
	// JSON (servers that reject response_format).
	JSONModeOff = "off"
)

// JSONModes lists the accepted json_mode values.
func JSONModes() []string { return []string{JSONModeAuto, JSONModeSchema, JSONModeObject, JSONModeOff} }

// What a node does when its provider cannot be reached (the fallback).
const (
	// FallbackNone (or empty, the default) classifies an unreachable
	// provider like any other failure.
	FallbackNone = "none"
	// FallbackOffline makes the node use its offline strategy instead.
	FallbackOffline = "offline"
)

// How the classifier asks its model.
const (
	// ClassifierBatched asks once for the whole selection: LLM calls per
	// turn stay constant as capabilities grow. The default.
	ClassifierBatched = "batched"
	// ClassifierPerCapability asks one yes/no question per capability,
	// concurrently (the reference design).
	ClassifierPerCapability = "per_capability"
)

// When task extraction asks its model.
const (
	// TaskExtractionWhenNeeded: only when the rules find that the message
	// needs the earlier turns to be understood, or cannot tell. The
	// default.
	TaskExtractionWhenNeeded = "needed"
	// TaskExtractionAlways: on every turn.
	TaskExtractionAlways = "always"
)
