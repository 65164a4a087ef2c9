package llm

import "context"

// Role names what a model is used for. Each role is configured on its own and
// falls back to the default role.
type Role string

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
var Roles = []Role{RoleDefault, RoleTaskExtraction, RoleClassifier, RoleOrchestrator, RoleResponse, RoleApproval, RoleError}

// Message is one prompt message.
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// Request is one model call.
type Request struct {
	Role     Role
	Messages []Message
	// MaxTokens caps the reply; 0 means the role's configured value.
	MaxTokens int
	// JSON asks for a JSON object reply where the provider supports it.
	JSON bool
	// OnChunk, when set, receives the reply as it streams. Returning an error
	// aborts the call.
	OnChunk func(ctx context.Context, chunk string) error
}

// Usage is the token count of one call.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// Total returns prompt + completion tokens.
func (u Usage) Total() int { return u.PromptTokens + u.CompletionTokens }

// Response is a model's reply.
type Response struct {
	Text  string
	Usage Usage
	Model string
}

// Model generates replies. Implementations are safe for concurrent use.
type Model interface {
	Generate(ctx context.Context, req Request) (Response, error)
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
