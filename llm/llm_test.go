package llm_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm"
)

// openAIServer is a loopback OpenAI-compatible server answering every chat
// completion with the handler's response.
func openAIServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func models(t *testing.T, baseURL string, rc func(*llm.RoleConfig), fallback string) llm.Models {
	t.Helper()
	c := llm.RoleConfig{Provider: llm.ProviderOpenAI, Model: "test-model", BaseURL: baseURL}
	if rc != nil {
		rc(&c)
	}
	m, err := llm.New(llm.Config{Roles: map[llm.Role]llm.RoleConfig{llm.RoleDefault: c}, Fallback: fallback,
		LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

func generate(t *testing.T, ms llm.Models, role llm.Role) (llm.Response, error) {
	t.Helper()
	m, ok := ms.For(role)
	if !ok {
		t.Fatalf("no model for role %s", role)
	}
	return m.Generate(context.Background(), llm.Request{Role: role, Messages: []llm.Message{{Role: "user", Content: "hi"}}})
}

const okBody = `{"id":"x","object":"chat.completion","created":1,"model":"test-model",
 "choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}],
 "usage":{"prompt_tokens":11,"completion_tokens":3,"total_tokens":14}}`

func TestOpenAIProviderSuccessReportsUsage(t *testing.T) {
	var gotAuth, gotPath string
	srv := openAIServer(t, func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotPath = r.Header.Get("Authorization"), r.URL.Path
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, okBody)
	})
	resp, err := generate(t, models(t, srv.URL+"/v1", nil, ""), llm.RoleClassifier)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if resp.Text != "hello there" || resp.Usage != (llm.Usage{PromptTokens: 11, CompletionTokens: 3}) {
		t.Errorf("response = %+v", resp)
	}
	if gotPath != "/v1/chat/completions" || !strings.HasPrefix(gotAuth, "Bearer ") {
		t.Errorf("request path %q auth %q: a local server must get a (dummy) bearer token", gotPath, gotAuth)
	}
}

func TestOpenAIProviderStatusCodesBecomeTypedErrors(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		kind       error
		severity   capabilities.Severity
		errKind    string
		retryAfter time.Duration
		message    string
	}{
		{name: "429 with Retry-After", status: 429, header: map[string]string{"Retry-After": "7"},
			body: `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`,
			kind: llm.ErrRateLimited, severity: capabilities.Retriable, errKind: capabilities.KindRateLimit, retryAfter: 7 * time.Second},
		{name: "429 with retry-after-ms", status: 429, header: map[string]string{"Retry-After-Ms": "1500"},
			kind: llm.ErrRateLimited, severity: capabilities.Retriable, errKind: capabilities.KindRateLimit, retryAfter: 1500 * time.Millisecond},
		{name: "503", status: 503, header: map[string]string{"Retry-After": "2"}, kind: llm.ErrServer,
			severity: capabilities.Retriable, errKind: capabilities.KindServerError, retryAfter: 2 * time.Second},
		{name: "401", status: 401, body: `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`,
			kind: llm.ErrAuth, severity: capabilities.Critical, errKind: capabilities.KindAuth,
			message: "the API key for role classifier was rejected"},
		{name: "403", status: 403, kind: llm.ErrAuth, severity: capabilities.Critical, errKind: capabilities.KindAuth,
			message: "the API key for role classifier was rejected"},
		{name: "429 quota", status: 429, body: `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`,
			kind: llm.ErrQuota, severity: capabilities.Critical, errKind: capabilities.KindQuota,
			message: "the quota of the API key for role classifier is exhausted"},
		{name: "400 context length", status: 400, body: `{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}`,
			kind: llm.ErrContextLength, severity: capabilities.Critical, errKind: capabilities.KindResourceExhausted},
		{name: "404 model", status: 404, body: `{"error":{"message":"model not found"}}`, kind: llm.ErrNotFound,
			severity: capabilities.Critical, errKind: capabilities.KindNotFound},
		{name: "400 other", status: 400, body: `{"error":{"message":"bad field"}}`, kind: llm.ErrBadRequest,
			severity: capabilities.Critical, errKind: capabilities.KindInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openAIServer(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			})
			_, err := generate(t, models(t, srv.URL+"/v1", nil, ""), llm.RoleClassifier)
			var le *llm.Error
			if !errors.As(err, &le) {
				t.Fatalf("error %T %v is not an *llm.Error", err, err)
			}
			if !errors.Is(err, tt.kind) || le.HTTPStatus() != tt.status || le.RetryAfter() != tt.retryAfter {
				t.Errorf("kind/status/retry-after = %v/%d/%s, want %v/%d/%s", le.Kind, le.HTTPStatus(), le.RetryAfter(), tt.kind, tt.status, tt.retryAfter)
			}
			if le.Role != llm.RoleClassifier || le.Provider != llm.ProviderOpenAI {
				t.Errorf("role/provider = %s/%s", le.Role, le.Provider)
			}
			c := llm.CapabilityError(err).Classification()
			if c.Severity != tt.severity || c.Kind != tt.errKind || c.RetryAfter.D() != tt.retryAfter {
				t.Errorf("classification = %s/%s/%s, want %s/%s/%s", c.Severity, c.Kind, c.RetryAfter, tt.severity, tt.errKind, tt.retryAfter)
			}
			if tt.message != "" && !strings.Contains(c.UserMessage, tt.message) {
				t.Errorf("user message %q lacks %q", c.UserMessage, tt.message)
			}
			if (tt.kind == llm.ErrContextLength) != errors.Is(err, capabilities.ErrResourceExhausted) {
				t.Errorf("errors.Is(ErrResourceExhausted) = %v", errors.Is(err, capabilities.ErrResourceExhausted))
			}
		})
	}
}

func TestOpenAIProviderStreamsChunks(t *testing.T) {
	srv := openAIServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range []string{"Beam ", "current ", "is 500 mA."} {
			fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", c)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	})
	m, _ := models(t, srv.URL+"/v1", nil, "").For(llm.RoleResponse)
	var got []string
	resp, err := m.Generate(context.Background(), llm.Request{Role: llm.RoleResponse, Messages: []llm.Message{{Role: "user", Content: "x"}},
		OnChunk: func(_ context.Context, c string) error { got = append(got, c); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "") != "Beam current is 500 mA." || resp.Text != "Beam current is 500 mA." {
		t.Errorf("chunks %q, text %q", got, resp.Text)
	}
}

func TestTimeoutAndUnreachable(t *testing.T) {
	var calls atomic.Int32
	slow := openAIServer(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-r.Context().Done():
		case <-time.After(300 * time.Millisecond):
		}
	})
	_, err := generate(t, models(t, slow.URL, func(rc *llm.RoleConfig) { rc.Timeout = capabilities.Duration(50 * time.Millisecond) }, ""), llm.RoleOrchestrator)
	if !errors.Is(err, llm.ErrTimeout) || llm.CapabilityError(err).Severity != capabilities.Retriable {
		t.Errorf("slow server: %v, want a retriable timeout", err)
	}

	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	_, err = generate(t, models(t, url, nil, ""), llm.RoleOrchestrator)
	if !errors.Is(err, llm.ErrUnreachable) || errors.Is(err, llm.ErrOffline) {
		t.Errorf("closed server without fallback: %v, want ErrUnreachable only", err)
	}
	_, err = generate(t, models(t, url, nil, llm.FallbackOffline), llm.RoleOrchestrator)
	if !errors.Is(err, llm.ErrOffline) || !errors.Is(err, llm.ErrUnreachable) {
		t.Errorf("closed server with fallback offline: %v, want ErrOffline wrapping ErrUnreachable", err)
	}
}

func TestCanceledContextIsCheckedFirst(t *testing.T) {
	srv := openAIServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, okBody) })
	m, _ := models(t, srv.URL, nil, "").For(llm.RoleResponse)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Generate(ctx, llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}})
	if !errors.Is(err, llm.ErrCanceled) || !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want ErrCanceled wrapping context.Canceled", err)
	}
}

func TestRolesFallBackToDefault(t *testing.T) {
	env := map[string]string{"KEY_A": "a"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	set, err := llm.New(llm.Config{LookupEnv: lookup, Roles: map[llm.Role]llm.RoleConfig{
		llm.RoleDefault:    {Provider: "openai", Model: "big", BaseURL: "http://127.0.0.1:1"},
		llm.RoleClassifier: {Provider: "openai", Model: "small", BaseURL: "http://127.0.0.1:1", APIKeyEnv: "KEY_A"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range llm.Roles() {
		if _, ok := set.For(r); !ok {
			t.Errorf("role %s has no model", r)
		}
	}
	if got := set.Configured(); len(got) != 2 {
		t.Errorf("Configured = %v", got)
	}
	empty, err := llm.New(llm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := empty.For(llm.RoleResponse); ok {
		t.Error("an empty config must run offline")
	}
}

func TestConfigErrorsNameRoleAndField(t *testing.T) {
	lookup := func(string) (string, bool) { return "", false }
	tests := []struct {
		name string
		cfg  llm.Config
		want []string
	}{
		{"unknown provider", llm.Config{Roles: map[llm.Role]llm.RoleConfig{llm.RoleClassifier: {Provider: "openia", Model: "m"}}},
			[]string{"role classifier", "provider", `"openia"`}},
		{"no model", llm.Config{Roles: map[llm.Role]llm.RoleConfig{llm.RoleDefault: {Provider: "ollama"}}},
			[]string{"role default", "model", "empty"}},
		{"missing key", llm.Config{Roles: map[llm.Role]llm.RoleConfig{llm.RoleResponse: {Provider: "anthropic", Model: "claude"}}},
			[]string{"role response", "ANTHROPIC_API_KEY", "not set"}},
		{"explicit key env missing", llm.Config{Roles: map[llm.Role]llm.RoleConfig{llm.RoleResponse: {Provider: "openai", Model: "m", BaseURL: "http://x", APIKeyEnv: "GATEWAY_KEY"}}},
			[]string{"GATEWAY_KEY"}},
		{"unknown role", llm.Config{Roles: map[llm.Role]llm.RoleConfig{"planner": {Provider: "ollama", Model: "m"}}},
			[]string{"role planner", "unknown role"}},
		{"bad temperature", llm.Config{Roles: map[llm.Role]llm.RoleConfig{llm.RoleDefault: {Provider: "ollama", Model: "m", Temperature: ptr(3.0)}}},
			[]string{"temperature", "outside"}},
		{"bad fallback", llm.Config{Fallback: "cloud"}, []string{"fallback", `"cloud"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.LookupEnv = lookup
			_, err := llm.New(tt.cfg)
			if !errors.Is(err, llm.ErrConfig) {
				t.Fatalf("err = %v, want ErrConfig", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestEveryHTTPProviderKeepsStatusAndRetryAfter(t *testing.T) {
	for _, provider := range []string{llm.ProviderOpenAI, llm.ProviderAnthropic, llm.ProviderOllama} {
		t.Run(provider, func(t *testing.T) {
			var paths []string
			srv := openAIServer(t, func(w http.ResponseWriter, r *http.Request) {
				paths = append(paths, r.URL.Path)
				w.Header().Set("Retry-After", "3")
				w.WriteHeader(http.StatusTooManyRequests)
				io.WriteString(w, `{"error":{"type":"rate_limit_error","message":"slow down"}}`)
			})
			set, err := llm.New(llm.Config{LookupEnv: func(string) (string, bool) { return "k", true },
				Roles: map[llm.Role]llm.RoleConfig{llm.RoleOrchestrator: {Provider: provider, Model: "m", BaseURL: srv.URL}}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = generate(t, set, llm.RoleOrchestrator)
			var le *llm.Error
			if !errors.As(err, &le) || le.HTTPStatus() != 429 || le.RetryAfter() != 3*time.Second || !errors.Is(err, llm.ErrRateLimited) {
				t.Fatalf("err = %v (paths %v), want a 429 *llm.Error with a 3s Retry-After", err, paths)
			}
		})
	}
}

func TestErrorMessageQuotesTheProviderOnce(t *testing.T) {
	srv := openAIServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided"}}`)
	})
	_, err := generate(t, models(t, srv.URL, nil, ""), llm.RoleClassifier)
	want := "llm role classifier (openai test-model): API key rejected (HTTP 401): Incorrect API key provided"
	if err == nil || err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
}
