package agui

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/sse"
	"github.com/capgraph/capgraph/state"
)

// Over AG-UI the void message is ended and named in a CUSTOM answer_reset
// event, so a client can drop it; the retry opens a new message.
func TestAnswerReset(t *testing.T) {
	rec := httptest.NewRecorder()
	m := NewMapper(sse.Start(rec, time.Now, 0), time.Now, nil, "", "", "")
	for _, ev := range []agent.Event{
		{Type: agent.EventToken, Text: "The be"},
		{Type: agent.EventAnswerReset, Text: "stream failed"},
		{Type: agent.EventToken, Text: "The beam is 500 mA."},
		{Type: agent.EventMessage, Message: &state.Message{Role: state.RoleAssistant, Content: "The beam is 500 mA."}},
	} {
		m.Event(ev)
	}
	var (
		texts   = map[string]string{}
		order   []string
		resetID string
	)
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var e struct {
			Type, MessageID, Delta, Name string
			Value                        map[string]any
		}
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("frame %q: %v", data, err)
		}
		switch e.Type {
		case "TEXT_MESSAGE_START":
			order = append(order, e.MessageID)
		case "TEXT_MESSAGE_CONTENT":
			texts[e.MessageID] += e.Delta
		case "CUSTOM":
			if e.Name == "answer_reset" {
				resetID, _ = e.Value["messageId"].(string)
			}
		}
	}
	if len(order) != 2 {
		t.Fatalf("want two text messages (void, then retry), got %d: %s", len(order), rec.Body.String())
	}
	if resetID != order[0] || texts[order[0]] != "The be" {
		t.Errorf("answer_reset names %q, want the void message %q (%q)", resetID, order[0], texts[order[0]])
	}
	if texts[order[1]] != "The beam is 500 mA." {
		t.Errorf("retried message = %q", texts[order[1]])
	}
}
