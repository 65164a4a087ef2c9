package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/openai"
)

// openWebUIView is what Open WebUI's middleware makes of our stream
// (frontends.md §2.1): only "data:" lines, JSON each, [DONE] ends; an
// "event" key goes to the status line; "usage" updates stats; no choices +
// "error" shows the error; reasoning_content opens a reasoning block;
// tool_calls would be executed by Open WebUI itself, so must never appear.
type openWebUIView struct {
	Content, Reasoning string
	Statuses           []openai.StatusData
	Usage              *openai.Usage
	Error              string
	Done               bool
	ReasoningBlocks    int // reasoning after content opens a new block
}

func parseLikeOpenWebUI(t *testing.T, body string) openWebUIView {
	t.Helper()
	var v openWebUIView
	inReasoning := false
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data:") {
			if line != "" {
				t.Errorf("non-data line %q (go-openai breaks on these)", line)
			}
			continue
		}
		data := strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		if data == "[DONE]" {
			v.Done = true
			continue
		}
		if v.Done {
			t.Errorf("frame after [DONE]: %s", data)
		}
		var f map[string]json.RawMessage
		if err := json.Unmarshal([]byte(data), &f); err != nil {
			t.Fatalf("frame is not JSON: %s", data)
		}
		if ev, ok := f["event"]; ok {
			var se openai.StatusEvent
			if err := json.Unmarshal(ev, &se); err != nil || se.Type != "status" {
				t.Errorf("bad event frame %s", ev)
			}
			var raw struct {
				Data map[string]any `json:"data"`
			}
			_ = json.Unmarshal(ev, &raw)
			if _, ok := raw.Data["description"].(string); !ok {
				t.Errorf("status without description: %s", ev)
			}
			if _, ok := raw.Data["done"].(bool); !ok {
				t.Errorf("status without done: %s", ev)
			}
			v.Statuses = append(v.Statuses, se.Data)
			continue
		}
		if e, ok := f["error"]; ok {
			if _, has := f["choices"]; has {
				t.Errorf("error frame with choices: %s", data)
			}
			var ae apierror.Body
			_ = json.Unmarshal(e, &ae)
			v.Error = ae.Message
			continue
		}
		if u, ok := f["usage"]; ok && string(u) != "null" {
			v.Usage = &openai.Usage{}
			_ = json.Unmarshal(u, v.Usage)
		}
		var ch struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta map[string]json.RawMessage `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil || ch.Object != "chat.completion.chunk" {
			t.Errorf("not a chunk: %s", data)
		}
		for _, c := range ch.Choices {
			if _, ok := c.Delta["tool_calls"]; ok {
				t.Errorf("tool_calls in delta: Open WebUI would execute them: %s", data)
			}
			var s string
			if r, ok := c.Delta["reasoning_content"]; ok {
				_ = json.Unmarshal(r, &s)
				if !inReasoning {
					v.ReasoningBlocks++
					inReasoning = true
				}
				v.Reasoning += s
			}
			if r, ok := c.Delta["content"]; ok {
				s = ""
				_ = json.Unmarshal(r, &s)
				if s != "" {
					inReasoning = false
				}
				v.Content += s
			}
		}
	}
	return v
}

// foldLikeOpenWebUI is how Open WebUI stores an assistant message it
// streamed: the reasoning folded into a <details> block before the answer.
func foldLikeOpenWebUI(v openWebUIView) string {
	var b strings.Builder
	b.WriteString(`<details type="reasoning" done="true" duration="1"><summary>Thought for 1 seconds</summary>` + "\n")
	for _, l := range strings.Split(strings.TrimRight(v.Reasoning, "\n"), "\n") {
		b.WriteString("> " + l + "\n")
	}
	b.WriteString("</details>\n")
	b.WriteString(v.Content)
	return b.String()
}

// openWebUIRequest is the shape Open WebUI sends (stored middleware,
// frontends.md §2.1 and §9): full history, usage forced on, user as an
// object, reasoning effort, cache_control on the last message, its
// forwarded identity headers.
func openWebUIRequest(history []map[string]any, last string) map[string]any {
	msgs := append([]map[string]any{{"role": "system", "content": "You are a helpful assistant."}}, history...)
	msgs = append(msgs, map[string]any{"role": "user", "content": []map[string]any{
		{"type": "text", "text": last, "cache_control": map[string]any{"type": "ephemeral"}},
	}})
	return map[string]any{
		"model": "capgraph", "stream": true, "messages": msgs,
		"stream_options": map[string]any{"include_usage": true},
		"user":           map[string]any{"name": "Ada", "id": "u-1", "email": "ada@example.org", "role": "user"},
		"reasoning":      map[string]any{"effort": "medium"},
		"temperature":    0.7,
		"tools": []map[string]any{{"type": "function", "function": map[string]any{"name": "web_search",
			"parameters": map[string]any{"type": "object"}}}},
	}
}

var openWebUIHeaders = []string{"X-OpenWebUI-User-Name", "Ada", "X-OpenWebUI-User-Id", "u-1",
	"X-OpenWebUI-User-Email", "ada@example.org", "X-OpenWebUI-User-Role", "user", "X-OpenWebUI-Chat-Id", "c-123"}

func TestContractOpenWebUI(t *testing.T) {
	env := newTestEnv(t, nil)
	// Connection check and model list.
	resp, body := env.do(t, "GET", "/v1/models", keyWebUI, nil)
	if resp.StatusCode != http.StatusOK || strings.Contains(string(body), "pipeline") {
		t.Fatalf("models %d %s", resp.StatusCode, body)
	}
	// A question.
	resp, body = env.do(t, "POST", "/v1/chat/completions", keyWebUI, openWebUIRequest(nil, "What is the beam current?"), openWebUIHeaders...)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	v := parseLikeOpenWebUI(t, string(body))
	if !v.Done || v.Content != "Beam current is 500 mA." || v.Usage == nil || v.Usage.TotalTokens != 14 || v.ReasoningBlocks != 1 {
		t.Fatalf("view %+v", v)
	}
	if last := v.Statuses[len(v.Statuses)-1]; last.Description != "" || !last.Done {
		t.Fatalf("status line not cleared: %+v", v.Statuses)
	}
	if fmt.Sprint(v.Statuses[:3]) != "[{Extracting the task false} {Selecting capabilities false} {Planning false}]" {
		t.Fatalf("status lines %+v", v.Statuses)
	}
	// An approval, answered in the same chat after Open WebUI refolded the
	// assistant message.
	_, body = env.do(t, "POST", "/v1/chat/completions", keyWebUI, openWebUIRequest(nil, "write 1.5 A to SR:HCM1"), openWebUIHeaders...)
	ask := parseLikeOpenWebUI(t, string(body))
	if !strings.Contains(ask.Content, "Approval ID: AP-") || !strings.Contains(ask.Content, "SR:HCM1") {
		t.Fatalf("approval %+v", ask)
	}
	hist := []map[string]any{user("write 1.5 A to SR:HCM1"), assistant(foldLikeOpenWebUI(ask))}
	_, body = env.do(t, "POST", "/v1/chat/completions", keyWebUI, openWebUIRequest(hist, "yes"), openWebUIHeaders...)
	done := parseLikeOpenWebUI(t, string(body))
	if done.Content != "SR:HCM1 is now 1.5 A." || env.runner.writes() != 1 {
		t.Fatalf("resume %+v writes %d", done, env.runner.writes())
	}
	// Both turns ran on the chat's thread.
	runs := env.runner.runs()
	if runs[0].Thread != runs[1].Thread || runs[0].Metadata["user"] != "u-1" {
		t.Fatalf("threads %q %q", runs[0].Thread, runs[1].Thread)
	}
	// A failure is shown as an error in the message.
	_, body = env.do(t, "POST", "/v1/chat/completions", keyWebUI, openWebUIRequest(nil, "fail"), openWebUIHeaders...)
	if f := parseLikeOpenWebUI(t, string(body)); f.Error == "" || f.Done {
		t.Fatalf("failure %+v", f)
	}
	// Title generation (a stream:false task request) is answered without
	// running the agent.
	title := map[string]any{"model": "capgraph", "stream": false, "messages": []map[string]any{
		{"role": "user", "content": "### Task:\nGenerate a concise, 3-5 word title with an emoji summarizing the chat history.\n### Chat History:\n<chat_history>\nUSER: What is the beam current?\n</chat_history>"}}}
	before := len(env.runner.runs())
	resp, body = env.do(t, "POST", "/v1/chat/completions", keyWebUI, title, openWebUIHeaders[:8]...)
	if resp.StatusCode != http.StatusOK || chatContent(t, body) != `{"title":"What is the beam current?"}` {
		t.Fatalf("title %d %s", resp.StatusCode, body)
	}
	if len(env.runner.runs()) != before {
		t.Fatal("the agent ran on Open WebUI's title task")
	}
}

func TestContractLibreChat(t *testing.T) {
	env := newTestEnv(t, nil)
	if resp, _ := env.do(t, "GET", "/v1/models", keyAlice, nil); resp.StatusCode != http.StatusOK {
		t.Fatal("models")
	}
	// LibreChat's defaults for a custom endpoint (frontends.md §2.2).
	req := map[string]any{"model": "capgraph", "stream": true, "user": "6650f0c0c0ffee",
		"temperature": 1, "top_p": 1, "presence_penalty": 0, "frequency_penalty": 0,
		"messages": []map[string]any{{"role": "user", "content": "What is the beam current?"}}}
	resp, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, req)
	v := parseLikeOpenWebUI(t, string(body))
	if resp.StatusCode != http.StatusOK || v.Content != "Beam current is 500 mA." || !v.Done || v.Usage != nil {
		t.Fatalf("%d %+v", resp.StatusCode, v)
	}
	// Its title request: non-stream, the conversation in one prompt.
	title := map[string]any{"model": "capgraph", "temperature": 0.2, "max_tokens": 16, "messages": []map[string]any{
		{"role": "system", "content": "Write a concise title for this conversation."},
		{"role": "user", "content": fmt.Sprintf("User: %s\nAI: %s", "What is the beam current?", v.Content)}}}
	resp, body = env.do(t, "POST", "/v1/chat/completions", keyAlice, title)
	if resp.StatusCode != http.StatusOK || chatContent(t, body) == "" {
		t.Fatalf("title %d %s", resp.StatusCode, body)
	}
}
