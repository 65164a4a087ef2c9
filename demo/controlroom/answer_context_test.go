package controlroom_test

import (
	"context"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/state"
)

// chat runs several turns on one thread of one offline agent over the
// control-room plant and returns each turn's answer.
func chat(t *testing.T, inputs ...string) []string {
	t.Helper()
	reg := plantRegistry(t)
	a, err := agent.New(agent.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, in := range inputs {
		var msg *state.Message
		for ev, err := range a.Run(context.Background(), agent.TurnRequest{Thread: "chat", Input: in}) {
			if err != nil {
				t.Fatalf("%q: %v", in, err)
			}
			if ev.Type == agent.EventMessage {
				msg = ev.Message
			}
		}
		if msg == nil || msg.Kind != state.KindAnswer || !strings.HasPrefix(msg.Content, nodes.OfflineNotice) {
			t.Fatalf("%q: message %+v", in, msg)
		}
		out = append(out, msg.Content)
	}
	return out
}

// An answer reports what its own turn's steps produced, in plan order: the
// channels found before the archive statistics read from them, and nothing
// read in earlier turns.
func TestOfflineAnswerUsesThisTurnsContextInPlanOrder(t *testing.T) {
	answers := chat(t, "What is the beam current?", "What is the vacuum pressure in sector 3?", "Show me the RF cavity voltage over the last 2 hours")
	for i, a := range answers {
		t.Logf("answer %d:\n%s", i+1, a)
	}
	if strings.Contains(answers[1], "SR:DCCT:CURRENT") {
		t.Errorf("the second answer repeats the first turn's read:\n%s", answers[1])
	}
	third := answers[2]
	for _, earlier := range []string{"SR:DCCT:CURRENT", "SR:C03:VAC"} {
		if strings.Contains(third, earlier) {
			t.Errorf("the third answer repeats %s from an earlier turn:\n%s", earlier, third)
		}
	}
	lines := strings.Split(third, "\n•")
	if len(lines) < 3 {
		t.Fatalf("want a channel line and an archive line:\n%s", third)
	}
	if !strings.Contains(lines[1], "SR:RF:CAV1:VOLT") || strings.Contains(lines[1], "mean") || !strings.Contains(lines[2], "mean") {
		t.Errorf("want the channel-finding line before the archive summary:\n%s", third)
	}
}

// Short follow-ups offline: each keeps the subject of the message that named
// it, answers from its own steps, and does not repeat earlier turns' reads.
func TestOfflineFollowUpsAnswerFromTheirOwnSteps(t *testing.T) {
	answers := chat(t, "find the beam current channel", "read it", "and its history?")
	for i, a := range answers {
		t.Logf("answer %d:\n%s", i+1, a)
	}
	if !strings.Contains(answers[0], "SR:DCCT:CURRENT") {
		t.Errorf("first answer lacks the channel:\n%s", answers[0])
	}
	if !strings.Contains(answers[1], "SR:DCCT:CURRENT = ") || !strings.Contains(answers[1], "mA") {
		t.Errorf("\"read it\" did not read the beam current:\n%s", answers[1])
	}
	if !strings.Contains(answers[2], "mean") || !strings.Contains(answers[2], "SR:DCCT:CURRENT") {
		t.Errorf("\"and its history?\" did not fetch the beam current's history:\n%s", answers[2])
	}
	if strings.Contains(answers[2], "SR:DCCT:CURRENT = ") {
		t.Errorf("the history answer repeats the previous turn's read:\n%s", answers[2])
	}
}
