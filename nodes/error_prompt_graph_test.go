package nodes_test

import (
	"strings"
	"testing"

	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/prompts"
	"github.com/capgraph/capgraph/state"
)

// An application's override of the "error" template (nodes.Config.Prompts)
// reaches the error node's explanation call on the compiled graph.
func TestGraphErrorTemplateOverrideReachesTheErrorNode(t *testing.T) {
	set, err := prompts.New(prompts.Config{Overrides: map[string]string{prompts.ErrorExplanation: "CONTROL ROOM HELPDESK. {{.Task}}\n{{.Report}}"}})
	if err != nil {
		t.Fatal(err)
	}
	m := llmtest.New().
		Script(llm.RoleTaskExtraction, llmtest.Text(taskReply)).
		Script(llm.RoleClassifier, llmtest.Fail(&llm.Error{Kind: llm.ErrAuth, Role: llm.RoleClassifier, StatusCode: 401})).
		Script(llm.RoleError, llmtest.Text("The classifier's API key was rejected; ask an administrator to check it."))
	cfg := config(smallPlant(t), m, "")
	cfg.Models = m.Only(append(nodeRoles, llm.RoleError)...)
	cfg.Nodes.Prompts = set
	o := runTurn(t, cfg, "beam current?")
	if msg := o.message(); msg == nil || msg.Kind != state.KindErrorReport || !strings.Contains(msg.Content, "ask an administrator") {
		t.Fatalf("message %+v", msg)
	}
	calls := m.CallsFor(llm.RoleError)
	if len(calls) != 1 || !strings.HasPrefix(calls[0].Request.Messages[0].Content, "CONTROL ROOM HELPDESK. What is the beam current?") {
		t.Fatalf("error calls %+v", calls)
	}
}
