package server

import (
	"fmt"
	"time"

	"github.com/capgraph/capgraph/server/internal/apierror"
)

// Sentinel error kinds. Handlers map them to HTTP statuses in one place
// (errorStatus), never by reading messages. They are the protocols' own
// (package server/internal/apierror), given here under the same names.
var (
	ErrUnauthorized  = apierror.ErrUnauthorized
	ErrNotFound      = apierror.ErrNotFound
	ErrTooManyRuns   = apierror.ErrTooManyRuns
	ErrBadRequest    = apierror.ErrBadRequest
	ErrConflict      = apierror.ErrConflict
	ErrShuttingDown  = apierror.ErrShuttingDown
	ErrBodyTooLarge  = apierror.ErrBodyTooLarge
	ErrUnknownModel  = apierror.ErrUnknownModel
	ErrRunInProgress = apierror.ErrRunInProgress
	ErrRateLimited   = apierror.ErrRateLimited
	// ErrForbidden: the key may not do this (a loosening option, the
	// audit log without admin); answered 403.
	ErrForbidden = apierror.ErrForbidden
	// ErrUnknownHost: the Host header names no name of this server (a
	// DNS-rebinding page); answered 421.
	ErrUnknownHost = apierror.ErrUnknownHost
	// ErrCrossOrigin: a browser sent a request that may change something
	// for another site's page; answered 403.
	ErrCrossOrigin = apierror.ErrCrossOrigin
	// ErrUnsupportedMediaType: a request body that is not JSON; answered
	// 415.
	ErrUnsupportedMediaType = apierror.ErrUnsupportedMediaType
)

// ConfigError names a bad Config field.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("server config: %s: %s", e.Field, e.Reason) }

// RequestError is a rejected request: Kind is one of the sentinels above,
// Param names the offending field when there is one.
type RequestError = apierror.RequestError

func badRequest(param, format string, args ...any) error {
	return apierror.BadRequest(param, format, args...)
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
