package llm

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
)

// WithOfflineFallback wraps every model of m so that a call failing because
// the provider cannot be reached (no HTTP response: connection refused, DNS)
// returns an error matching ErrOffline; nodes then answer with their offline
// strategy instead of failing. Other failures pass unchanged.
func WithOfflineFallback(m Models) Models { return offlineModels{m} }

type offlineModels struct{ inner Models }

func (o offlineModels) For(role Role) (Model, bool) {
	m, ok := o.inner.For(role)
	if !ok {
		return nil, false
	}
	return offlineFallback{m}, true
}

type offlineFallback struct{ inner Model }

func (o offlineFallback) Generate(ctx context.Context, req Request) (Response, error) {
	resp, err := o.inner.Generate(ctx, req)
	if err != nil && ctx.Err() == nil && errors.Is(err, ErrUnreachable) {
		return resp, &OfflineError{Err: err}
	}
	return resp, err
}

func (o offlineFallback) reasoningOpenedInPrompt() *atomic.Bool { return reasoningMemoOf(o.inner) }
func (o offlineFallback) Cancelable() bool                      { return IsCancelable(o.inner) }

// OfflineError says a call should be answered offline; it matches ErrOffline
// and keeps the provider's failure.
type OfflineError struct{ Err error }

func (e *OfflineError) Error() string {
	return fmt.Sprintf("answering offline: %v", e.Err)
}
func (e *OfflineError) Unwrap() []error { return []error{ErrOffline, e.Err} }
