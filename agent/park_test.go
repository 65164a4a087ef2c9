package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/graphtest"
)

func collect(t *testing.T, events func(func(agent.Event, error) bool)) outcome {
	t.Helper()
	var o outcome
	for ev, err := range events {
		o.events = append(o.events, ev)
		if err != nil {
			o.err = err
		}
	}
	return o
}

// A retry wait longer than the park threshold ends the call with
// RunWaiting and the time; Resume then continues the same turn with the
// router's schedule (the attempt count, the delay from the attempt's end)
// unchanged.
func TestParkedRetryResumesOnTheCompiledAgent(t *testing.T) {
	start := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	clock := graphtest.NewClock(start)
	w := newWorld("read_a")
	w.caps["read_a"].errs = repeat(errTimeout, 2)
	w.policy = capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Second, Jitter: capabilities.JitterNone}
	cfg := w.config(t)
	cfg.Clock = clock
	a := mustAgent(t, cfg)
	ctx := graph.WithParkAfter(context.Background(), 1500*time.Millisecond)

	o := collect(t, a.Run(ctx, agent.TurnRequest{Thread: "t", Input: "read a"}))
	due := start.Add(3 * time.Second) // 1 s after the first failure, 2 s after the second
	end := o.last()
	if o.err != nil || end.Type != agent.EventDone || end.Status != agent.RunWaiting || !end.NotBefore.Equal(due) {
		t.Fatalf("first call ended with %+v (%v), want done/waiting until %s", end, o.err, due)
	}
	if o.message() != nil || w.caps["read_a"].count() != 2 {
		t.Fatalf("parked call: message %v, %d attempts; want none and 2", o.message(), w.caps["read_a"].count())
	}
	if waits := clock.Waits(); len(waits) != 1 || !waits[0].Equal(start.Add(time.Second)) {
		t.Errorf("waited in place for %v, want only the 1 s wait", waits)
	}
	// In the store a parked run is one cut between two steps: resumable.
	if _, st, err := a.State(context.Background(), "t"); err != nil || st != agent.RunCanceled {
		t.Fatalf("State = %s (%v), want canceled (resumable)", st, err)
	}

	// Resumed before its time, it parks again and runs nothing.
	clock.Advance(200 * time.Millisecond)
	o = collect(t, a.Resume(ctx, "t", agent.Answer{}))
	if end := o.last(); end.Status != agent.RunWaiting || !end.NotBefore.Equal(due) || w.caps["read_a"].count() != 2 {
		t.Fatalf("early resume ended %+v after %d attempts, want waiting until %s after 2", end, w.caps["read_a"].count(), due)
	}

	clock.Set(due)
	o = collect(t, a.Resume(ctx, "t", agent.Answer{}))
	wantAnswer(t, o)
	if n := w.caps["read_a"].count(); n != 3 {
		t.Errorf("read_a ran %d times, want 3 (the policy's MaxAttempts)", n)
	}
	for _, e := range o.events {
		if e.Type == agent.EventStepStart && (e.Attempt != 3 || !e.Time.Equal(due)) {
			t.Errorf("resumed step_start: attempt %d at %s, want attempt 3 at %s", e.Attempt, e.Time, due)
		}
	}
	if _, st, _ := a.State(context.Background(), "t"); st != agent.RunAnswered {
		t.Errorf("State after the answer = %s, want answered", st)
	}
}

// A parked write resumes through the execution gate of whoever resumes
// it: an agent (another replica) whose configuration disables writes does
// not carry it out.
func TestParkedWriteResumesThroughTheGate(t *testing.T) {
	start := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	clock := graphtest.NewClock(start)
	w := newWorld("set_a")
	w.writes = map[string]bool{"set_a": true}
	w.caps["set_a"].errs = repeat(errTimeout, 1)
	w.policy = capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Minute, Jitter: capabilities.JitterNone}
	cfg := w.config(t)
	cfg.Clock = clock
	cfg.Options.WritesEnabled = true
	a := mustAgent(t, cfg)
	ctx := graph.WithParkAfter(context.Background(), time.Second)
	if end := collect(t, a.Run(ctx, agent.TurnRequest{Thread: "t", Input: "set a"})).last(); end.Status != agent.RunWaiting {
		t.Fatalf("first call ended %+v, want waiting", end)
	}

	off := cfg
	off.Options.WritesEnabled = false
	b := mustAgent(t, off)
	clock.Advance(time.Minute)
	o := collect(t, b.Resume(ctx, "t", agent.Answer{}))
	if n := len(w.effects()); n != 0 {
		t.Fatalf("the write took effect %d times on an agent with writes disabled", n)
	}
	if end := o.last(); end.Type != agent.EventDone || end.Status == agent.RunWaiting {
		t.Fatalf("resume on the read-only agent ended %+v, want the turn ended", end)
	}
}
