package server

import (
	"encoding/json"
	"strings"
)

// chatRequest is the part of an OpenAI chat completion request the server
// reads. Everything else (temperature, tools, user, metadata …) is
// accepted and ignored: json.Unmarshal skips unknown fields.
type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
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

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// unreadParts counts the parts of an array content that are not text
// (images, files, audio): the agent reads text only, and says so.
func (m chatMessage) unreadParts() int {
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

// text returns the message's text: a string content, or the text parts of
// an array content (images and files are skipped: see unreadParts).
func (m chatMessage) text() (string, error) {
	c := json.RawMessage(strings.TrimSpace(string(m.Content)))
	if len(c) == 0 || string(c) == "null" {
		return "", nil
	}
	if c[0] == '"' {
		var s string
		err := json.Unmarshal(c, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(c, &parts); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" || p.Type == "input_text" {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type chatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *chatUsage   `json:"usage,omitempty"`
}

type chatChoice struct {
	Index        int              `json:"index"`
	Message      *chatOutMessage  `json:"message,omitempty"`
	Delta        *chatDelta       `json:"delta,omitempty"`
	FinishReason *string          `json:"finish_reason"`
	Logprobs     *json.RawMessage `json:"logprobs"`
}

type chatOutMessage struct {
	Role             string  `json:"role"`
	Content          string  `json:"content"`
	Refusal          *string `json:"refusal"`
	ReasoningContent string  `json:"reasoning_content,omitempty"`
}

type chatDelta struct {
	Role             string  `json:"role,omitempty"`
	Content          *string `json:"content,omitempty"`
	ReasoningContent string  `json:"reasoning_content,omitempty"`
}

// statusFrame is Open WebUI's status event: a live status line above the
// message. It has no "choices"; clients that do not know it skip it.
type statusFrame struct {
	Event statusEvent `json:"event"`
}

type statusEvent struct {
	Type string     `json:"type"`
	Data statusData `json:"data"`
}

type statusData struct {
	Description string `json:"description"`
	Done        bool   `json:"done"`
}

type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}
