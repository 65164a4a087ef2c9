package agent

import (
	"context"
	"errors"
	"runtime/debug"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/state"
)

// This file holds what every node wrapper shares: the thread in the context,
// the turn's deadline and its events. What a wrapper does with a failure is
// in failure.go.

type threadKey struct{}

func withThread(ctx context.Context, thread string) context.Context {
	return context.WithValue(ctx, threadKey{}, thread)
}

func threadOf(ctx context.Context) string {
	t, _ := ctx.Value(threadKey{}).(string)
	return t
}

// deadline is the turn's wall-clock limit.
func (a *Agent) deadline(s state.State) time.Time {
	start := s.Turn.StartedAt
	if start.IsZero() {
		start = a.cfg.Now()
	}
	// Time spent waiting for a human does not count; time spent crashed does.
	return start.Add(a.cfg.Limits.MaxExecutionTime + s.Turn.Control.Paused)
}

// overLimit returns the update a node returns instead of running when the
// turn's wall-clock limit has passed.
func (a *Agent) overLimit(s state.State, now time.Time) (state.Update, bool) {
	if now.Before(a.deadline(s)) {
		return state.Update{}, false
	}
	return state.Update{NodeSteps: 1, LimitExceeded: router.LimitExecutionTime}, true
}

// timedOut reports whether err is the turn's own deadline passing.
func (a *Agent) timedOut(s state.State, err error) bool {
	return isCtxErr(err) && !a.cfg.Now().Before(a.deadline(s))
}

func isCtxErr(err error) bool {
	return err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled))
}

func panicErr(v any) error {
	return &capabilities.PanicError{Value: v, Stack: string(debug.Stack())}
}

// emit sends an agent event from inside a node; Run passes it through.
func emit(ctx context.Context, e Event) { graph.Emit(ctx, e) }
