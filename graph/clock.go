package graph

import (
	"context"
	"time"
)

// Clock is the engine's source of time: it stamps events and checkpoints,
// measures nodes, and waits before a step whose route named a NotBefore
// time. The default is SystemClock. A test replaces it to run a retry
// schedule without sleeping: graphtest.Clock moves a virtual time forward
// whenever the engine waits; inside a testing/synctest bubble the default
// clock is already virtual and needs no replacing.
//
// A Clock must be safe for concurrent use: concurrent branches read it.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// WaitUntil returns nil once the clock reads t or later (at once if it
	// already does), or ctx's error as soon as ctx is done, whichever comes
	// first. The engine holds no goroutine of its own while it waits.
	WaitUntil(ctx context.Context, t time.Time) error
}

// SystemClock is the real clock: time.Now, and one timer per wait. The zero
// value is ready to use.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// WaitUntil waits on a timer until t or until ctx is done.
func (SystemClock) WaitUntil(ctx context.Context, t time.Time) error {
	return sleep(ctx, time.Until(t))
}

// funcClock is the clock of a Config that sets Now but no Clock: its Now,
// and real timers for the time Now says is left.
type funcClock struct{ now func() time.Time }

func (c funcClock) Now() time.Time { return c.now() }

func (c funcClock) WaitUntil(ctx context.Context, t time.Time) error {
	return sleep(ctx, t.Sub(c.now()))
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
