package nodes_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/nodes"
)

// TestGraphLoopbackOpenAIRateLimitReachesClassifier drives the classifier
// through langchaingo's openai provider against a loopback OpenAI-compatible
// server: the first call gets 429 with retry-after-ms, and the agent's retry
// waits exactly the server's delay before the second call succeeds. Other
// roles have no model and run offline.
func TestGraphLoopbackOpenAIRateLimitReachesClassifier(t *testing.T) {
	var calls atomic.Int32
	var callTimes [2]atomic.Int64 // unix ns of the first two calls
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if n <= 2 {
			callTimes[n-1].Store(time.Now().UnixNano())
		}
		if n == 1 {
			w.Header().Set("Retry-After-Ms", "80")
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte(`{"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}`))
			return
		}
		body, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": `{"capabilities": ["channel_read"]}`}}},
			"usage": map[string]any{"prompt_tokens": 120, "completion_tokens": 8, "total_tokens": 128}})
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	defer srv.Close()
	models, err := llm.New(llm.Config{Roles: map[llm.Role]llm.RoleConfig{
		llm.RoleClassifier: {Provider: llm.ProviderOpenAI, Model: "m", BaseURL: srv.URL + "/v1"}}})
	if err != nil {
		t.Fatal(err)
	}
	o := runTurn(t, agent.Config{Registry: smallPlant(t), Models: models, Nodes: everyCall(nodes.Config{}), InfraRetry: map[string]capabilities.RetryPolicy{}}, "What is the beam current?")
	checkAnswer(t, o, "SR:DCCT:CURRENT = 500.2 mA")
	retries := o.of(agent.EventRetry)
	// The agent reports the delay left when it schedules the retry: at most
	// the server's 80ms (how much less depends on the machine's load).
	if len(retries) != 1 || retries[0].Retry.Delay > 80*time.Millisecond || retries[0].Node != "classifier" {
		t.Fatalf("retry events %d (%+v), want one classifier retry after the server's 80ms", len(retries), retries)
	}
	// The retry never comes before the server asked: a lower bound, which
	// load can only lengthen.
	if gap := time.Duration(callTimes[1].Load() - callTimes[0].Load()); gap < 80*time.Millisecond {
		t.Errorf("the retry came %v after the rate-limited call, before the server's Retry-After-Ms 80", gap)
	}
	if !strings.Contains(retries[0].Retry.Reason, "rate limited") {
		t.Errorf("retry reason %q", retries[0].Retry.Reason)
	}
	if calls.Load() != 2 {
		t.Errorf("server saw %d calls", calls.Load())
	}
	var usage *agent.Usage
	for _, e := range o.events {
		if e.Type == agent.EventUsage {
			usage = e.Usage
		}
	}
	if usage == nil || usage.TotalTokens != 128 {
		t.Errorf("usage %+v, want the provider's 128 tokens", usage)
	}
}
