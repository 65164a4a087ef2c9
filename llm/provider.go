package llm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
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
	// jsonLevel is the highest JSON level the server accepted under
	// json_mode auto (it only goes down); noStreamUsage is set once the
	// server rejected stream_options.
	jsonLevel     atomic.Int32
	noStreamUsage atomic.Bool
	// opensInPrompt: the model's replies start with reasoning whose opening
	// tag was in the prompt (see Ask).
	opensInPrompt atomic.Bool
}

func (p *providerModel) reasoningOpenedInPrompt() *atomic.Bool { return &p.opensInPrompt }

// Cancelable: a langchaingo provider's request carries the call's context,
// which net/http ends the request and its stream with.
func (p *providerModel) Cancelable() bool { return true }

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
	pm := &providerModel{role: role, cfg: rc, keyEnv: keyEnv, llm: m}
	pm.jsonLevel.Store(jsonSchema)
	return pm, nil
}

func transportOf(c *http.Client) http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}

// Generate calls the provider. The error is always an *Error.
//
// With json_mode auto, a request the server rejects (HTTP 400/422) is made
// again with the next simpler response format (JSON schema → JSON mode →
// none), and with stream_usage unset a rejected streamed request is made
// again without stream_options; what worked is remembered for the model.
func (p *providerModel) Generate(ctx context.Context, req Request) (Response, error) {
	role := req.Role
	if role == "" {
		role = p.role
	}
	if err := ctx.Err(); err != nil {
		return Response{}, p.wrap(ctx, role, err)
	}
	maxTok := cmp.Or(req.MaxTokens, p.cfg.MaxTokens, req.DefaultMaxTokens)
	f := p.format(req)
	for {
		resp, err := p.generateOnce(ctx, role, req, maxTok, f)
		if err == nil {
			p.learn(f)
			return resp, nil
		}
		next, ok := p.simpler(f, err)
		if !ok || ctx.Err() != nil {
			return resp, err
		}
		f = next
	}
}

// JSON levels, simplest first.
const (
	jsonNone = iota
	jsonObject
	jsonSchema
)

// wireFormat is what one attempt sends: the JSON level and whether
// stream_options.include_usage goes with a streamed call.
type wireFormat struct {
	json        int
	streamUsage bool
	// auto levels may be lowered after a rejection.
	autoJSON, autoUsage bool
}

// format decides what a request sends from the role's json_mode and
// stream_usage and what the model has been found to accept.
func (p *providerModel) format(req Request) wireFormat {
	var f wireFormat
	if req.JSON {
		want := jsonObject
		if req.Schema != nil {
			want = jsonSchema
		}
		switch p.cfg.JSONMode {
		case JSONModeOff:
			f.json = jsonNone
		case JSONModeObject:
			f.json = jsonObject
		case JSONModeSchema:
			f.json = want
		default:
			f.json = min(want, int(p.jsonLevel.Load()))
			f.autoJSON = true
		}
	}
	if req.OnChunk != nil {
		switch {
		case p.cfg.StreamUsage == nil:
			f.streamUsage = !p.noStreamUsage.Load()
			f.autoUsage = true
		default:
			f.streamUsage = *p.cfg.StreamUsage
		}
	}
	return f
}

// simpler returns the next format to try after err, if any.
func (p *providerModel) simpler(f wireFormat, err error) (wireFormat, bool) {
	if !errors.Is(err, ErrBadRequest) {
		return f, false
	}
	switch {
	case f.autoJSON && f.json > jsonNone && p.sendsFormat():
		f.json--
		return f, true
	case f.autoUsage && f.streamUsage && p.cfg.Provider == ProviderOpenAI:
		f.streamUsage = false
		return f, true
	}
	return f, false
}

// learn keeps a lowered format for the model's later calls.
func (p *providerModel) learn(f wireFormat) {
	if f.autoJSON {
		for {
			cur := p.jsonLevel.Load()
			if int32(f.json) >= cur || p.jsonLevel.CompareAndSwap(cur, int32(f.json)) {
				break
			}
		}
	}
	if f.autoUsage && !f.streamUsage {
		p.noStreamUsage.Store(true)
	}
}

// sendsFormat: the providers whose response format capgraph controls.
func (p *providerModel) sendsFormat() bool {
	return p.cfg.Provider == ProviderOpenAI || p.cfg.Provider == ProviderOllama
}

func (p *providerModel) generateOnce(ctx context.Context, role Role, req Request, maxTok int, f wireFormat) (Response, error) {
	tr := &callTrace{set: map[string]any{}, watchDone: p.cfg.Provider == ProviderOllama}
	callCtx := withTrace(ctx, tr)
	if p.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(callCtx, p.cfg.Timeout.D())
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
	if maxTok > 0 {
		opts = append(opts, llms.WithMaxTokens(maxTok))
	}
	if p.cfg.LegacyMaxTokens && p.cfg.Provider == ProviderOpenAI {
		opts = append(opts, openai.WithLegacyMaxTokensField())
	}
	switch p.cfg.Provider {
	case ProviderOpenAI:
		// langchaingo's JSON mode is json_object only; the transport sends
		// the format this attempt wants.
		switch f.json {
		case jsonSchema:
			tr.set["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{
				"name": req.Schema.Name, "strict": req.Schema.Strict, "schema": req.Schema.Schema}}
		case jsonObject:
			tr.set["response_format"] = map[string]any{"type": "json_object"}
		}
		if req.OnChunk != nil && !f.streamUsage {
			tr.set["stream_options"] = nil // langchaingo always adds it
		}
	case ProviderOllama:
		switch f.json {
		case jsonSchema:
			tr.set["format"] = req.Schema.Schema
		case jsonObject:
			tr.set["format"] = "json"
		}
	default:
		if f.json > jsonNone {
			opts = append(opts, llms.WithJSONMode())
		}
	}
	if p.cfg.Provider == ProviderAnthropic && (p.cfg.PromptCache == nil || *p.cfg.PromptCache) {
		if sys := systemText(req.Messages); sys != "" {
			// langchaingo sends the system prompt as a plain string, which
			// takes no cache marker: send it as a marked text block.
			tr.set["system"] = []any{map[string]any{"type": "text", "text": sys, "cache_control": map[string]any{"type": "ephemeral"}}}
		}
	}
	if req.OnChunk != nil {
		opts = append(opts, llms.WithStreamingFunc(func(ctx context.Context, chunk []byte) error {
			return req.OnChunk(ctx, string(chunk))
		}))
	}
	resp, err := p.llm.GenerateContent(callCtx, msgs, opts...)
	if err == nil && callCtx.Err() != nil {
		// The call ended with its context: langchaingo's stream reader can
		// take the cut body for the stream's end and return what arrived,
		// which is no whole reply.
		err = callCtx.Err()
	}
	if err != nil {
		return Response{}, p.wrap(callCtx, role, err)
	}
	if resp == nil || len(resp.Choices) == 0 {
		return Response{}, p.wrap(callCtx, role, errors.New("provider returned no choices"))
	}
	ch := resp.Choices[0]
	finish := ch.StopReason
	if finish == "" {
		finish = tr.finish()
	}
	return Response{Text: ch.Content, Reasoning: ch.ReasoningContent, FinishReason: normalizeFinish(finish),
		MaxTokens: maxTok, Usage: usageOf(ch.GenerationInfo), Model: p.cfg.Model}, nil
}

// systemText is the system messages' text as langchaingo's anthropic
// provider joins them into its system prompt.
func systemText(msgs []Message) string {
	var b strings.Builder
	for _, m := range msgs {
		if m.Role == "system" {
			b.WriteString(m.Content)
		}
	}
	return b.String()
}

// normalizeFinish maps a provider's stop reason to a FinishReason; an
// unknown reason is kept in lower case.
func normalizeFinish(s string) FinishReason {
	r := strings.ToLower(strings.TrimSpace(s))
	r = strings.TrimPrefix(r, "finishreason") // Gemini's Go names: FinishReasonMaxTokens
	r = strings.ReplaceAll(r, "_", "")
	switch r {
	case "", "null", "none", "unspecified":
		return ""
	case "stop", "endturn", "stopsequence", "eos":
		return FinishStop
	case "length", "maxtokens", "modellength":
		return FinishLength
	case "contentfilter", "safety", "recitation", "blocklist", "prohibitedcontent", "spii", "refusal":
		return FinishContentFilter
	case "toolcalls", "functioncall", "tooluse":
		return FinishToolCalls
	}
	return FinishReason(strings.ToLower(strings.TrimSpace(s)))
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
	u := Usage{
		PromptTokens:       get("PromptTokens", "InputTokens", "input_tokens"),
		CompletionTokens:   get("CompletionTokens", "OutputTokens", "output_tokens"),
		CachedPromptTokens: get("PromptCachedTokens", "CacheReadInputTokens"),
	}
	if _, anthropic := info["CacheReadInputTokens"]; anthropic {
		// Anthropic's input_tokens leaves out the tokens read from and
		// written to its cache; OpenAI's prompt_tokens counts them.
		u.PromptTokens += u.CachedPromptTokens + get("CacheCreationInputTokens")
	}
	return u
}

// String describes the model for logs.
func (p *providerModel) String() string {
	return strings.Join([]string{string(p.role), p.cfg.Provider, p.cfg.Model}, "/")
}
