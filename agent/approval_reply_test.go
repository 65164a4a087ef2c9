package agent_test

import (
	"fmt"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest/openaitest"
)

// The approval role reads an unclear answer through langchaingo's openai
// provider, as real models reply: JSON in prose, in a fence, after a think
// block or with reasoning_content is read; a reply that says both, or
// nothing clear, is a rejection (default deny). Its limit comes from
// models.approval.max_tokens (50 when unset) and a reply cut off there is
// asked again with a larger one.
func TestApprovalModelRepliesAsRealModelsWrite(t *testing.T) {
	tests := []struct {
		name      string
		replies   []openaitest.Reply
		maxTokens int
		approved  bool
		limits    string
	}{
		{"clean", []openaitest.Reply{openaitest.Text(`{"approved": true}`)}, 0, true, "[50]"},
		{"prose and fence", []openaitest.Reply{openaitest.Text("Here is my decision: ```json\n{\"approved\": true}\n```\nThe operator clearly agreed.")}, 0, true, "[50]"},
		{"think block", []openaitest.Reply{openaitest.Text("<think>\n\"Sure thing\" is a yes; {\"approved\": false} would be wrong.\n</think>\n\n{\"approved\": true}")}, 0, true, "[50]"},
		{"think opened in the prompt", []openaitest.Reply{openaitest.Text("The human said go ahead.\n</think>\n{\"approved\": true}")}, 0, true, "[50]"},
		{"reasoning_content", []openaitest.Reply{{Content: `{"approved": true}`, Reasoning: "They agree."}}, 0, true, "[50]"},
		{"cut in the reasoning, then answered", []openaitest.Reply{openaitest.Cut("<think>\nThe human wrote"), openaitest.Text(`<think>ok</think>{"approved": true}`)}, 0, true,
			fmt.Sprint([]int{50, llm.GrowMaxTokens(50)})},
		{"configured max_tokens", []openaitest.Reply{openaitest.Text(`{"approved": true}`)}, 700, true, "[700]"},
		{"says both", []openaitest.Reply{openaitest.Text(`I could say {"approved": true}, but it is conditional: {"approved": false}`)}, 0, false, "[50]"},
		{"fenced rejection", []openaitest.Reply{openaitest.Text("```json\n{\"approved\": false}\n```")}, 0, false, "[50]"},
		{"no JSON", []openaitest.Reply{openaitest.Text("Probably yes.")}, 0, false, "[50]"},
		{"only reasoning", []openaitest.Reply{openaitest.Text("<think>they might mean {\"approved\": true}")}, 0, false, "[50]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := openaitest.New(t).On(nil, tc.replies...)
			models, err := llm.New(llm.Config{Roles: map[llm.Role]llm.RoleConfig{
				llm.RoleApproval: {Provider: llm.ProviderOpenAI, Model: "qwen3-32b", BaseURL: srv.BaseURL(), MaxTokens: tc.maxTokens}},
				LookupEnv: func(string) (string, bool) { return "", false }})
			if err != nil {
				t.Fatal(err)
			}
			w := writeWorld()
			cfg := withOptions(w.config(t), writesOn)
			cfg.Models = models
			a := mustAgent(t, cfg)
			ap := approvalOf(t, run(t, a, "t", "x"))
			o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "sure thing, go for it"})
			if tc.approved {
				wantAnswer(t, o, "write_x ok")
			} else {
				wantRejected(t, o)
			}
			var limits []int
			for _, r := range srv.Requests() {
				limits = append(limits, r.MaxTokens)
				if r.ResponseFormat() != "json_schema" || r.SchemaName() != "approval_decision" {
					t.Errorf("response_format %q %q, want the approval schema", r.ResponseFormat(), r.SchemaName())
				}
			}
			if fmt.Sprint(limits) != tc.limits {
				t.Errorf("max tokens sent %v, want %s", limits, tc.limits)
			}
		})
	}
}
