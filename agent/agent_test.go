package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/state"
)

func TestHappyPath(t *testing.T) {
	w := newWorld("read_a", "read_b")
	a := mustAgent(t, w.config(t))
	o := run(t, a, "t1", "hello")
	if o.err != nil {
		t.Fatalf("err %v", o.err)
	}
	if last := o.last(); last.Type != agent.EventDone || last.Status != agent.RunAnswered {
		t.Fatalf("last event %+v", last)
	}
	m := o.message()
	if m == nil || m.Kind != state.KindAnswer || !strings.Contains(m.Content, "read_a ok") || !strings.Contains(m.Content, "read_b ok") {
		t.Fatalf("message %+v", m)
	}
	for i, e := range o.events {
		if e.Seq != i+1 || e.Thread != "t1" {
			t.Fatalf("event %d has seq %d thread %q", i, e.Seq, e.Thread)
		}
	}
	if n := o.count(agent.EventStepStart); n != 2 {
		t.Fatalf("step starts %d", n)
	}
	s, st, err := a.State(context.Background(), "t1")
	if err != nil || st != agent.RunAnswered || !s.Turn.Done {
		t.Fatalf("state %v %v %+v", err, st, s.Turn)
	}
	if n := countAssistant(s, s.Turn.Number); n != 1 {
		t.Fatalf("%d assistant messages", n)
	}
	// A second turn keeps the context and the conversation.
	o = run(t, a, "t1", "again")
	if o.err != nil {
		t.Fatal(o.err)
	}
	s, _, _ = a.State(context.Background(), "t1")
	if s.Turn.Number != 2 || len(s.Messages) != 4 {
		t.Fatalf("turn %d messages %d", s.Turn.Number, len(s.Messages))
	}
}

func countAssistant(s state.State, turn int) int {
	n := 0
	for _, m := range s.Messages {
		if m.Role == state.RoleAssistant && m.Turn == turn {
			n++
		}
	}
	return n
}
