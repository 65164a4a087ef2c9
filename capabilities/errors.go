package capabilities

import (
	"errors"
	"strings"
	"time"
)

// Error kinds: the typed vocabulary behind classification decisions and a
// retry policy's NonRetryable list.
const (
	KindTimeout           = "timeout"
	KindConnection        = "connection"
	KindRateLimit         = "rate_limit"
	KindServerError       = "server_error"
	KindAuth              = "auth"
	KindQuota             = "quota"
	KindResourceExhausted = "resource_exhausted"
	KindPanic             = "panic"
	KindFormat            = "format"
	KindInvalidInput      = "invalid_input"
	KindNotFound          = "not_found"
	KindWritesDisabled    = "writes_disabled"
	KindLimitViolation    = "limit_violation"
	KindRejected          = "rejected"
	KindUnknown           = "unknown"
)

// Sentinel errors a capability can wrap so the default classifier decides
// without reading messages.
var (
	// ErrResourceExhausted: out of memory, disk full, context length exceeded,
	// budget spent. Not retried: the run pauses for a human.
	ErrResourceExhausted = errors.New("resource exhausted")
	// ErrWritesDisabled: the global writes_enabled switch is off.
	ErrWritesDisabled = errors.New("control-system writes are disabled")
	// ErrPanic marks a recovered panic.
	ErrPanic = errors.New("capability panicked")
)

// Error is an error a capability returns to state its own classification.
// The default classifier uses it as is.
type Error struct {
	Severity    Severity
	Kind        string
	UserMessage string
	Metadata    map[string]any
	RetryAfter  time.Duration
	Err         error
}

func (e *Error) Error() string {
	switch {
	case e.Err != nil && e.UserMessage != "":
		// "The sensor timed out (attempt 3): sensor did not answer", not
		// "…(attempt 3).: sensor…".
		return strings.TrimRight(e.UserMessage, ".") + ": " + e.Err.Error()
	case e.Err != nil:
		return e.Err.Error()
	case e.UserMessage != "":
		return e.UserMessage
	}
	return e.Severity.String() + " error"
}

func (e *Error) Unwrap() error { return e.Err }

// Classification returns the classification the error states.
func (e *Error) Classification() Classification {
	return Classification{Severity: e.Severity, UserMessage: e.UserMessage, Metadata: e.Metadata,
		Kind: e.Kind, RetryAfter: Duration(e.RetryAfter)}
}

// NewError returns an *Error with a severity and a message for the user.
func NewError(sev Severity, kind, userMessage string, cause error) *Error {
	return &Error{Severity: sev, Kind: kind, UserMessage: userMessage, Err: cause}
}
