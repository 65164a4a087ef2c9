package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/server/internal/openai"
	"github.com/capgraph/capgraph/server/internal/responses"
)

// The usage a chat client gets is the sum of the turn's model calls, with
// their prompt and completion tokens: a real agent whose response model
// is cut at its token limit and asked again makes two calls (120+5 and
// 120+9 tokens), on every API; offline (no model) it is 0.
func TestChatUsageSumsModelCalls(t *testing.T) {
	var mu sync.Mutex
	n := 0
	m := llmtest.New().On(llmtest.RoleIs(llm.RoleResponse), func(llm.Request) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n%2 == 1 {
			return llmtest.Reply{Text: "The beam current is", Finish: llm.FinishLength, Usage: llm.Usage{PromptTokens: 120, CompletionTokens: 5}}
		}
		return llmtest.Reply{Chunks: []string{"The beam current ", "is 401.5 mA."}, Usage: llm.Usage{PromptTokens: 120, CompletionTokens: 9}}
	}).Only(llm.RoleResponse)
	a, err := agent.New(agent.Config{Registry: newRegistry(t, readBeamCurrent(t)), Models: m})
	if err != nil {
		t.Fatal(err)
	}
	env := newTestEnv(t, func(c *Config) { c.Runner = a })
	want := openai.Usage{PromptTokens: 240, CompletionTokens: 14, TotalTokens: 254}
	q := "What is the beam current of the storage ring?"

	resp, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user(q)))
	var cc openai.Completion
	if err := json.Unmarshal(body, &cc); resp.StatusCode != http.StatusOK || err != nil || cc.Usage == nil {
		t.Fatalf("%d %v %s", resp.StatusCode, err, body)
	}
	if *cc.Usage != want || !strings.Contains(cc.Choices[0].Message.Content, "401.5") {
		t.Errorf("non-stream usage %+v, want %+v (content %q)", *cc.Usage, want, cc.Choices[0].Message.Content)
	}

	b := chatBody("capgraph", true, user(q))
	b["stream_options"] = map[string]any{"include_usage": true}
	_, body = env.do(t, "POST", "/v1/chat/completions", keyAlice, b)
	if v := parseLikeOpenWebUI(t, string(body)); v.Usage == nil || v.Usage.PromptTokens != want.PromptTokens ||
		v.Usage.CompletionTokens != want.CompletionTokens || v.Usage.TotalTokens != want.TotalTokens {
		t.Errorf("stream usage %+v, want %+v", v.Usage, want)
	}

	resp, body = env.do(t, "POST", "/v1/responses", keyAlice, map[string]any{"model": "capgraph", "input": q})
	var r struct {
		Usage responses.Usage `json:"usage"`
	}
	if err := json.Unmarshal(body, &r); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("%d %v %s", resp.StatusCode, err, body)
	}
	if r.Usage.InputTokens != 240 || r.Usage.OutputTokens != 14 || r.Usage.TotalTokens != 254 {
		t.Errorf("responses usage %+v, want 240 in, 14 out, 254", r.Usage)
	}

	// Offline: no model call, no tokens.
	off, err := agent.New(agent.Config{Registry: newRegistry(t, readBeamCurrent(t))})
	if err != nil {
		t.Fatal(err)
	}
	offEnv := newTestEnv(t, func(c *Config) { c.Runner = off })
	_, body = offEnv.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user(q)))
	cc = openai.Completion{}
	if err := json.Unmarshal(body, &cc); err != nil || cc.Usage == nil || *cc.Usage != (openai.Usage{}) {
		t.Errorf("offline usage %+v (%v): want 0", cc.Usage, err)
	}
}
