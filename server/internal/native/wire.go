package native

import (
	"net/http"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/state"
)

// CreateThreadRequest is POST /api/threads' body (all optional).
type CreateThreadRequest struct {
	ID       string            `json:"id"`
	Metadata map[string]string `json:"metadata"`
}

// ListPage is a page of a list: the items, whether more follow, and the
// cursor of the next page.
func ListPage(name string, items any, next string) map[string]any {
	out := map[string]any{name: items, "has_more": next != ""}
	if next != "" {
		out["next_cursor"] = next
	}
	return out
}

// ThreadState is the state route's answer.
type ThreadState struct {
	Thread string          `json:"thread_id"`
	Status agent.RunStatus `json:"status,omitempty"`
	State  *state.State    `json:"state"`
}

// StartRunRequest is POST /api/threads/{thread}/runs' body.
type StartRunRequest struct {
	Input string `json:"input"`
	// Options may only tighten the agent's configured options (403
	// otherwise, unless the key may raise the setting).
	Options *agent.TurnOptions `json:"options"`
	// Stream answers with the run's SSE event stream instead of 202.
	Stream bool `json:"stream"`
}

// WantsStream reports whether a request asks for the event stream: its
// stream flag, or an Accept of text/event-stream.
func WantsStream(r *http.Request, flag bool) bool {
	return flag || strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// ApprovalRequest is POST /api/threads/{thread}/approval's body.
type ApprovalRequest struct {
	ApprovalID string      `json:"approval_id"`
	Approved   *bool       `json:"approved"`
	Text       string      `json:"text"`
	Plan       *state.Plan `json:"plan"`
	Stream     bool        `json:"stream"`
}

// RunInfo is the JSON view of a run.
type RunInfo struct {
	ID       string          `json:"id"`
	Thread   string          `json:"thread_id"`
	Started  time.Time       `json:"started_at"`
	Finished bool            `json:"finished"`
	Status   agent.RunStatus `json:"status,omitempty"`
	Error    string          `json:"error,omitempty"`
	LastSeq  int             `json:"last_seq"`
}
