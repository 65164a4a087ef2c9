package server

import (
	"context"
	"sync"
	"time"
)

// crew owns goroutines: every goroutine of the server but the HTTP
// server's own is started through one (Go, AfterFunc), and stop cancels
// their context and waits for the last of them, so nothing the server
// started outlives its Shutdown. The Server has two: the runs' agent calls
// (runManager.calls) and background work (Server.background: the claim,
// listen, recovery and prune loops, lease renewals, store followers, the
// starts of queued runs and the bodies of timers). docs/architecture.md
// lists them.
type crew struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	stopped bool
	running tally
}

func newCrew() *crew {
	ctx, cancel := context.WithCancel(context.Background())
	return &crew{ctx: ctx, cancel: cancel}
}

// Go runs fn in a goroutine of the crew with the crew's context, and
// reports false (running nothing) once the crew is stopping.
func (c *crew) Go(fn func(ctx context.Context)) bool {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return false
	}
	c.running.add()
	c.mu.Unlock()
	go func() {
		defer c.running.done()
		fn(c.ctx)
	}()
	return true
}

// AfterFunc runs fn as a goroutine of the crew after d, unless the crew
// is stopping then or the returned stop is called first.
func (c *crew) AfterFunc(d time.Duration, fn func(ctx context.Context)) (stop func() bool) {
	t := time.AfterFunc(d, func() { c.Go(fn) })
	return t.Stop
}

// stop refuses new goroutines, cancels the crew's context and waits for
// its goroutines to end, or for ctx.
func (c *crew) stop(ctx context.Context) error {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	c.cancel()
	return c.running.wait(ctx)
}

// tally counts what must end before wait returns (goroutines, runs),
// without a goroutine of its own waiting.
type tally struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n == 0; nil before the first add
}

func (t *tally) add() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		t.idle = make(chan struct{})
	}
	t.n++
}

func (t *tally) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n--; t.n == 0 {
		close(t.idle)
	}
}

// wait waits until the count is zero, or for ctx.
func (t *tally) wait(ctx context.Context) error {
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
