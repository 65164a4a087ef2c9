package apierror

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Sentinel error kinds. The server maps them to HTTP statuses in one place
// (its errorStatus), never by reading messages.
var (
	ErrUnauthorized  = errors.New("missing or invalid API key")
	ErrNotFound      = errors.New("not found")
	ErrTooManyRuns   = errors.New("too many concurrent runs")
	ErrBadRequest    = errors.New("invalid request")
	ErrConflict      = errors.New("conflict")
	ErrShuttingDown  = errors.New("server is shutting down")
	ErrBodyTooLarge  = errors.New("request body too large")
	ErrUnknownModel  = errors.New("unknown model")
	ErrRunInProgress = errors.New("a run is already in progress on this thread")
	ErrRateLimited   = errors.New("rate limit exceeded")
	ErrForbidden     = errors.New("forbidden")
	ErrUnknownHost   = errors.New("unknown host")
	ErrCrossOrigin   = errors.New("cross-origin request")
	// ErrForbidden: the key may not do this (a loosening option, the
	// audit log without admin); answered 403. ErrUnknownHost: the Host
	// header names no name of this server (a DNS-rebinding page); 421.
	// ErrCrossOrigin: a browser sent a request that may change something
	// for another site's page; 403. ErrUnsupportedMediaType: a request
	// body that is not JSON; 415.
	ErrUnsupportedMediaType = errors.New("unsupported media type")
	// ErrBodyTimeout: the request body stopped arriving before its end.
	ErrBodyTimeout = errors.New("request body timeout")
	// ErrDuplicateInProgress: an identical request's run goes on
	// elsewhere (in recovery, or on another replica); 409 with
	// Retry-After, which SDKs retry.
	ErrDuplicateInProgress = errors.New("an identical request is being answered")
	// ErrQuota: the caller holds as much as it may (threads); 403, not
	// 429, because waiting does not help: deleting does.
	ErrQuota = errors.New("quota exceeded")
	// ErrMethodNotAllowed: the path exists for other methods (405).
	ErrMethodNotAllowed = errors.New("method not allowed")
	// ErrKeyReused: an Idempotency-Key sent again with a different
	// request. 422 (the IETF Idempotency-Key draft), never the first
	// request's answer.
	ErrKeyReused = errors.New("idempotency key reused with a different request")
)

// RequestError is a rejected request: Kind is one of the sentinels above,
// Param names the offending field when there is one.
type RequestError struct {
	Kind    error
	Param   string
	Message string
}

func (e *RequestError) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("%s: %s", e.Param, e.Message)
	}
	return e.Message
}

func (e *RequestError) Unwrap() error { return e.Kind }

// BadRequest is a RequestError of kind ErrBadRequest naming param.
func BadRequest(param, format string, args ...any) error {
	return &RequestError{Kind: ErrBadRequest, Param: param, Message: fmt.Sprintf(format, args...)}
}

// RateLimitError is a request refused by the server's requests-per-minute
// limit.
type RateLimitError struct {
	Limit int // requests per minute
	// RetryAfter is when the next request will be accepted.
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("rate limit of %d requests per minute for this API key exceeded; retry in %d s", e.Limit, RetryAfterSeconds(e.RetryAfter))
}

func (e *RateLimitError) Unwrap() error { return ErrRateLimited }

// RetryAfterSeconds rounds up to whole seconds, at least 1 (a Retry-After
// header's value).
func RetryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// TurnTimeoutError is a run stopped by the turn's time limit.
type TurnTimeoutError struct {
	Limit time.Duration
	Err   error
}

func (e *TurnTimeoutError) Error() string {
	return fmt.Sprintf("the turn exceeded its time limit of %s", e.Limit)
}

func (e *TurnTimeoutError) Unwrap() error { return e.Err }
