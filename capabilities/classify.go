package capabilities

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
)

// KindMissingInput: a step's input is not in the context store; the plan is
// wrong, so the default classifier asks for a new plan.
const KindMissingInput = "missing_input"

// StatusError carries an HTTP status code (and a server's Retry-After) through
// an error chain, so classification decides from data rather than from text.
// A capability calling an HTTP service wraps non-2xx answers in it.
type StatusError struct {
	Code int
	// Delay is the server's Retry-After, 0 when it sent none.
	Delay time.Duration
	Err   error
}

func (e *StatusError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("HTTP %d: %v", e.Code, e.Err)
	}
	return fmt.Sprintf("HTTP %d", e.Code)
}

func (e *StatusError) Unwrap() error { return e.Err }

// HTTPStatus returns the status code (the interface the default classifier looks for).
func (e *StatusError) HTTPStatus() int { return e.Code }

// RetryAfter returns the server's Retry-After (the interface the default
// classifier looks for).
func (e *StatusError) RetryAfter() time.Duration { return e.Delay }

// The method sets the default classifier recognises anywhere in an error chain.
// Other packages (the llm package's typed errors, an application's HTTP
// client) implement them without importing this package's types.
type (
	httpStatuser  interface{ HTTPStatus() int }
	retryAfterer  interface{ RetryAfter() time.Duration }
	timeouter     interface{ Timeout() bool }
	classificater interface{ Classification() Classification }
)

// Classify classifies err for capability c: c's own ClassifyError first (when
// it implements ErrorClassifier and returns a severity), else DefaultClassify.
// The result always has a severity, a kind and technical details.
func Classify(c any, err error, ec ErrorContext) Classification {
	var cl Classification
	if ecl, ok := c.(ErrorClassifier); ok && err != nil {
		cl = ecl.ClassifyError(err, ec)
	}
	if cl.Severity == SeverityUnset {
		return DefaultClassify(err)
	}
	return complete(cl, err)
}

// DefaultClassify classifies an error nobody else classified:
//
//   - an *Error (or anything with a Classification() method) states its own;
//   - ErrResourceExhausted → CRITICAL, kind resource_exhausted (the agent pauses the run);
//   - ErrPanic → CRITICAL, kind panic;
//   - ErrWritesDisabled → CRITICAL, kind writes_disabled;
//   - ErrMissingInput → REPLANNING, kind missing_input;
//   - deadline exceeded, timeouts → RETRIABLE, kind timeout;
//   - connection refused, reset or aborted → RETRIABLE, kind connection;
//   - HTTP 429 → RETRIABLE, kind rate_limit; 502, 503, 504 → RETRIABLE,
//     kind server_error; a Retry-After overrides the computed delay;
//   - anything else → CRITICAL, kind unknown.
//
// Only errors that carry no type information at all are matched by text, in
// kindFromText.
func DefaultClassify(err error) Classification {
	if err == nil {
		return Classification{Severity: Critical, Kind: KindUnknown, UserMessage: "an unknown failure occurred"}
	}
	var ce classificater
	if errors.As(err, &ce) {
		if cl := ce.Classification(); cl.Severity != SeverityUnset {
			return complete(cl, err)
		}
	}
	kind := kindOf(err)
	cl := Classification{Kind: kind}
	switch kind {
	case KindTimeout:
		cl.Severity, cl.UserMessage = Retriable, "the operation timed out"
	case KindConnection:
		cl.Severity, cl.UserMessage = Retriable, "the connection to a service failed"
	case KindRateLimit:
		cl.Severity, cl.UserMessage = Retriable, "a service is rate limiting requests"
	case KindServerError:
		cl.Severity, cl.UserMessage = Retriable, "a service is temporarily unavailable"
	case KindMissingInput:
		cl.Severity, cl.UserMessage = Replanning, "a step's input data is missing"
		cl.Metadata = map[string]any{MetaReplanningReason: err.Error()}
	case KindResourceExhausted:
		cl.Severity, cl.UserMessage = Critical, "a resource is exhausted"
	case KindPanic:
		cl.Severity, cl.UserMessage = Critical, "an internal error occurred"
	case KindWritesDisabled:
		cl.Severity, cl.UserMessage = Critical, "control-system writes are disabled"
	default:
		// Kinds such as auth or not_found are kept: a retry policy's
		// NonRetryable list and the report use them.
		cl.Severity, cl.UserMessage = Critical, "an unexpected error occurred"
	}
	var ra retryAfterer
	if errors.As(err, &ra) && ra.RetryAfter() > 0 {
		cl.RetryAfter = Duration(ra.RetryAfter())
	}
	return complete(cl, err)
}

// kindOf derives an error kind from typed information in the chain.
func kindOf(err error) string {
	var ce *Error
	switch {
	case errors.As(err, &ce) && ce.Kind != "":
		return ce.Kind
	case errors.Is(err, ErrResourceExhausted):
		return KindResourceExhausted
	case errors.Is(err, ErrPanic):
		return KindPanic
	case errors.Is(err, ErrWritesDisabled):
		return KindWritesDisabled
	case errors.Is(err, ErrMissingInput):
		return KindMissingInput
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return KindTimeout
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, net.ErrClosed):
		return KindConnection
	}
	var hs httpStatuser
	if errors.As(err, &hs) {
		switch code := hs.HTTPStatus(); {
		case code == 429:
			return KindRateLimit
		case code == 502, code == 503, code == 504:
			return KindServerError
		case code == 408:
			return KindTimeout
		case code == 401, code == 403:
			return KindAuth
		case code == 404:
			return KindNotFound
		case code >= 400 && code < 500:
			return KindInvalidInput
		}
		return KindUnknown
	}
	var to timeouter
	if errors.As(err, &to) && to.Timeout() {
		return KindTimeout
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return KindConnection
	}
	if k, ok := kindFromText(err.Error()); ok {
		return k
	}
	return KindUnknown
}

// textKinds is the only place error text is read: for libraries that flatten
// errors to strings. Order matters: the first match wins.
var textKinds = []struct{ substr, kind string }{
	{"context deadline exceeded", KindTimeout},
	{"i/o timeout", KindTimeout},
	{"connection refused", KindConnection},
	{"connection reset by peer", KindConnection},
	{"broken pipe", KindConnection},
	{"no such host", KindConnection},
	{"status code: 429", KindRateLimit},
	{"status code 429", KindRateLimit},
	{"too many requests", KindRateLimit},
	{"status code: 502", KindServerError},
	{"status code: 503", KindServerError},
	{"status code: 504", KindServerError},
	{"status code 502", KindServerError},
	{"status code 503", KindServerError},
	{"status code 504", KindServerError},
	{"bad gateway", KindServerError},
	{"service unavailable", KindServerError},
	{"gateway timeout", KindTimeout},
}

// kindFromText maps the text of an untyped error to a kind, for errors that
// reach us flattened to strings. It recognises only a fixed table of phrases
// (case-insensitive) and reports ok=false for anything else.
func kindFromText(msg string) (kind string, ok bool) {
	l := strings.ToLower(msg)
	for _, t := range textKinds {
		if strings.Contains(l, t.substr) {
			return t.kind, true
		}
	}
	return "", false
}

// complete fills what a classification left out: a kind and the technical details.
func complete(cl Classification, err error) Classification {
	if cl.Kind == "" && err != nil {
		cl.Kind = kindOf(err)
	}
	if err != nil {
		if _, ok := cl.Metadata[MetaTechnicalDetails]; !ok {
			md := make(map[string]any, len(cl.Metadata)+1)
			for k, v := range cl.Metadata {
				md[k] = v
			}
			md[MetaTechnicalDetails] = err.Error()
			cl.Metadata = md
		}
	}
	if cl.UserMessage == "" && err != nil {
		cl.UserMessage = err.Error()
	}
	return cl
}

// PanicError is a panic recovered from a capability or node; it matches ErrPanic.
type PanicError struct {
	Value any
	Stack string
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }
func (e *PanicError) Unwrap() error { return ErrPanic }
