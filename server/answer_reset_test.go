package server

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

// A respond attempt that fails part way leaves streamed text behind. The
// final message must still reach the user when it is not what was streamed
// (an error report after the retries failed), and never be shown twice when
// it is.
func TestChatRendererAnswerReset(t *testing.T) {
	msg := func(s string) agent.Event {
		return agent.Event{Type: agent.EventMessage, Message: &state.Message{Role: state.RoleAssistant, Content: s}}
	}
	tok := func(s string) agent.Event { return agent.Event{Type: agent.EventToken, Text: s} }
	reset := agent.Event{Type: agent.EventAnswerReset, Text: "stream failed"}
	tests := []struct {
		name   string
		events []agent.Event
		want   string
	}{
		{"streamed then the same message", []agent.Event{tok("The beam "), tok("is 500 mA."), msg("The beam is 500 mA.")}, "The beam is 500 mA."},
		{"message only", []agent.Event{msg("The beam is 500 mA.")}, "The beam is 500 mA."},
		{"streamed beginning only", []agent.Event{tok("The beam "), msg("The beam is 500 mA.")}, "The beam is 500 mA."},
		{"reset then full retry", []agent.Event{tok("The be"), reset, tok("The beam is 500 mA."), msg("The beam is 500 mA.")},
			"The be" + answerResetNote + "The beam is 500 mA."},
		{"reset then error report", []agent.Event{tok("The be"), reset, msg("⚠️ ERROR REPORT: respond failed")},
			"The be" + answerResetNote + "⚠️ ERROR REPORT: respond failed"},
		{"error report after streamed text without reset", []agent.Event{tok("partial"), msg("⚠️ ERROR REPORT")},
			"partial\n\n⚠️ ERROR REPORT"},
		{"reset before any token", []agent.Event{reset, msg("answer")}, "answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c chatRenderer
			var got strings.Builder
			for _, ev := range tt.events {
				for _, p := range c.render(ev) {
					got.WriteString(p.Content)
				}
			}
			if got.String() != tt.want {
				t.Errorf("content = %q, want %q", got.String(), tt.want)
			}
		})
	}
}

// Over AG-UI the void message is ended and named in a CUSTOM answer_reset
// event, so a client can drop it; the retry opens a new message.
func TestAGUIAnswerReset(t *testing.T) {
	rec := httptest.NewRecorder()
	s := &Server{cfg: Config{Now: time.Now}}
	m := &aguiMapper{s: s, sse: sse.Start(rec, time.Now, 0), steps: map[string]bool{}}
	for _, ev := range []agent.Event{
		{Type: agent.EventToken, Text: "The be"},
		{Type: agent.EventAnswerReset, Text: "stream failed"},
		{Type: agent.EventToken, Text: "The beam is 500 mA."},
		{Type: agent.EventMessage, Message: &state.Message{Role: state.RoleAssistant, Content: "The beam is 500 mA."}},
	} {
		m.event(ev)
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
