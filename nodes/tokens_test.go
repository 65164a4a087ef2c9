package nodes_test

import (
	"context"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/state"
)

// used is a scripted reply with a fixed token count, so budgets are exact.
func used(r llmtest.Reply, n int) llmtest.Reply {
	r.Usage = llm.Usage{PromptTokens: n - 1, CompletionTokens: 1}
	return r
}

func finalState(t *testing.T, a *agent.Agent, thread string) state.State {
	t.Helper()
	s, _, err := a.Graph().State(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func drain(t *testing.T, events func(func(agent.Event, error) bool)) []agent.Event {
	t.Helper()
	var out []agent.Event
	for ev, err := range events {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// Every model call of a turn counts in its token budget: a plan reply that
// was rejected, the retry's plan, the classifier, the answer, and the error
// node's explanation.
func TestEveryCallCountsInTheTurnsTokens(t *testing.T) {
	t.Run("rejected plan and the retry", func(t *testing.T) {
		m := llmtest.New().
			Script(llm.RoleTaskExtraction, used(llmtest.Text(taskReply), 10)).
			Script(llm.RoleClassifier, used(llmtest.Text(selectReply), 20)).
			Script(llm.RoleOrchestrator, used(llmtest.Text("Sure! Here is the plan: steps 1 and 2."), 100), used(llmtest.Text(goodPlanReply), 200)).
			Script(llm.RoleResponse, used(llmtest.Text(answerReply), 40))
		cfg := config(smallPlant(t), m, "")
		cfg.Nodes.RetryPolicy = fastRetry()
		a, err := agent.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		drain(t, a.Run(context.Background(), agent.TurnRequest{Thread: "t", Input: "beam current?"}))
		c := finalState(t, a, "t").Turn.Control
		want := map[string]int{"task_extraction": 10, "classifier": 20, "orchestrator": 300, "response": 40}
		for role, n := range want {
			if c.TokensByRole[role] != n {
				t.Errorf("%s tokens %d, want %d (all: %v)", role, c.TokensByRole[role], n, c.TokensByRole)
			}
		}
		if c.Tokens != 370 {
			t.Errorf("turn tokens %d, want 370", c.Tokens)
		}
	})
	t.Run("error node explanation", func(t *testing.T) {
		m := llmtest.New().
			Script(llm.RoleTaskExtraction, used(llmtest.Text(taskReply), 10)).
			Script(llm.RoleClassifier, used(llmtest.Text(selectReply), 20)).
			Script(llm.RoleOrchestrator, used(llmtest.Text(goodPlanReply), 200)).
			Script(llm.RoleResponse, llmtest.Fail(&llm.Error{Kind: llm.ErrAuth, Role: llm.RoleResponse, StatusCode: 401})).
			Script(llm.RoleError, used(llmtest.Text("The answer could not be written because the key was rejected."), 50))
		cfg := config(smallPlant(t), m, "")
		cfg.Models = m.Only(append(nodeRoles, llm.RoleError)...)
		a, err := agent.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		drain(t, a.Run(context.Background(), agent.TurnRequest{Thread: "t", Input: "beam current?"}))
		s := finalState(t, a, "t")
		if m, _ := s.LastAssistant(); m.Kind != state.KindErrorReport {
			t.Fatalf("message %+v", m)
		}
		if c := s.Turn.Control; c.TokensByRole["error"] != 50 || c.Tokens != 280 {
			t.Errorf("tokens %d by role %v, want error 50 and 280 in all", c.Tokens, c.TokensByRole)
		}
	})
}

// The approval model's reading of a free-text answer, when it decides (a
// refusal), counts in the turn's tokens, once.
func TestApprovalInterpretationCountsInTheTurnsTokens(t *testing.T) {
	reg := smallPlant(t)
	write := capabilities.Define(capabilities.Definition{Name: "channel_write", Provides: []string{"WRITE_RESULT"},
		Description: "Write a setpoint.",
		Approval:    func(capabilities.Step) (bool, string) { return true, "write 105 A to Q1" },
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("WRITE_RESULT", true, "Q1 set to 105 A"), nil
		}})
	if err := reg.Register(write); err != nil {
		t.Fatal(err)
	}
	m := llmtest.New().
		Script(llm.RoleTaskExtraction, used(llmtest.Text(`{"task": "set Q1 to 105 A", "depends_on_chat_history": false}`), 10)).
		Script(llm.RoleClassifier, used(llmtest.Text(`{"capabilities": ["channel_write"]}`), 20)).
		Script(llm.RoleOrchestrator, used(llmtest.Text(`{"steps": [{"context_key": "w", "capability": "channel_write", "task_objective": "set Q1 to 105 A", "expected_output": "WRITE_RESULT"}, {"context_key": "a", "capability": "respond", "task_objective": "answer"}]}`), 200)).
		Script(llm.RoleApproval, used(llmtest.Text(`{"decision": "reject"}`), 30))
	cfg := config(reg, m, "")
	cfg.Models = m.Only(append(nodeRoles, llm.RoleApproval)...)
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ev := drain(t, a.Run(context.Background(), agent.TurnRequest{Thread: "t", Input: "set Q1 to 105 A"}))
	if last := ev[len(ev)-1]; last.Status != agent.RunInterrupted {
		t.Fatalf("want the run to wait for approval, ended %+v", last)
	}
	// The model may only read a free-text answer as a refusal (or as
	// nothing): here it refuses, and its reading counts.
	drain(t, a.Resume(context.Background(), "t", agent.Answer{Text: "not while the beam is on, leave it"}))
	s := finalState(t, a, "t")
	if m, _ := s.LastAssistant(); m.Kind != state.KindRejected {
		t.Fatalf("message %+v", m)
	}
	if c := s.Turn.Control; c.TokensByRole["approval"] != 30 || c.Tokens != 260 {
		t.Errorf("tokens %d by role %v, want approval 30 and 260 in all", c.Tokens, c.TokensByRole)
	}
	if len(m.CallsFor(llm.RoleApproval)) != 1 {
		t.Errorf("approval calls %d", len(m.CallsFor(llm.RoleApproval)))
	}
}
