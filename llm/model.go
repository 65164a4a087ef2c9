package llm

import (
	"context"

	"github.com/capgraph/capgraph/llm/vocab"
)

// Role names what a model is used for. Each role is configured on its own and
// falls back to the default role. The roles are defined in package vocab.
type Role = vocab.Role

// The model roles (vocab's).
const (
	RoleDefault        = vocab.RoleDefault
	RoleTaskExtraction = vocab.RoleTaskExtraction
	RoleClassifier     = vocab.RoleClassifier
	RoleOrchestrator   = vocab.RoleOrchestrator
	RoleResponse       = vocab.RoleResponse
	RoleApproval       = vocab.RoleApproval
	RoleError          = vocab.RoleError
)

// Roles lists every role, default first.
func Roles() []Role { return vocab.Roles() }

// Message is one prompt message.
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// Request is one model call.
type Request struct {
	Role     Role
	Messages []Message
	// MaxTokens caps the reply; 0 means the role's configured max_tokens,
	// or DefaultMaxTokens when the role configures none.
	MaxTokens int
	// DefaultMaxTokens caps the reply when neither MaxTokens nor the role's
	// configuration does; 0 leaves it to the provider.
	DefaultMaxTokens int
	// JSON asks for a JSON object reply where the provider supports it
	// (the role's json_mode decides how).
	JSON bool
	// Schema, with JSON, is the reply's JSON schema, sent as structured
	// output where the provider and the role's json_mode allow it.
	Schema *Schema
	// OnChunk, when set, receives the reply as it streams. Returning an error
	// aborts the call.
	OnChunk func(ctx context.Context, chunk string) error
}

// Usage is the token count of one call.
type Usage struct {
	// PromptTokens counts every prompt token, those read from the
	// provider's prompt cache included.
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// CachedPromptTokens is how many of PromptTokens the provider read from
	// its prompt cache (OpenAI prompt_tokens_details.cached_tokens,
	// Anthropic cache_read_input_tokens); 0 when it says none or nothing.
	CachedPromptTokens int `json:"cached_prompt_tokens,omitempty"`
}

// Total returns prompt + completion tokens.
func (u Usage) Total() int { return u.PromptTokens + u.CompletionTokens }

// Response is a model's reply.
type Response struct {
	// Text is the reply. From Ask it is the visible text: reasoning removed
	// (replytext.Visible); Raw keeps what the model sent.
	Text string
	// Raw is the reply as the model sent it (set by Ask).
	Raw string
	// Reasoning is the model's reasoning when the server sent it apart from
	// the reply (reasoning_content). It is never shown to the user.
	Reasoning string
	// FinishReason says why the model stopped; empty when the provider did
	// not say.
	FinishReason FinishReason
	// MaxTokens is the completion limit the call was made with; 0 when none
	// was sent (the provider's default applied).
	MaxTokens int
	Usage     Usage
	Model     string
}

// Cut reports whether the reply was cut off by the token limit.
func (r Response) Cut() bool { return r.FinishReason == FinishLength }

// FinishReason is why a model stopped, normalised across providers.
type FinishReason string

const (
	// FinishStop: the model ended its reply (OpenAI "stop", Anthropic
	// "end_turn"/"stop_sequence", Gemini STOP, Ollama "stop").
	FinishStop FinishReason = "stop"
	// FinishLength: the reply was cut off by the token limit (OpenAI and
	// Ollama "length", Anthropic "max_tokens", Gemini MAX_TOKENS).
	FinishLength FinishReason = "length"
	// FinishContentFilter: the provider stopped the reply (OpenAI
	// "content_filter", Anthropic "refusal", Gemini SAFETY and the like).
	FinishContentFilter FinishReason = "content_filter"
	// FinishToolCalls: the model asked to call a tool.
	FinishToolCalls FinishReason = "tool_calls"
)

// Schema is the JSON schema of a JSON reply shape.
type Schema struct {
	// Name identifies the shape to the provider: letters, digits, _ and -.
	Name string
	// Strict asks the provider to hold the reply to the schema exactly
	// (OpenAI strict mode). Only for schemas whose objects require every
	// property and allow no other.
	Strict bool
	// Schema is the JSON schema document. It is shared between requests:
	// a model reads it and never changes it.
	Schema map[string]any
}

// Model generates replies. Implementations are safe for concurrent use.
type Model interface {
	Generate(ctx context.Context, req Request) (Response, error)
}

// Cancelable is implemented by a Model whose Generate returns soon after
// its context ends, whatever its provider does: every model New builds
// (their requests carry the context) and llmtest's. A node calls such a
// model in place; any other it calls on a goroutine of its own, abandoned
// capabilities.AbandonGrace after the context ends, so that a model ignoring
// its context cannot keep a stop from stopping (a goroutine and two
// wake-ups a call that a Cancelable model does not need). A wrapper
// reports its inner model's answer.
type Cancelable interface {
	Cancelable() bool
}

// IsCancelable reports whether m is a Cancelable model that says it is.
func IsCancelable(m Model) bool {
	c, ok := m.(Cancelable)
	return ok && c.Cancelable()
}

// Models gives the model for a role; ok is false when neither the role nor
// the default role is configured (the node then uses its offline strategy).
type Models interface {
	For(role Role) (m Model, ok bool)
}

// None is the Models with no model at all: everything runs offline.
var None Models = noModels{}

type noModels struct{}

func (noModels) For(Role) (Model, bool) { return nil, false }
