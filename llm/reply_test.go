package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest/openaitest"
)

var testSchema = &llm.Schema{Name: "task_reply", Strict: true, Schema: map[string]any{
	"type": "object", "properties": map[string]any{"task": map[string]any{"type": "string"}},
	"required": []string{"task"}, "additionalProperties": false}}

func askJSON(t *testing.T, ms llm.Models, opts llm.AskOptions) (llm.Response, error) {
	t.Helper()
	m, _ := ms.For(llm.RoleTaskExtraction)
	return llm.Ask(context.Background(), m, llm.Request{Role: llm.RoleTaskExtraction, JSON: true, Schema: testSchema,
		Messages: []llm.Message{{Role: "system", Content: "extract"}, {Role: "user", Content: "beam current?"}}}, opts)
}

// With json_mode auto (the default) a JSON role sends its schema as
// response_format json_schema; reasoning the server separated
// (reasoning_content) is kept apart from the reply.
func TestStructuredOutputSentByDefault(t *testing.T) {
	srv := openaitest.New(t).On(nil, openaitest.Reply{Content: `{"task": "read"}`, Reasoning: "The user wants {\"maybe\": 1}."})
	resp, err := askJSON(t, models(t, srv.BaseURL(), nil, ""), llm.AskOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != `{"task": "read"}` || resp.Reasoning != `The user wants {"maybe": 1}.` || resp.FinishReason != llm.FinishStop {
		t.Errorf("response %+v", resp)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].ResponseFormat() != "json_schema" || reqs[0].SchemaName() != "task_reply" {
		t.Fatalf("requests %+v", reqs)
	}
	js := reqs[0].Body["response_format"].(map[string]any)["json_schema"].(map[string]any)
	if js["strict"] != true || js["schema"].(map[string]any)["additionalProperties"] != false {
		t.Errorf("json_schema %v", js)
	}
}

// A server that rejects json_schema gets JSON mode, and one that rejects
// any response_format gets none; the model remembers what works.
func TestJSONModeAutoFallsBackAndRemembers(t *testing.T) {
	tests := []struct {
		name        string
		configure   func(*openaitest.Server)
		firstFormat []string // formats of the first Ask's requests
		laterFormat string
	}{
		{"no json_schema", func(s *openaitest.Server) { s.RejectJSONSchema = true }, []string{"json_schema", "json_object"}, "json_object"},
		{"no response_format", func(s *openaitest.Server) { s.RejectResponseFormat = true }, []string{"json_schema", "json_object", ""}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := openaitest.New(t).On(nil, openaitest.Text(`{"task": "read"}`))
			tc.configure(srv)
			ms := models(t, srv.BaseURL(), nil, "")
			if _, err := askJSON(t, ms, llm.AskOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := askJSON(t, ms, llm.AskOptions{}); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range srv.Requests() {
				got = append(got, r.ResponseFormat())
			}
			want := append(append([]string(nil), tc.firstFormat...), tc.laterFormat)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("formats sent %q, want %q", got, want)
			}
		})
	}
}

// An explicit json_mode is sent as configured, and a server rejecting it is
// an error naming the role (no silent fallback).
func TestJSONModeExplicit(t *testing.T) {
	for mode, want := range map[string]string{llm.JSONModeSchema: "json_schema", llm.JSONModeObject: "json_object", llm.JSONModeOff: ""} {
		srv := openaitest.New(t).On(nil, openaitest.Text(`{"task": "read"}`))
		if _, err := askJSON(t, models(t, srv.BaseURL(), func(rc *llm.RoleConfig) { rc.JSONMode = mode }, ""), llm.AskOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := srv.Requests()[0].ResponseFormat(); got != want {
			t.Errorf("json_mode %s sent %q, want %q", mode, got, want)
		}
	}
	srv := openaitest.New(t).On(nil, openaitest.Text(`{"task": "read"}`))
	srv.RejectJSONSchema = true
	_, err := askJSON(t, models(t, srv.BaseURL(), func(rc *llm.RoleConfig) { rc.JSONMode = llm.JSONModeSchema }, ""), llm.AskOptions{})
	var le *llm.Error
	if !errors.As(err, &le) || le.StatusCode != 400 || le.Role != llm.RoleTaskExtraction || len(srv.Requests()) != 1 {
		t.Errorf("err %v after %d requests", err, len(srv.Requests()))
	}
	if _, err := llm.New(llm.Config{Roles: map[llm.Role]llm.RoleConfig{llm.RoleDefault: {Provider: "openai", Model: "m", BaseURL: "http://x/v1", JSONMode: "yes"}}}); err == nil ||
		!strings.Contains(err.Error(), "json_mode") {
		t.Errorf("bad json_mode accepted: %v", err)
	}
}

func askStream(t *testing.T, ms llm.Models, opts llm.AskOptions) (llm.Response, string, error) {
	t.Helper()
	m, _ := ms.For(llm.RoleResponse)
	var shown strings.Builder
	resp, err := llm.Ask(context.Background(), m, llm.Request{Role: llm.RoleResponse, Messages: []llm.Message{{Role: "user", Content: "beam current?"}},
		OnChunk: func(_ context.Context, c string) error { shown.WriteString(c); return nil }}, opts)
	return resp, shown.String(), err
}

// stream_options.include_usage is sent by default; a server rejecting it
// gets the call again without, and never again; stream_usage false never
// sends it.
func TestStreamUsage(t *testing.T) {
	srv := openaitest.New(t).On(nil, openaitest.Text("500 mA"))
	srv.RejectStreamOptions = true
	ms := models(t, srv.BaseURL(), nil, "")
	for range 2 {
		if _, shown, err := askStream(t, ms, llm.AskOptions{}); err != nil || shown != "500 mA" {
			t.Fatalf("shown %q err %v", shown, err)
		}
	}
	var got []bool
	for _, r := range srv.Requests() {
		got = append(got, r.HasStreamOptions())
	}
	if len(got) != 3 || !got[0] || got[1] || got[2] {
		t.Errorf("stream_options sent %v, want [true false false]", got)
	}

	srv2 := openaitest.New(t).On(nil, openaitest.Text("500 mA"))
	off := false
	if _, _, err := askStream(t, models(t, srv2.BaseURL(), func(rc *llm.RoleConfig) { rc.StreamUsage = &off }, ""), llm.AskOptions{}); err != nil {
		t.Fatal(err)
	}
	if srv2.Requests()[0].HasStreamOptions() {
		t.Error("stream_usage false sent stream_options")
	}
}

// A think block never reaches the stream or the text, whatever the chunks.
func TestAskStreamHidesThinkBlock(t *testing.T) {
	srv := openaitest.New(t).On(nil, openaitest.Text("<think>\nThe user wants the current {\"maybe\": 1}.\n</think>\n\nThe beam current is 500.2 mA."))
	resp, shown, err := askStream(t, models(t, srv.BaseURL(), nil, ""), llm.AskOptions{})
	if err != nil || shown != "The beam current is 500.2 mA." || resp.Text != shown || !strings.HasPrefix(resp.Raw, "<think>") {
		t.Errorf("shown %q text %q err %v", shown, resp.Text, err)
	}
}

// Reasoning opened in the prompt (a reply starting bare and ending its
// reasoning with </think>) is withdrawn once seen, and held back from the
// start in the model's later streams.
func TestAskStreamReasoningOpenedInPrompt(t *testing.T) {
	srv := openaitest.New(t).On(nil, openaitest.Text("Okay, the user asks for the current.\n</think>\n\nIt is 500.2 mA."))
	ms := models(t, srv.BaseURL(), nil, "")
	var withdrawn []string
	opts := llm.AskOptions{OnWithdraw: func(_ context.Context, reason string) { withdrawn = append(withdrawn, reason) }}
	_, shown, err := askStream(t, ms, opts)
	if err != nil || len(withdrawn) != 1 || !strings.HasSuffix(shown, "It is 500.2 mA.") {
		t.Fatalf("first stream: shown %q withdrawn %v err %v", shown, withdrawn, err)
	}
	withdrawn = nil
	_, shown, err = askStream(t, ms, opts)
	if err != nil || len(withdrawn) != 0 || shown != "It is 500.2 mA." {
		t.Errorf("second stream: shown %q withdrawn %v err %v", shown, withdrawn, err)
	}
}

// finish_reason "length" is read, streamed or not; Ask asks again with a
// doubled limit and, still cut, fails naming max_tokens of the role.
func TestCutReplyAskedAgainThenTruncatedError(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := openaitest.New(t).On(nil, openaitest.Cut(`{"task": "read the beam`))
		ms := models(t, srv.BaseURL(), func(rc *llm.RoleConfig) { rc.MaxTokens = 3000 }, "")
		m, _ := ms.For(llm.RoleClassifier)
		req := llm.Request{Role: llm.RoleClassifier, JSON: true, Messages: []llm.Message{{Role: "user", Content: "x"}}}
		if stream {
			req.OnChunk = func(context.Context, string) error { return nil }
		}
		var retries []int
		resp, err := llm.Ask(context.Background(), m, req, llm.AskOptions{CutRetries: 2,
			OnRetry: func(_ context.Context, cut llm.Response, next int) { retries = append(retries, next) }})
		var le *llm.Error
		if !errors.As(err, &le) || !errors.Is(err, llm.ErrTruncated) || le.Role != llm.RoleClassifier || le.MaxTokens != 12000 {
			t.Fatalf("stream %v: err %v", stream, err)
		}
		c := llm.CapabilityError(err).Classification()
		if c.Severity != capabilities.Critical || !strings.Contains(c.Metadata[capabilities.MetaSuggestions].(string), "raise models.classifier.max_tokens") ||
			!strings.Contains(c.UserMessage, "cut off at 12000 tokens") {
			t.Errorf("classification %+v", c)
		}
		var limits []int
		for _, r := range srv.Requests() {
			limits = append(limits, r.MaxTokens)
		}
		if len(limits) != 3 || limits[0] != 3000 || limits[1] != 6000 || limits[2] != 12000 || len(retries) != 2 {
			t.Errorf("stream %v: limits sent %v, retries %v", stream, limits, retries)
		}
		if resp.Usage.Total() == 0 || resp.FinishReason != llm.FinishLength {
			t.Errorf("the cut calls' usage must be counted: %+v", resp)
		}
	}
}

// customModel is an application's own llm.Model.
type customModel struct{ err error }

func (c customModel) Generate(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, c.err
}

// Every error names its role, also an application's own model's.
func TestAskNamesTheRoleOfCustomModelErrors(t *testing.T) {
	for _, e := range []error{errors.New("backend exploded"), &llm.Error{Kind: llm.ErrServer, StatusCode: 503},
		fmt.Errorf("my gateway: %w", &llm.Error{Kind: llm.ErrRateLimited, StatusCode: 429})} {
		_, err := llm.Ask(context.Background(), customModel{e}, llm.Request{Role: llm.RoleOrchestrator}, llm.AskOptions{})
		if err == nil || !strings.Contains(err.Error(), "llm role orchestrator") {
			t.Errorf("error %q does not name the role", err)
		}
		if c := llm.CapabilityError(err).Classification(); !strings.Contains(c.UserMessage, "role orchestrator") || strings.Contains(c.UserMessage, "role  ") {
			t.Errorf("user message %q", c.UserMessage)
		}
	}
	_, err := llm.Ask(context.Background(), customModel{errors.New("dial tcp: connection refused")}, llm.Request{Role: llm.RoleError}, llm.AskOptions{})
	if !errors.Is(err, llm.ErrUnreachable) {
		t.Errorf("a plain error keeps its kind: %v", err)
	}
}

// ollamaServer answers /api/chat with NDJSON lines like Ollama, ending with
// done_reason, and records the request bodies.
func ollamaServer(t *testing.T, content, doneReason string) (*httptest.Server, func() []map[string]any) {
	var (
		mu     sync.Mutex
		bodies []map[string]any
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b map[string]any
		raw, _ := io.ReadAll(r.Body)
		json.Unmarshal(raw, &b)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-ndjson")
		for _, part := range []string{content[:len(content)/2], content[len(content)/2:]} {
			line, _ := json.Marshal(map[string]any{"model": "m", "message": map[string]any{"role": "assistant", "content": part}, "done": false})
			w.Write(append(line, '\n'))
		}
		line, _ := json.Marshal(map[string]any{"model": "m", "message": map[string]any{"role": "assistant", "content": ""}, "done": true,
			"done_reason": doneReason, "prompt_eval_count": 20, "eval_count": 7})
		w.Write(append(line, '\n'))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []map[string]any { mu.Lock(); defer mu.Unlock(); return bodies }
}

// The ollama provider sends the schema as format and reads done_reason.
func TestOllamaSchemaAndDoneReason(t *testing.T) {
	srv, bodies := ollamaServer(t, `{"task": "read the`, "length")
	ms := models(t, srv.URL, func(rc *llm.RoleConfig) { rc.Provider = llm.ProviderOllama }, "")
	m, _ := ms.For(llm.RoleTaskExtraction)
	resp, err := m.Generate(context.Background(), llm.Request{Role: llm.RoleTaskExtraction, JSON: true, Schema: testSchema, MaxTokens: 64,
		Messages: []llm.Message{{Role: "user", Content: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != llm.FinishLength || resp.Text != `{"task": "read the` || resp.MaxTokens != 64 {
		t.Errorf("response %+v", resp)
	}
	f, ok := bodies()[0]["format"].(map[string]any)
	if !ok || f["type"] != "object" {
		t.Errorf("format sent %v, want the schema", bodies()[0]["format"])
	}
	ms = models(t, srv.URL, func(rc *llm.RoleConfig) { rc.Provider = llm.ProviderOllama; rc.JSONMode = llm.JSONModeObject }, "")
	m, _ = ms.For(llm.RoleTaskExtraction)
	if _, err := m.Generate(context.Background(), llm.Request{JSON: true, Schema: testSchema, Messages: []llm.Message{{Role: "user", Content: "x"}}}); err != nil {
		t.Fatal(err)
	}
	if got := bodies()[1]["format"]; got != "json" {
		t.Errorf("json_object sent format %v", got)
	}
}
