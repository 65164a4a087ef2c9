package llm

import (
	"context"
	"time"
)

// Call describes one model call Ask made: what a frontend shows on a turn's
// timeline. A reply cut off by the token limit and asked again is two calls.
type Call struct {
	Role Role
	// Model is the model that answered, as the provider named it ("" when
	// it did not say).
	Model string
	// Duration is the call's wall-clock time.
	Duration time.Duration
	Usage    Usage
	// Err is the call's error, nil when it answered.
	Err error
}

type observerKey struct{}

// WithCallObserver returns ctx with fn observing every model call Ask makes
// under it (as net/http/httptrace observes requests): fn receives the
// context Ask was given, so an observer can tell where the call was made.
// An observer already in ctx is replaced.
func WithCallObserver(ctx context.Context, fn func(ctx context.Context, c Call)) context.Context {
	return context.WithValue(ctx, observerKey{}, fn)
}

func observeCall(ctx context.Context, role Role, start time.Time, resp Response, err error) {
	fn, _ := ctx.Value(observerKey{}).(func(context.Context, Call))
	if fn == nil {
		return
	}
	fn(ctx, Call{Role: role, Model: resp.Model, Duration: time.Since(start), Usage: resp.Usage, Err: err})
}
