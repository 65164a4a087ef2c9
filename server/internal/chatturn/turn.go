package chatturn

import (
	"encoding/json"
	"fmt"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/transcripts"
)

// Model is a model profile clients may name: its id and the turn options
// it asks for (the server's Config.Models).
type Model struct {
	ID      string
	Options *agent.TurnOptions
}

// Turn is a validated chat request (Chat Completions, Responses): what
// to run and where.
type Turn struct {
	// ModelID is the model profile asked for; Options the turn options it
	// asks for.
	ModelID string
	Options *agent.TurnOptions
	Input   string
	Stream  bool
	Usage   bool
	// LastAssistant is the text of the last assistant message (approval token).
	LastAssistant string
	// Msgs is the conversation as text, the new user message last.
	Msgs []transcripts.Msg
	// User is the request's "user" field, raw (the server's detectOpenWebUI).
	User json.RawMessage
	// Statuses: send Open WebUI status frames (the server's sendStatusFrames).
	Statuses bool
	// Unread counts the last message's parts that are not text (images,
	// files): the answer ends with UnreadNote.
	Unread int
	// Thread, when set, is the client id of the thread the turn continues
	// (a Responses previous_response_id); Token is then the approval token
	// of the approval that thread waits for, if any.
	Thread, Token string
	// ClientMeta is the client's metadata for the thread (Responses).
	ClientMeta map[string]string
}

// UnreadNote says that the parts of the last message that are not text
// were not read ("" when it had none).
func (t Turn) UnreadNote() string {
	switch {
	case t.Unread == 1:
		return "*(The image or file attached to your message was not read: capgraph reads only the text of a message.)*"
	case t.Unread > 1:
		return fmt.Sprintf("*(The %d images or files attached to your message were not read: capgraph reads only the text of a message.)*", t.Unread)
	}
	return ""
}
