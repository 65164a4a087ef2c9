package graphtest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/capgraph/capgraph/graph"
)

// Clock is a virtual graph.Clock. Its time moves only when the engine waits
// (WaitUntil sets it to the deadline at once) or when the test calls Advance
// or Set; a node therefore takes no time unless the test says so. It
// records every wait. Safe for concurrent use; create it with NewClock.
type Clock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Time
}

var _ graph.Clock = (*Clock)(nil)

// NewClock returns a Clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the virtual time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// WaitUntil records the wait and moves the virtual time to t if it is later,
// returning at once. A ctx already done returns its error and moves nothing,
// as a real wait canceled before its deadline would.
func (c *Clock) WaitUntil(ctx context.Context, t time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, t)
	if t.After(c.now) {
		c.now = t
	}
	return nil
}

// Advance moves the virtual time forward by d (time spent in a node, a
// process down for a while) and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// Set sets the virtual time.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Waits returns the deadlines WaitUntil was called with, in order.
func (c *Clock) Waits() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.waits)
}
