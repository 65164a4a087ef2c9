package chatanswer

import (
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
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
			"The be" + AnswerResetNote + "The beam is 500 mA."},
		{"reset then error report", []agent.Event{tok("The be"), reset, msg("⚠️ ERROR REPORT: respond failed")},
			"The be" + AnswerResetNote + "⚠️ ERROR REPORT: respond failed"},
		{"error report after streamed text without reset", []agent.Event{tok("partial"), msg("⚠️ ERROR REPORT")},
			"partial\n\n⚠️ ERROR REPORT"},
		{"reset before any token", []agent.Event{reset, msg("answer")}, "answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Renderer
			var got strings.Builder
			for _, ev := range tt.events {
				for _, p := range c.Render(ev) {
					got.WriteString(p.Content)
				}
			}
			if got.String() != tt.want {
				t.Errorf("content = %q, want %q", got.String(), tt.want)
			}
		})
	}
}
