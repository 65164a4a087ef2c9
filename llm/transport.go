package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 16 << 10

// statusDoer is the Doer handed to langchaingo's openai and anthropic
// providers. It turns a non-2xx response into an *HTTPError and a failed
// request into a *TransportError, so status, Retry-After and the kind of
// transport failure survive langchaingo's string flattening.
type statusDoer struct {
	client *http.Client
	now    func() time.Time
}

func (d statusDoer) Do(req *http.Request) (*http.Response, error) {
	tr := traceOf(req.Context())
	if err := tr.editBody(req); err != nil {
		return nil, err
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, transportError(err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, readHTTPError(resp, d.now())
	}
	tr.watch(resp)
	return resp, nil
}

// statusTransport does the same as statusDoer for providers that take an
// *http.Client (ollama, googleai): it wraps the client's Transport.
type statusTransport struct {
	base http.RoundTripper
	now  func() time.Time
}

func (t statusTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tr := traceOf(req.Context())
	if tr != nil && len(tr.set) > 0 {
		req = req.Clone(req.Context()) // a RoundTripper must not change the caller's request
		if err := tr.editBody(req); err != nil {
			return nil, err
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, transportError(err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, readHTTPError(resp, t.now())
	}
	tr.watch(resp)
	return resp, nil
}

// callTrace carries one call's request edits to the wrapped client and
// brings back what the response said that langchaingo drops. It travels in
// the request's context, which langchaingo passes through unchanged.
type callTrace struct {
	// set replaces top-level fields of the JSON request body; a nil value
	// removes the field. This is where options langchaingo lacks are sent
	// (response_format json_schema, Ollama's format schema) or withheld
	// (stream_options).
	set map[string]any
	// doneReason, when watched, is Ollama's done_reason.
	watchDone  bool
	mu         sync.Mutex
	doneReason string
}

type traceKey struct{}

func withTrace(ctx context.Context, tr *callTrace) context.Context {
	return context.WithValue(ctx, traceKey{}, tr)
}

func traceOf(ctx context.Context) *callTrace {
	tr, _ := ctx.Value(traceKey{}).(*callTrace)
	return tr
}

// editBody applies the trace's edits to a JSON request body.
func (tr *callTrace) editBody(req *http.Request) error {
	if tr == nil || len(tr.set) == 0 || req.Body == nil || req.Method != http.MethodPost {
		return nil
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return &TransportError{Msg: "reading the request body: " + err.Error()}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err == nil {
		for k, v := range tr.set {
			if v == nil {
				delete(fields, k)
				continue
			}
			b, err := json.Marshal(v)
			if err != nil {
				return &TransportError{Msg: "encoding " + k + ": " + err.Error()}
			}
			fields[k] = b
		}
		if edited, err := json.Marshal(fields); err == nil {
			body = edited
		}
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return nil
}

// watch wraps a successful response's body to read Ollama's done_reason.
func (tr *callTrace) watch(resp *http.Response) {
	if tr == nil || !tr.watchDone || resp.Body == nil {
		return
	}
	resp.Body = &doneReasonBody{ReadCloser: resp.Body, tr: tr}
}

func (tr *callTrace) finish() string {
	if tr == nil {
		return ""
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.doneReason
}

// maxWatchedLine bounds the line doneReasonBody keeps; Ollama's final line
// (the one with done_reason) is short.
const maxWatchedLine = 64 << 10

// doneReasonBody reads done_reason from the NDJSON lines of Ollama's
// /api/chat as they pass.
type doneReasonBody struct {
	io.ReadCloser
	tr   *callTrace
	line []byte
	long bool
}

func (b *doneReasonBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	for _, c := range p[:n] {
		if c == '\n' {
			b.check()
			continue
		}
		if len(b.line) < maxWatchedLine {
			b.line = append(b.line, c)
		} else {
			b.long = true
		}
	}
	if err == io.EOF {
		b.check()
	}
	return n, err
}

func (b *doneReasonBody) check() {
	if !b.long && len(b.line) > 0 {
		var v struct {
			DoneReason string `json:"done_reason"`
		}
		if json.Unmarshal(b.line, &v) == nil && v.DoneReason != "" {
			b.tr.mu.Lock()
			b.tr.doneReason = v.DoneReason
			b.tr.mu.Unlock()
		}
	}
	b.line, b.long = b.line[:0], false
}

func transportError(err error) *TransportError {
	var ne net.Error
	timeout := errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
	// The message is kept but the chain is cut on purpose (see TransportError).
	return &TransportError{Timeout: timeout, Msg: err.Error()}
}

func readHTTPError(resp *http.Response, now time.Time) *HTTPError {
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	he := &HTTPError{StatusCode: resp.StatusCode, RetryAfter: parseRetryAfter(resp.Header, now),
		Body: strings.TrimSpace(string(body))}
	he.Code, he.Message = parseErrorBody(body)
	return he
}

// parseRetryAfter reads retry-after-ms (OpenAI) or Retry-After (seconds or
// an HTTP date).
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// parseErrorBody extracts the error code and message from the JSON error
// bodies of OpenAI, Anthropic, Google and Ollama.
func parseErrorBody(body []byte) (code, msg string) {
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || len(env.Error) == 0 {
		return "", ""
	}
	var s string
	if json.Unmarshal(env.Error, &s) == nil {
		return "", s // ollama: {"error": "..."}
	}
	var obj struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Status  string          `json:"status"`
	}
	if json.Unmarshal(env.Error, &obj) != nil {
		return "", ""
	}
	var c string
	if json.Unmarshal(obj.Code, &c) == nil && c != "" {
		return c, obj.Message
	}
	if obj.Type != "" {
		return obj.Type, obj.Message
	}
	return obj.Status, obj.Message
}

// kindOf decides the kind of a failed call from typed data, in order: the
// caller's context, our HTTP and transport errors, and last the message text.
//
//lint:ignore ST1008 kind is the failure's class (one of the Err sentinels), not an error of kindOf
func kindOf(ctx context.Context, err error) (kind error, status int, delay time.Duration, code string) {
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(cerr, context.DeadlineExceeded) {
			return ErrTimeout, 0, 0, ""
		}
		return ErrCanceled, 0, 0, ""
	}
	var he *HTTPError
	if errors.As(err, &he) {
		return kindOfStatus(he), he.StatusCode, he.RetryAfter, he.Code
	}
	var te *TransportError
	if errors.As(err, &te) {
		if te.Timeout {
			return ErrTimeout, 0, 0, ""
		}
		return ErrUnreachable, 0, 0, ""
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ErrTimeout, 0, 0, ""
	}
	if errors.Is(err, context.Canceled) {
		return ErrCanceled, 0, 0, ""
	}
	return kindOfMessage(err.Error()), 0, 0, ""
}

func kindOfStatus(he *HTTPError) error {
	code := strings.ToLower(he.Code)
	switch {
	case code == "insufficient_quota" || code == "billing_hard_limit_reached":
		return ErrQuota
	case code == "context_length_exceeded" || code == "string_above_max_length":
		return ErrContextLength
	}
	switch s := he.StatusCode; {
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return ErrAuth
	case s == http.StatusPaymentRequired:
		return ErrQuota
	case s == http.StatusNotFound:
		return ErrNotFound
	case s == http.StatusRequestTimeout:
		return ErrTimeout
	case s == http.StatusRequestEntityTooLarge:
		return ErrContextLength
	case s == http.StatusTooManyRequests:
		return ErrRateLimited
	case s >= 500: // includes Anthropic's 529 "overloaded"
		return ErrServer
	case s == http.StatusBadRequest:
		// Providers report an over-long prompt as a plain 400; only its text says so.
		if kindOfMessage(he.Message+" "+he.Body) == ErrContextLength {
			return ErrContextLength
		}
		return ErrBadRequest
	}
	return ErrBadRequest
}

// messageKinds is the one place where a failure is classified by its text:
// the last resort for errors that reach us without an HTTP status (providers
// whose client we cannot wrap, or bodies that say more than the status).
var messageKinds = []struct {
	needle string
	kind   error
}{
	{"context length", ErrContextLength},
	{"context_length_exceeded", ErrContextLength},
	{"maximum context", ErrContextLength},
	{"too many tokens", ErrContextLength},
	{"prompt is too long", ErrContextLength},
	{"insufficient_quota", ErrQuota},
	{"exceeded your current quota", ErrQuota},
	{"rate limit", ErrRateLimited},
	{"status code: 429", ErrRateLimited},
	{"invalid api key", ErrAuth},
	{"incorrect api key", ErrAuth},
	{"status code: 401", ErrAuth},
	{"status code: 403", ErrAuth},
	{"timeout", ErrTimeout},
	{"deadline", ErrTimeout},
	{"connection refused", ErrUnreachable},
	{"no such host", ErrUnreachable},
	{"failed to reach", ErrUnreachable},
	{"status code: 5", ErrServer},
}

func kindOfMessage(msg string) error {
	l := strings.ToLower(msg)
	for _, mk := range messageKinds {
		if strings.Contains(l, mk.needle) {
			return mk.kind
		}
	}
	return ErrUnknown
}
