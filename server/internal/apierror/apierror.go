package apierror

import (
	"errors"
	"fmt"
)

// Sentinel error kinds, documented where package server gives them to its
// users (server.ErrNotFound, …).
var (
	ErrUnauthorized         = errors.New("missing or invalid API key")
	ErrNotFound             = errors.New("not found")
	ErrTooManyRuns          = errors.New("too many concurrent runs")
	ErrBadRequest           = errors.New("invalid request")
	ErrConflict             = errors.New("conflict")
	ErrShuttingDown         = errors.New("server is shutting down")
	ErrBodyTooLarge         = errors.New("request body too large")
	ErrUnknownModel         = errors.New("unknown model")
	ErrRunInProgress        = errors.New("a run is already in progress on this thread")
	ErrRateLimited          = errors.New("rate limit exceeded")
	ErrForbidden            = errors.New("forbidden")
	ErrUnknownHost          = errors.New("unknown host")
	ErrCrossOrigin          = errors.New("cross-origin request")
	ErrUnsupportedMediaType = errors.New("unsupported media type")
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
