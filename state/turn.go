package state

import (
	"slices"
	"time"
)

// NewTurn returns the state for a new turn: the conversation and context of
// prev are kept, the user's message is appended, and everything else is reset.
func NewTurn(prev State, input string, opts Options, now time.Time) State {
	n := prev.Turn.Number + 1
	s := State{
		Messages: append(slices.Clip(prev.Messages), Message{Role: RoleUser, Content: input, Turn: n, Time: now}),
		Context:  prev.Context,
		Turn:     Turn{Number: n, StartedAt: now, Input: input, Options: opts},
	}
	return s
}

// LastAssistant returns the last assistant message, if any.
func (s State) LastAssistant() (Message, bool) {
	for i := len(s.Messages) - 1; i >= 0; i-- {
		if s.Messages[i].Role == RoleAssistant {
			return s.Messages[i], true
		}
	}
	return Message{}, false
}

// History returns the messages before the current turn's user message.
func (s State) History() []Message {
	for i := len(s.Messages) - 1; i >= 0; i-- {
		if s.Messages[i].Role == RoleUser && s.Messages[i].Turn == s.Turn.Number {
			return s.Messages[:i]
		}
	}
	return s.Messages
}
