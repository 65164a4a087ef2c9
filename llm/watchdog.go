package llm

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// DefaultIdleTimeout is how long a streamed call may go without a token
// (before the first, or between two) before the idle watchdog cancels it:
// a provider that stopped sending mid-stream is bounded by this, not by
// the whole call's timeout.
const DefaultIdleTimeout = 60 * time.Second

// ErrStalled: a streamed reply stopped arriving — no token for the idle
// timeout — and the call was cancelled. RETRIABLE (kind timeout), with the
// provider's Retry-After when it sent one.
var ErrStalled = errors.New("llm: stream stalled")

// errIdle is the cancellation cause the watchdog gives a stalled call.
var errIdle = errors.New("llm: no token within the idle timeout")

// Watch returns m with an idle watchdog on its streamed calls (a Request
// with OnChunk): no token for idle and the call is cancelled, failing with
// an *Error of kind ErrStalled. Calls that do not stream are untouched.
// idle 0 means DefaultIdleTimeout; negative turns the watchdog off.
func Watch(m Model, idle time.Duration) Model {
	if idle == 0 {
		idle = DefaultIdleTimeout
	}
	if idle < 0 || m == nil {
		return m
	}
	w := watchdog{inner: m, idle: idle}
	if pm, ok := m.(*providerModel); ok {
		w.provider, w.model, w.keyEnv = pm.cfg.Provider, pm.cfg.Model, pm.keyEnv
	}
	return w
}

// WatchModels puts the idle watchdog (Watch) on every model of ms.
func WatchModels(ms Models, idle time.Duration) Models {
	if ms == nil || idle < 0 {
		return ms
	}
	return watchedModels{ms, idle}
}

type watchedModels struct {
	inner Models
	idle  time.Duration
}

func (w watchedModels) For(role Role) (Model, bool) {
	m, ok := w.inner.For(role)
	if !ok {
		return m, ok
	}
	return Watch(m, w.idle), true
}

type watchdog struct {
	inner Model
	idle  time.Duration
	// provider and model name the provider in the stalled error, for a
	// call that ended without an error of its own.
	provider, model, keyEnv string
}

func (w watchdog) reasoningOpenedInPrompt() *atomic.Bool { return reasoningMemoOf(w.inner) }
func (w watchdog) Cancelable() bool                      { return IsCancelable(w.inner) }

func (w watchdog) Generate(ctx context.Context, req Request) (Response, error) {
	if req.OnChunk == nil {
		return w.inner.Generate(ctx, req)
	}
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var fired atomic.Bool
	timer := time.AfterFunc(w.idle, func() {
		fired.Store(true)
		cancel(errIdle)
	})
	onChunk := req.OnChunk
	req.OnChunk = func(ctx context.Context, chunk string) error {
		if !fired.Load() { // once fired, a chunk in flight does not re-arm it
			timer.Reset(w.idle)
		}
		return onChunk(ctx, chunk)
	}
	resp, err := w.inner.Generate(cctx, req)
	timer.Stop()
	// Fired: the watchdog cancelled the call. Some providers end a
	// cancelled stream without an error, with what had arrived: that is
	// a cut reply all the same.
	if !fired.Load() || ctx.Err() != nil {
		return resp, err
	}
	stalled := &Error{Kind: ErrStalled, Role: req.Role, Provider: w.provider, Model: w.model, APIKeyEnv: w.keyEnv,
		Err: fmt.Errorf("no token for %s", w.idle)}
	var le *Error
	if errors.As(err, &le) {
		stalled.Role, stalled.Provider, stalled.Model, stalled.APIKeyEnv, stalled.Delay = cmpRole(le.Role, req.Role), le.Provider, le.Model, le.APIKeyEnv, le.Delay
	}
	return Response{Usage: resp.Usage}, stalled
}

func cmpRole(a, b Role) Role {
	if a != "" {
		return a
	}
	return b
}
