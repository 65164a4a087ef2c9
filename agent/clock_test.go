package agent_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/graphtest"
)

// Config.Clock reaches the engine and, with Now unset, the agent's own
// times: a capability's retry schedule runs on the virtual clock, with no
// sleeping and exact times.
func TestRetryPolicyWithVirtualClock(t *testing.T) {
	start := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	clock := graphtest.NewClock(start)
	w := newWorld("read_a")
	w.caps["read_a"].errs = repeat(errTimeout, 2)
	w.policy = capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Second, Jitter: capabilities.JitterNone}
	cfg := w.config(t)
	cfg.Clock = clock
	a := mustAgent(t, cfg)
	o := run(t, a, "t", "x")
	wantAnswer(t, o)
	var (
		delays    []time.Duration
		notBefore []time.Time
	)
	for _, e := range o.events {
		if e.Type == agent.EventRetry {
			delays = append(delays, e.Retry.Delay)
			notBefore = append(notBefore, e.Retry.NotBefore)
		}
	}
	want := []time.Time{start.Add(time.Second), start.Add(3 * time.Second)}
	eq := func(a, b []time.Time) bool {
		return slices.EqualFunc(a, b, func(x, y time.Time) bool { return x.Equal(y) })
	}
	if fmt.Sprint(delays) != "[1s 2s]" || !eq(notBefore, want) {
		t.Errorf("retries: delays %v, not before %v; want [1s 2s] at %v", delays, notBefore, want)
	}
	if !eq(clock.Waits(), want) || !clock.Now().Equal(want[1]) {
		t.Errorf("the engine waited for %v and left the clock at %v; want %v and %v", clock.Waits(), clock.Now(), want, want[1])
	}
}
