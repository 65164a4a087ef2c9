package openai

import (
	"encoding/json"
	"github.com/capgraph/capgraph/server/internal/msgtext"
)

// ChatRequest is the part of an OpenAI chat completion request the server
// reads. Everything else (temperature, tools, user, metadata …) is
// accepted and ignored: json.Unmarshal skips unknown fields.
type ChatRequest struct {
	Model         string        `json:"model"`
	Messages      []ChatMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	N *int `json:"n"`
	// ResponseFormat: only {"type":"text"}; the agent answers in Markdown,
	// so a JSON format is refused rather than ignored.
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	// User is a string per the spec; Open WebUI sends an object for
	// pipeline models (detectOpenWebUI).
	User json.RawMessage `json:"user"`
}

type ChatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// UnreadParts counts the parts of an array content that are not text
// (images, files, audio): the agent reads text only, and says so.
func (m ChatMessage) UnreadParts() int {
	var parts []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(m.Content, &parts) != nil {
		return 0
	}
	n := 0
	for _, p := range parts {
		if p.Type != "text" && p.Type != "input_text" {
			n++
		}
	}
	return n
}

// Text returns the message's text: a string content, or the text parts of
// an array content (images and files are skipped: see UnreadParts).
func (m ChatMessage) Text() (string, error) { return msgtext.Of(m.Content) }

type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type Completion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []Choice `json:"choices"`
	Usage   *Usage   `json:"usage,omitempty"`
}

type Choice struct {
	Index        int              `json:"index"`
	Message      *OutMessage      `json:"message,omitempty"`
	Delta        *Delta           `json:"delta,omitempty"`
	FinishReason *string          `json:"finish_reason"`
	Logprobs     *json.RawMessage `json:"logprobs"`
}

type OutMessage struct {
	Role             string  `json:"role"`
	Content          string  `json:"content"`
	Refusal          *string `json:"refusal"`
	ReasoningContent string  `json:"reasoning_content,omitempty"`
}

type Delta struct {
	Role             string  `json:"role,omitempty"`
	Content          *string `json:"content,omitempty"`
	ReasoningContent string  `json:"reasoning_content,omitempty"`
}

// StatusFrame is Open WebUI's status event: a live status line above the
// message. It has no "choices"; clients that do not know it skip it.
type StatusFrame struct {
	Event StatusEvent `json:"event"`
}

type StatusEvent struct {
	Type string     `json:"type"`
	Data StatusData `json:"data"`
}

type StatusData struct {
	Description string `json:"description"`
	Done        bool   `json:"done"`
}

type ModelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}
