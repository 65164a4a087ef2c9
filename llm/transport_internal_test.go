package llm

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestKindOfMessage(t *testing.T) {
	tests := []struct {
		msg  string
		want error
	}{
		{"API returned unexpected status code: 429: slow down", ErrRateLimited},
		{"This model's maximum context length is 8192 tokens", ErrContextLength},
		{"prompt is too long: 210000 tokens > 200000 maximum", ErrContextLength},
		{"You exceeded your current quota, please check your plan", ErrQuota},
		{"API returned unexpected status code: 401: Incorrect API key provided", ErrAuth},
		{"request timeout: API call exceeded deadline", ErrTimeout},
		{"network error: failed to reach API server", ErrUnreachable},
		{"dial tcp 127.0.0.1:1: connect: connection refused", ErrUnreachable},
		{"API returned unexpected status code: 502: bad gateway", ErrServer},
		{"something odd", ErrUnknown},
	}
	for _, tt := range tests {
		if got := kindOfMessage(tt.msg); got != tt.want {
			t.Errorf("kindOfMessage(%q) = %v, want %v", tt.msg, got, tt.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		h    map[string]string
		want time.Duration
	}{
		{map[string]string{"Retry-After": "12"}, 12 * time.Second},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond},
		{map[string]string{"Retry-After": "soon"}, 0},
		{nil, 0},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.h {
			h.Set(k, v)
		}
		if got := parseRetryAfter(h, now); got != tt.want {
			t.Errorf("parseRetryAfter(%v) = %s, want %s", tt.h, got, tt.want)
		}
	}
}

func TestParseErrorBody(t *testing.T) {
	tests := []struct{ body, code, msg string }{
		{`{"error":{"message":"m","type":"t","code":"c"}}`, "c", "m"},
		{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "overloaded_error", "Overloaded"},
		{`{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}`, "RESOURCE_EXHAUSTED", "quota"},
		{`{"error":"model 'x' not found"}`, "", "model 'x' not found"},
		{`not json`, "", ""},
	}
	for _, tt := range tests {
		code, msg := parseErrorBody([]byte(tt.body))
		if code != tt.code || msg != tt.msg {
			t.Errorf("parseErrorBody(%s) = %q, %q; want %q, %q", tt.body, code, msg, tt.code, tt.msg)
		}
	}
}

func TestErrorUnwrapsKindAndCause(t *testing.T) {
	cause := errors.New("boom")
	e := &Error{Kind: ErrServer, Role: RoleResponse, Err: cause}
	if !errors.Is(e, ErrServer) || !errors.Is(e, cause) || errors.Is(e, ErrAuth) {
		t.Errorf("Unwrap chain wrong: %v", e.Unwrap())
	}
}

func TestUsageOfProviders(t *testing.T) {
	tests := []struct {
		name string
		info map[string]any
		want Usage
	}{
		{"openai", map[string]any{"PromptTokens": 11, "CompletionTokens": 3, "TotalTokens": 14}, Usage{PromptTokens: 11, CompletionTokens: 3}},
		{"openai cached", map[string]any{"PromptTokens": 2000, "CompletionTokens": 3, "PromptCachedTokens": 1536}, Usage{2000, 3, 1536}},
		{"anthropic", map[string]any{"InputTokens": 20, "OutputTokens": 5}, Usage{PromptTokens: 20, CompletionTokens: 5}},
		// Anthropic counts cache reads and writes apart from input_tokens.
		{"anthropic cached", map[string]any{"InputTokens": 20, "OutputTokens": 5, "CacheReadInputTokens": 1800, "CacheCreationInputTokens": 0}, Usage{1820, 5, 1800}},
		{"anthropic cache write", map[string]any{"InputTokens": 20, "OutputTokens": 5, "CacheReadInputTokens": 0, "CacheCreationInputTokens": 1800}, Usage{1820, 5, 0}},
		{"googleai int32", map[string]any{"PromptTokens": int32(7), "CompletionTokens": int32(2)}, Usage{PromptTokens: 7, CompletionTokens: 2}},
		{"float", map[string]any{"PromptTokens": 4.0}, Usage{PromptTokens: 4}},
		{"none", nil, Usage{}},
	}
	for _, tt := range tests {
		if got := usageOf(tt.info); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
