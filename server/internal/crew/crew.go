package crew

import (
	"context"
	"sync"
	"time"
)

// Crew owns goroutines: every goroutine of the server but the HTTP
// server's own is started through one (Go, AfterFunc), and Stop cancels
// their context and waits for the last of them, so nothing the server
// started outlives its Shutdown. The Server has two: the runs' agent calls
// (runs.Manager's) and background work (Server.background: the claim,
// listen, recovery and prune loops, lease renewals, store followers, the
// starts of queued runs and the bodies of timers). docs/architecture.md
// lists them.
type Crew struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	stopped bool
	running Tally
}

// New returns a crew ready to start goroutines.
func New() *Crew {
	ctx, cancel := context.WithCancel(context.Background())
	return &Crew{ctx: ctx, cancel: cancel}
}

// Go runs fn in a goroutine of the crew with the crew's context, and
// reports false (running nothing) once the crew is stopping.
func (c *Crew) Go(fn func(ctx context.Context)) bool {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return false
	}
	c.running.Add()
	c.mu.Unlock()
	go func() {
		defer c.running.Done()
		fn(c.ctx)
	}()
	return true
}

// AfterFunc runs fn as a goroutine of the crew after d, unless the crew
// is stopping then or the returned stop is called first.
func (c *Crew) AfterFunc(d time.Duration, fn func(ctx context.Context)) (stop func() bool) {
	t := time.AfterFunc(d, func() { c.Go(fn) })
	return t.Stop
}

// Stop refuses new goroutines, cancels the crew's context and waits for
// its goroutines to end, or for ctx.
func (c *Crew) Stop(ctx context.Context) error {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	c.cancel()
	return c.running.Wait(ctx)
}

// Tally counts what must end before wait returns (goroutines, runs),
// without a goroutine of its own waiting.
type Tally struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n == 0; nil before the first add
}

// Add counts one more.
func (t *Tally) Add() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		t.idle = make(chan struct{})
	}
	t.n++
}

// Done counts one less.
func (t *Tally) Done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n--; t.n == 0 {
		close(t.idle)
	}
}

// Wait waits until the count is zero, or for ctx.
func (t *Tally) Wait(ctx context.Context) error {
	t.mu.Lock()
	idle := t.idle
	t.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Running waits until the crew runs no goroutine, or for ctx (the crew
// goes on taking new ones).
func (c *Crew) Running(ctx context.Context) error { return c.running.Wait(ctx) }
