package llm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

// Sentinel kinds of LLM failures. Every *Error matches exactly one of them
// with errors.Is, so callers decide from data, not from message text.
var (
	ErrRateLimited   = errors.New("llm: rate limited")
	ErrServer        = errors.New("llm: provider server error")
	ErrTimeout       = errors.New("llm: timeout")
	ErrUnreachable   = errors.New("llm: provider unreachable")
	ErrAuth          = errors.New("llm: API key rejected")
	ErrQuota         = errors.New("llm: quota exhausted")
	ErrContextLength = errors.New("llm: context length exceeded")
	ErrNotFound      = errors.New("llm: model or endpoint not found")
	ErrBadRequest    = errors.New("llm: request rejected")
	ErrCanceled      = errors.New("llm: call canceled")
	ErrUnknown       = errors.New("llm: provider error")
	// ErrTruncated: the reply was still cut off by the token limit after
	// being asked again with a larger one (Ask). Asking again with the same
	// limit would be cut again, so it is CRITICAL and says what to raise.
	ErrTruncated = errors.New("llm: reply cut off at the token limit")
	// ErrOffline is returned (wrapped around the real failure) by a model of a
	// Models built with Fallback "offline" when the provider cannot be reached:
	// the node should use its offline strategy instead of failing.
	ErrOffline = errors.New("llm: unreachable, use offline strategy")
)

// Error is a failed model call. It keeps what the provider said as data: the
// HTTP status, the Retry-After delay and the provider's error code.
type Error struct {
	// Kind is one of the sentinel errors above.
	Kind     error
	Role     Role
	Provider string
	Model    string
	// StatusCode is the HTTP status, 0 when no response arrived.
	StatusCode int
	// Delay is the server's Retry-After, 0 when it sent none.
	Delay time.Duration
	// Code is the provider's error code from the body ("insufficient_quota",
	// "context_length_exceeded"), when it sent one.
	Code string
	// APIKeyEnv names the environment variable the role's key came from, for
	// actionable messages.
	APIKeyEnv string
	// MaxTokens is the limit a cut reply hit (ErrTruncated); 0 when the
	// provider's default applied.
	MaxTokens int
	// Err is the underlying error.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "llm role %s", e.Role)
	if e.Provider != "" {
		fmt.Fprintf(&b, " (%s", e.Provider)
		if e.Model != "" {
			fmt.Fprintf(&b, " %s", e.Model)
		}
		b.WriteString(")")
	}
	b.WriteString(": ")
	b.WriteString(strings.TrimPrefix(e.kind().Error(), "llm: "))
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.StatusCode)
	}
	if e.kind() == ErrTruncated && e.MaxTokens > 0 {
		fmt.Fprintf(&b, " (max_tokens %d)", e.MaxTokens)
	}
	// The provider's own words, without langchaingo's wrapping around them.
	var he *HTTPError
	switch {
	case errors.As(e.Err, &he):
		if msg := cmp.Or(he.Message, truncate(he.Body, 300)); msg != "" {
			b.WriteString(": ")
			b.WriteString(msg)
		}
	case e.Err != nil:
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) kind() error {
	if e.Kind == nil {
		return ErrUnknown
	}
	return e.Kind
}

// Unwrap exposes the kind, the cause and, for a context-length failure,
// capabilities.ErrResourceExhausted.
func (e *Error) Unwrap() []error {
	out := []error{e.kind()}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	if e.kind() == ErrContextLength {
		out = append(out, capabilities.ErrResourceExhausted)
	}
	return out
}

// HTTPStatus returns the HTTP status code, 0 when no response arrived.
func (e *Error) HTTPStatus() int { return e.StatusCode }

// RetryAfter returns the server's Retry-After delay, 0 when none.
func (e *Error) RetryAfter() time.Duration { return e.Delay }

// Classification says how the agent recovers: transient failures are
// RETRIABLE (with the server's delay), a rejected key, exhausted quota or a
// bad request are CRITICAL with a message naming the role and what to fix,
// and a context-length failure is resource exhaustion.
func (e *Error) Classification() capabilities.Classification {
	c := capabilities.Classification{Metadata: map[string]any{
		capabilities.MetaTechnicalDetails: e.Error(),
	}}
	who := fmt.Sprintf("role %s", e.Role)
	switch e.kind() {
	case ErrRateLimited:
		c.Severity, c.Kind = capabilities.Retriable, capabilities.KindRateLimit
		c.UserMessage = fmt.Sprintf("the language model for %s is rate limited", who)
		c.RetryAfter = capabilities.Duration(e.Delay)
	case ErrServer:
		c.Severity, c.Kind = capabilities.Retriable, capabilities.KindServerError
		c.UserMessage = fmt.Sprintf("the language model provider for %s returned a server error", who)
		c.RetryAfter = capabilities.Duration(e.Delay)
	case ErrTimeout:
		c.Severity, c.Kind = capabilities.Retriable, capabilities.KindTimeout
		c.UserMessage = fmt.Sprintf("the language model for %s timed out", who)
	case ErrStalled:
		c.Severity, c.Kind = capabilities.Retriable, capabilities.KindTimeout
		c.UserMessage = fmt.Sprintf("the language model for %s stopped sending its reply", who)
		c.RetryAfter = capabilities.Duration(e.Delay)
	case ErrUnreachable:
		c.Severity, c.Kind = capabilities.Retriable, capabilities.KindConnection
		c.UserMessage = fmt.Sprintf("the language model provider for %s could not be reached", who)
	case ErrAuth:
		c.Severity, c.Kind = capabilities.Critical, capabilities.KindAuth
		c.UserMessage = fmt.Sprintf("the API key for %s was rejected", who)
		c.Metadata[capabilities.MetaSuggestions] = e.keyHint()
	case ErrQuota:
		c.Severity, c.Kind = capabilities.Critical, capabilities.KindQuota
		c.UserMessage = fmt.Sprintf("the quota of the API key for %s is exhausted", who)
		c.Metadata[capabilities.MetaSuggestions] = "top up the account or configure another key or provider for " + who
	case ErrContextLength:
		c.Severity, c.Kind = capabilities.Critical, capabilities.KindResourceExhausted
		c.UserMessage = fmt.Sprintf("the prompt for %s exceeds the model's context length", who)
		c.Metadata[capabilities.MetaSuggestions] = "start a new conversation, shorten the request, or configure a model with a larger context for " + who
	case ErrNotFound:
		c.Severity, c.Kind = capabilities.Critical, capabilities.KindNotFound
		c.UserMessage = fmt.Sprintf("the model %q for %s was not found at the provider", e.Model, who)
		c.Metadata[capabilities.MetaSuggestions] = "check the model name and base URL configured for " + who
	case ErrBadRequest:
		c.Severity, c.Kind = capabilities.Critical, capabilities.KindInvalidInput
		c.UserMessage = fmt.Sprintf("the language model provider rejected the request for %s", who)
	case ErrTruncated:
		// A configured limit, not a resource that frees up: no escalation, the error node says what to raise.
		c.Severity, c.Kind = capabilities.Critical, capabilities.KindLimitViolation
		limit := "the provider's default limit"
		if e.MaxTokens > 0 {
			limit = fmt.Sprintf("%d tokens", e.MaxTokens)
		}
		c.UserMessage = fmt.Sprintf("the reply of the language model for %s was cut off at %s, also when asked again with a larger limit", who, limit)
		c.Metadata[capabilities.MetaSuggestions] = fmt.Sprintf("raise models.%s.max_tokens (or models.default.max_tokens) in the configuration; "+
			"a reasoning model needs room for its thinking as well as its answer", e.Role)
	case ErrCanceled:
		c.Severity, c.Kind = capabilities.Fatal, capabilities.KindUnknown
		c.UserMessage = "the request was canceled"
	default:
		c.Severity, c.Kind = capabilities.Retriable, capabilities.KindUnknown
		c.UserMessage = fmt.Sprintf("the language model call for %s failed", who)
	}
	return c
}

func (e *Error) keyHint() string {
	if e.APIKeyEnv != "" {
		return fmt.Sprintf("check the environment variable %s (the API key for role %s)", e.APIKeyEnv, e.Role)
	}
	return fmt.Sprintf("configure api_key_env for role %s", e.Role)
}

// CapabilityError converts err into the *capabilities.Error the agent
// classifies: an *Error keeps its classification and stays reachable through
// errors.As; anything else is an unknown, retriable LLM failure.
func CapabilityError(err error) *capabilities.Error {
	var ce *capabilities.Error
	if errors.As(err, &ce) {
		return ce
	}
	var le *Error
	if !errors.As(err, &le) {
		le = &Error{Kind: ErrUnknown, Err: err}
		if errors.Is(err, context.Canceled) {
			le.Kind = ErrCanceled
		}
	}
	c := le.Classification()
	return &capabilities.Error{Severity: c.Severity, Kind: c.Kind, UserMessage: c.UserMessage,
		Metadata: c.Metadata, RetryAfter: c.RetryAfter.D(), Err: err}
}

// HTTPError is what the wrapped HTTP client returns for a non-2xx response,
// before langchaingo can flatten it to a string. It deliberately does not
// wrap context or net errors: langchaingo's sanitizer would replace those.
type HTTPError struct {
	StatusCode int
	// RetryAfter is the parsed Retry-After header, 0 when absent.
	RetryAfter time.Duration
	// Code and Message come from the JSON error body when it has one.
	Code    string
	Message string
	// Body is the start of the response body.
	Body string
}

func (e *HTTPError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = e.Body
	}
	if msg == "" {
		return fmt.Sprintf("HTTP %d", e.StatusCode)
	}
	return fmt.Sprintf("HTTP %d: %s", e.StatusCode, msg)
}

// TransportError is a request that got no HTTP response. Like HTTPError it
// keeps its kind as data and wraps nothing langchaingo would rewrite.
type TransportError struct {
	Timeout bool
	Msg     string
}

func (e *TransportError) Error() string { return e.Msg }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ErrProviderNotCompiled: the configured provider is not in this binary (the
// googleai provider is opt-in with the build tag capgraph_googleai).
var ErrProviderNotCompiled = errors.New("provider not compiled into this binary")
