package nodes_test

import (
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
)

// shown is what a frontend following the documented rule displays: it
// appends every token and drops what it has on an answer_reset.
func shown(events []agent.Event) string {
	var b strings.Builder
	for _, e := range events {
		switch e.Type {
		case agent.EventToken:
			b.WriteString(e.Text)
		case agent.EventAnswerReset:
			b.Reset()
		}
	}
	return b.String()
}

// A response stream failing part way is retried; the partial text is voided
// by an answer_reset before the retry streams the answer again, so a
// frontend shows the answer once.
func TestGraphRespondFailingMidStreamResetsTheAnswer(t *testing.T) {
	m := llmtest.New().
		Script(llm.RoleTaskExtraction, llmtest.Text(taskReply)).
		Script(llm.RoleClassifier, llmtest.Text(selectReply)).
		Script(llm.RoleOrchestrator, llmtest.Text(goodPlanReply)).
		Script(llm.RoleResponse,
			llmtest.FailAfter(&llm.Error{Kind: llm.ErrServer, Role: llm.RoleResponse, StatusCode: 502}, "The beam ", "current is 5"),
			llmtest.Stream("The beam current ", "is 500.2 mA."))
	cfg := config(smallPlant(t), m, "")
	cfg.Nodes.RetryPolicy = fastRetry()
	o := runTurn(t, cfg, "beam current?")
	checkAnswer(t, o, answerReply)
	resets := o.of(agent.EventAnswerReset)
	if len(resets) != 1 || resets[0].Node != "respond" || !strings.Contains(resets[0].Text, "HTTP 502") {
		t.Fatalf("answer resets %+v, want one from respond naming the failure", resets)
	}
	if got := shown(o.events); got != answerReply {
		t.Errorf("a frontend shows %q, want %q", got, answerReply)
	}
	// The reset comes after the partial tokens and before the retry's.
	var order []string
	for _, e := range o.events {
		if e.Type == agent.EventToken || e.Type == agent.EventAnswerReset {
			order = append(order, string(e.Type)+":"+e.Text)
		}
	}
	if len(order) != 5 || order[2] != "answer_reset:"+resets[0].Text {
		t.Errorf("token/reset order %q", order)
	}
}

// A stream that fails before any chunk needs no reset.
func TestGraphRespondFailingBeforeStreamingSendsNoReset(t *testing.T) {
	m := llmtest.New().
		Script(llm.RoleTaskExtraction, llmtest.Text(taskReply)).
		Script(llm.RoleClassifier, llmtest.Text(selectReply)).
		Script(llm.RoleOrchestrator, llmtest.Text(goodPlanReply)).
		Script(llm.RoleResponse, llmtest.Fail(&llm.Error{Kind: llm.ErrServer, Role: llm.RoleResponse, StatusCode: 502}),
			llmtest.Stream("The beam current ", "is 500.2 mA."))
	cfg := config(smallPlant(t), m, "")
	cfg.Nodes.RetryPolicy = fastRetry()
	o := runTurn(t, cfg, "beam current?")
	checkAnswer(t, o, answerReply)
	if r := o.of(agent.EventAnswerReset); len(r) != 0 {
		t.Errorf("resets %+v, want none", r)
	}
}
