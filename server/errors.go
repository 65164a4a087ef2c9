package server

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel error kinds. Handlers map them to HTTP statuses in one place
// (apiErrorFrom), never by reading messages.
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
	// ErrForbidden: the key may not do this (a loosening option, the
	// audit log without admin); answered 403.
	ErrForbidden = errors.New("forbidden")
	// ErrUnknownHost: the Host header names no name of this server (a
	// DNS-rebinding page); answered 421.
	ErrUnknownHost = errors.New("unknown host")
	// ErrCrossOrigin: a browser sent a request that may change something
	// for another site's page; answered 403.
	ErrCrossOrigin = errors.New("cross-origin request")
	// ErrUnsupportedMediaType: a request body that is not JSON; answered
	// 415.
	ErrUnsupportedMediaType = errors.New("unsupported media type")
)

// ConfigError names a bad Config field.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("server config: %s: %s", e.Field, e.Reason) }

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

func badRequest(param, format string, args ...any) error {
	return &RequestError{Kind: ErrBadRequest, Param: param, Message: fmt.Sprintf(format, args...)}
}

// TurnTimeoutError is a run stopped by Config.TurnTimeout.
type TurnTimeoutError struct {
	Limit time.Duration
	Err   error
}

func (e *TurnTimeoutError) Error() string {
	return fmt.Sprintf("the turn exceeded its time limit of %s", e.Limit)
}

func (e *TurnTimeoutError) Unwrap() error { return e.Err }
