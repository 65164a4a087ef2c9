package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/ollama"
	"github.com/tmc/langchaingo/llms/openai"
)

// dummyToken satisfies langchaingo's openai provider, which refuses to start
// without a token even for local servers that ignore it.
const dummyToken = "capgraph-no-key"

// providerModel is a Model over one langchaingo provider.
type providerModel struct {
	role   Role
	cfg    RoleConfig
	keyEnv string
	llm    llms.Model
}

func newProviderModel(role Role, rc RoleConfig, key, keyEnv string, client *http.Client, now func() time.Time) (*providerModel, error) {
	var (
		m   llms.Model
		err error
	)
	doer := statusDoer{client: client, now: now}
	wrapped := &http.Client{Transport: statusTransport{base: transportOf(client), now: now},
		CheckRedirect: client.CheckRedirect, Jar: client.Jar, Timeout: client.Timeout}
	switch rc.Provider {
	case ProviderOpenAI:
		if key == "" {
			key = dummyToken
		}
		opts := []openai.Option{openai.WithToken(key), openai.WithModel(rc.Model), openai.WithHTTPClient(doer)}
		if rc.BaseURL != "" {
			opts = append(opts, openai.WithBaseURL(rc.BaseURL))
		}
		m, err = openai.New(opts...)
	case ProviderAnthropic:
		opts := []anthropic.Option{anthropic.WithToken(key), anthropic.WithModel(rc.Model), anthropic.WithHTTPClient(doer)}
		if rc.BaseURL != "" {
			opts = append(opts, anthropic.WithBaseURL(rc.BaseURL))
		}
		m, err = anthropic.New(opts...)
	case ProviderOllama:
		opts := []ollama.Option{ollama.WithModel(rc.Model), ollama.WithHTTPClient(wrapped)}
		if rc.BaseURL != "" {
			opts = append(opts, ollama.WithServerURL(rc.BaseURL))
		}
		m, err = ollama.New(opts...)
	case ProviderGoogleAI:
		m, err = newGoogleAI(key, rc.Model)
	default:
		err = fmt.Errorf("unknown provider %q", rc.Provider)
	}
	if err != nil {
		return nil, &ConfigError{Role: role, Field: "provider", Problem: fmt.Sprintf("%s: %v", rc.Provider, err), Err: err}
	}
	return &providerModel{role: role, cfg: rc, keyEnv: keyEnv, llm: m}, nil
}

func transportOf(c *http.Client) http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}

// Generate calls the provider. The error is always an *Error.
func (p *providerModel) Generate(ctx context.Context, req Request) (Response, error) {
	role := req.Role
	if role == "" {
		role = p.role
	}
	if err := ctx.Err(); err != nil {
		return Response{}, p.wrap(ctx, role, err)
	}
	callCtx := ctx
	if p.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, p.cfg.Timeout.D())
		defer cancel()
	}
	msgs := make([]llms.MessageContent, 0, len(req.Messages))
	for _, m := range req.Messages {
		t := llms.ChatMessageTypeHuman
		switch m.Role {
		case "system":
			t = llms.ChatMessageTypeSystem
		case "assistant":
			t = llms.ChatMessageTypeAI
		}
		msgs = append(msgs, llms.TextParts(t, m.Content))
	}
	temp := 0.0
	if p.cfg.Temperature != nil {
		temp = *p.cfg.Temperature
	}
	opts := []llms.CallOption{llms.WithTemperature(temp)}
	maxTok := req.MaxTokens
	if maxTok == 0 {
		maxTok = p.cfg.MaxTokens
	}
	if maxTok > 0 {
		opts = append(opts, llms.WithMaxTokens(maxTok))
	}
	if p.cfg.LegacyMaxTokens && p.cfg.Provider == ProviderOpenAI {
		opts = append(opts, openai.WithLegacyMaxTokensField())
	}
	if req.JSON {
		opts = append(opts, llms.WithJSONMode())
	}
	if req.OnChunk != nil {
		opts = append(opts, llms.WithStreamingFunc(func(ctx context.Context, chunk []byte) error {
			return req.OnChunk(ctx, string(chunk))
		}))
	}
	resp, err := p.llm.GenerateContent(callCtx, msgs, opts...)
	if err != nil {
		return Response{}, p.wrap(callCtx, role, err)
	}
	if resp == nil || len(resp.Choices) == 0 {
		return Response{}, p.wrap(callCtx, role, errors.New("provider returned no choices"))
	}
	ch := resp.Choices[0]
	return Response{Text: ch.Content, Usage: usageOf(ch.GenerationInfo), Model: p.cfg.Model}, nil
}

// wrap types a failure; role is the role that asked (which may be using the
// default role's model), so messages name what the user configured.
func (p *providerModel) wrap(ctx context.Context, role Role, err error) *Error {
	kind, status, delay, code := kindOf(ctx, err)
	return &Error{Kind: kind, Role: role, Provider: p.cfg.Provider, Model: p.cfg.Model,
		StatusCode: status, Delay: delay, Code: code, APIKeyEnv: p.keyEnv, Err: err}
}

// usageOf reads token counts from a langchaingo GenerationInfo, whose keys
// differ by provider.
func usageOf(info map[string]any) Usage {
	get := func(keys ...string) int {
		for _, k := range keys {
			if v, ok := info[k]; ok {
				switch n := v.(type) {
				case int:
					return n
				case int32:
					return int(n)
				case int64:
					return int(n)
				case float64:
					return int(n)
				}
			}
		}
		return 0
	}
	return Usage{
		PromptTokens:     get("PromptTokens", "InputTokens", "input_tokens"),
		CompletionTokens: get("CompletionTokens", "OutputTokens", "output_tokens"),
	}
}

// String describes the model for logs.
func (p *providerModel) String() string {
	return strings.Join([]string{string(p.role), p.cfg.Provider, p.cfg.Model}, "/")
}
