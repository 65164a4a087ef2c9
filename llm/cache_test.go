package llm_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest/openaitest"
)

// The prompt tokens an OpenAI-compatible server read from its cache
// (usage.prompt_tokens_details.cached_tokens) are reported, streamed or not.
func TestOpenAICachedPromptTokensReported(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		srv := openaitest.New(t).On(nil, openaitest.Reply{Content: "The beam current is 500 mA.", PromptTokens: 2000, CompletionTokens: 9, CachedTokens: 1792})
		m, _ := models(t, srv.BaseURL(), nil, "").For(llm.RoleResponse)
		req := llm.Request{Role: llm.RoleResponse, Messages: []llm.Message{{Role: "system", Content: "answer"}, {Role: "user", Content: "beam current?"}}}
		if streamed {
			req.OnChunk = func(context.Context, string) error { return nil }
		}
		resp, err := llm.Ask(context.Background(), m, req, llm.AskOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := (llm.Usage{PromptTokens: 2000, CompletionTokens: 9, CachedPromptTokens: 1792}); resp.Usage != want {
			t.Errorf("streamed %v: usage %+v, want %+v", streamed, resp.Usage, want)
		}
	}
}

// anthropicServer answers the Messages API with one text reply and the
// usage given, and keeps each request's body.
type anthropicServer struct {
	usage  map[string]any
	mu     sync.Mutex
	bodies []map[string]any
}

func (a *anthropicServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil || r.URL.Path != "/v1/messages" {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	a.bodies = append(a.bodies, body)
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
		"content": []any{map[string]any{"type": "text", "text": "The beam current is 500 mA."}}, "stop_reason": "end_turn", "usage": a.usage})
}

func anthropicModel(t *testing.T, url string, cache *bool) llm.Model {
	t.Helper()
	set, err := llm.New(llm.Config{Roles: map[llm.Role]llm.RoleConfig{llm.RoleDefault: {Provider: llm.ProviderAnthropic, Model: "claude-test",
		BaseURL: url + "/v1", PromptCache: cache}}, LookupEnv: func(string) (string, bool) { return "test-key", true }})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := set.For(llm.RoleResponse)
	return m
}

// For Anthropic the system prompt — the part of every prompt that stays
// the same from turn to turn — goes out as a text block marked for the
// prompt cache, and the tokens read from and written to the cache count as
// prompt tokens, those read as cached ones. prompt_cache: false sends the
// plain string.
func TestAnthropicSystemPromptMarkedForCaching(t *testing.T) {
	srv := &anthropicServer{usage: map[string]any{"input_tokens": 12, "output_tokens": 9, "cache_read_input_tokens": 1800, "cache_creation_input_tokens": 0}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	req := llm.Request{Role: llm.RoleResponse, Messages: []llm.Message{{Role: "system", Content: "You answer operators."}, {Role: "user", Content: "beam current?"}}}
	resp, err := llm.Ask(context.Background(), anthropicModel(t, hs.URL, nil), req, llm.AskOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (llm.Usage{PromptTokens: 1812, CompletionTokens: 9, CachedPromptTokens: 1800}); resp.Usage != want {
		t.Errorf("usage %+v, want %+v", resp.Usage, want)
	}
	off := false
	if _, err := llm.Ask(context.Background(), anthropicModel(t, hs.URL, &off), req, llm.AskOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(srv.bodies) != 2 {
		t.Fatalf("%d requests", len(srv.bodies))
	}
	blocks, ok := srv.bodies[0]["system"].([]any)
	if !ok || len(blocks) != 1 {
		t.Fatalf("system %#v, want one text block", srv.bodies[0]["system"])
	}
	b := blocks[0].(map[string]any)
	if b["type"] != "text" || b["text"] != "You answer operators." || b["cache_control"].(map[string]any)["type"] != "ephemeral" {
		t.Errorf("system block %v", b)
	}
	if msgs := srv.bodies[0]["messages"].([]any); len(msgs) != 1 {
		t.Errorf("messages %v: the user message alone", msgs)
	}
	if s, ok := srv.bodies[1]["system"].(string); !ok || s != "You answer operators." {
		t.Errorf("prompt_cache false: system %#v, want the plain string", srv.bodies[1]["system"])
	}
}
