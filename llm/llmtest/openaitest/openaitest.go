// Package openaitest is an OpenAI Chat Completions server for tests
// (net/http/httptest) that answers with scripted replies in the styles real
// models use: clean or fenced JSON, prose around it, reasoning in
// reasoning_content or in <think> blocks, replies cut off by the token limit
// (finish_reason "length"), streamed or not, and HTTP errors such as 429
// with Retry-After. Point a role's base_url at Server.BaseURL and the real
// langchaingo openai provider talks to it.
//
// It is a companion of llmtest, the scripted model: llmtest replaces the
// model behind llm.Model; this server replaces the model behind the HTTP API,
// so the provider, the transport and the wire format are tested too.
package openaitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Reply is one scripted answer.
type Reply struct {
	// Content is the reply text.
	Content string
	// Reasoning is sent as reasoning_content (a server with a reasoning parser).
	Reasoning string
	// Finish is finish_reason; empty means "stop".
	Finish string
	// Status, when not 0 or 200, makes an error reply with Body and Header.
	Status int
	Body   string
	Header map[string]string
	// Chunks are the streamed pieces of Content for a streaming request;
	// nil means Content in pieces of a few characters.
	Chunks []string
	// PromptTokens and CompletionTokens are reported as usage; 0 means an
	// estimate (a token per four characters).
	PromptTokens, CompletionTokens int
	// CachedTokens is reported as usage.prompt_tokens_details.cached_tokens:
	// the prompt tokens the server read from its prompt cache.
	CachedTokens int
}

// Text is a clean reply.
func Text(s string) Reply { return Reply{Content: s} }

// Cut is a reply cut off by the token limit.
func Cut(s string) Reply { return Reply{Content: s, Finish: "length"} }

// Status is an error reply with a JSON error body in OpenAI's format.
func Status(code int, message string, header map[string]string) Reply {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": "invalid_request_error"}})
	return Reply{Status: code, Body: string(b), Header: header}
}

// Request is one request as the server received it.
type Request struct {
	// Body is the decoded JSON body.
	Body map[string]any
	// System and User are the first system and the last user message.
	System, User string
	Stream       bool
	// MaxTokens is max_completion_tokens or max_tokens, 0 when absent.
	MaxTokens int
}

// ResponseFormat returns response_format's type ("json_schema",
// "json_object") or "" when absent.
func (r Request) ResponseFormat() string {
	rf, _ := r.Body["response_format"].(map[string]any)
	t, _ := rf["type"].(string)
	return t
}

// SchemaName returns the json_schema name of response_format, if any.
func (r Request) SchemaName() string {
	rf, _ := r.Body["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	n, _ := js["name"].(string)
	return n
}

// HasStreamOptions reports whether stream_options was sent.
func (r Request) HasStreamOptions() bool { _, ok := r.Body["stream_options"]; return ok }

// Matcher selects requests.
type Matcher func(Request) bool

// SystemContains matches a request whose system message contains s.
func SystemContains(s string) Matcher {
	return func(r Request) bool { return strings.Contains(r.System, s) }
}

// UserContains matches a request whose last user message contains s.
func UserContains(s string) Matcher {
	return func(r Request) bool { return strings.Contains(r.User, s) }
}

type rule struct {
	match   Matcher
	replies []Reply
}

// Server is the scripted Chat Completions server.
type Server struct {
	srv *httptest.Server
	// RejectJSONSchema answers 400 to response_format json_schema, as
	// servers without structured output do.
	RejectJSONSchema bool
	// RejectResponseFormat answers 400 to any response_format.
	RejectResponseFormat bool
	// RejectStreamOptions answers 400 to stream_options.
	RejectStreamOptions bool

	mu       sync.Mutex
	rules    []*rule
	requests []Request
}

// New starts a server, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.srv.Close)
	return s
}

// BaseURL is the base_url to configure: the server's URL with /v1.
func (s *Server) BaseURL() string { return s.srv.URL + "/v1" }

// URL is the server's root URL (no /v1).
func (s *Server) URL() string { return s.srv.URL }

// On answers requests matching m with replies, in order; the last one
// answers every later match. Rules are tried in the order added.
func (s *Server) On(m Matcher, replies ...Reply) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, &rule{match: m, replies: replies})
	return s
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Matching returns the received requests m matches.
func (s *Server) Matching(m Matcher) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if m(r) {
			out = append(out, r)
		}
	}
	return out
}

func (s *Server) handle(w http.ResponseWriter, hr *http.Request) {
	if hr.Method != http.MethodPost || hr.URL.Path != "/v1/chat/completions" {
		writeReply(w, Status(http.StatusNotFound, "404 page not found: "+hr.URL.Path, nil))
		return
	}
	raw, _ := io.ReadAll(hr.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		writeReply(w, Status(http.StatusBadRequest, "invalid JSON body: "+err.Error(), nil))
		return
	}
	req := parse(body)
	s.mu.Lock()
	s.requests = append(s.requests, req)
	var reply *Reply
	for _, r := range s.rules {
		if r.match == nil || r.match(req) {
			reply = &r.replies[0]
			if len(r.replies) > 1 {
				r.replies = r.replies[1:]
			}
			break
		}
	}
	s.mu.Unlock()
	switch {
	case s.RejectResponseFormat && req.ResponseFormat() != "":
		writeReply(w, Status(http.StatusBadRequest, "response_format is not supported", nil))
		return
	case s.RejectJSONSchema && req.ResponseFormat() == "json_schema":
		writeReply(w, Status(http.StatusBadRequest, "This response_format type is unavailable now", nil))
		return
	case s.RejectStreamOptions && req.HasStreamOptions():
		writeReply(w, Status(http.StatusBadRequest, "Extra inputs are not permitted: stream_options", nil))
		return
	case reply == nil:
		writeReply(w, Status(http.StatusInternalServerError, fmt.Sprintf("openaitest: no scripted reply for system prompt %.80q", req.System), nil))
		return
	case reply.Status != 0 && reply.Status != http.StatusOK:
		writeReply(w, *reply)
		return
	}
	usage := map[string]any{"prompt_tokens": cmpOr(reply.PromptTokens, (len(raw)+3)/4),
		"completion_tokens": cmpOr(reply.CompletionTokens, (len(reply.Content)+len(reply.Reasoning)+3)/4)}
	usage["total_tokens"] = usage["prompt_tokens"].(int) + usage["completion_tokens"].(int)
	if reply.CachedTokens > 0 {
		usage["prompt_tokens_details"] = map[string]any{"cached_tokens": reply.CachedTokens}
	}
	finish := reply.Finish
	if finish == "" {
		finish = "stop"
	}
	if req.Stream {
		stream(w, *reply, finish, usage, req.HasStreamOptions())
		return
	}
	msg := map[string]any{"role": "assistant", "content": reply.Content}
	if reply.Reasoning != "" {
		msg["reasoning_content"] = reply.Reasoning
	}
	out, _ := json.Marshal(map[string]any{"id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": body["model"],
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

func stream(w http.ResponseWriter, r Reply, finish string, usage map[string]any, withUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	chunk := func(delta map[string]any, fin any) map[string]any {
		return map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": "test",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": fin}}}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, p := range pieces(r.Reasoning, nil) {
		send(chunk(map[string]any{"reasoning_content": p}, nil))
	}
	for _, p := range pieces(r.Content, r.Chunks) {
		send(chunk(map[string]any{"content": p}, nil))
	}
	send(chunk(map[string]any{}, finish))
	if withUsage {
		send(map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": "test",
			"choices": []any{}, "usage": usage})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func pieces(s string, given []string) []string {
	if given != nil {
		return given
	}
	var out []string
	for len(s) > 0 {
		n := min(7, len(s))
		for n < len(s) && !utf8Start(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func writeReply(w http.ResponseWriter, r Reply) {
	for k, v := range r.Header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.Status)
	io.WriteString(w, r.Body)
}

func parse(body map[string]any) Request {
	req := Request{Body: body}
	req.Stream, _ = body["stream"].(bool)
	for _, k := range []string{"max_completion_tokens", "max_tokens"} {
		if n, ok := body[k].(float64); ok && req.MaxTokens == 0 {
			req.MaxTokens = int(n)
		}
	}
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		role, _ := mm["role"].(string)
		text := contentText(mm["content"])
		switch role {
		case "system":
			if req.System == "" {
				req.System = text
			}
		case "user":
			req.User = text
		}
	}
	return req
}

// contentText reads a message's content: a string, or a list of parts
// (langchaingo sends {"type": "text", "text": ...} parts).
func contentText(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		var b strings.Builder
		for _, p := range v {
			if pm, ok := p.(map[string]any); ok {
				if t, ok := pm["text"].(string); ok {
					b.WriteString(t)
				}
			}
		}
		return b.String()
	}
	return ""
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}
