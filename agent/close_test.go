package agent_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/state"
)

// startedBy returns the stacks of the goroutines that code of the agent or
// of the graph engine started and that are still there.
func startedBy() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "\ncreated by github.com/capgraph/capgraph/agent.") || strings.Contains(g, "\ncreated by github.com/capgraph/capgraph/graph.") {
			out = append(out, g)
		}
	}
	return out
}

// joined fails the test when a goroutine the agent or the engine started
// is still there: Close returned, so all of them must have ended. A
// goroutine that has sent its result may still be on its way out (as in
// isolated), so the check looks again for a little while, as goleak does.
func joined(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		g := startedBy()
		if len(g) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines of the agent outlive Close:\n%s", len(g), strings.Join(g, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startRun runs a turn on a goroutine of the test's; the outcome comes
// on the channel once the run has returned. started is closed when the
// capability named starts its step.
func startRun(a *agent.Agent, thread, input, capability string) (started <-chan struct{}, done <-chan outcome) {
	st, d := make(chan struct{}), make(chan outcome, 1)
	go func() {
		var o outcome
		once := sync.OnceFunc(func() { close(st) })
		for ev, err := range a.Run(context.Background(), agent.TurnRequest{Thread: thread, Input: input}) {
			o.events = append(o.events, ev)
			if err != nil {
				o.err = err
			}
			if ev.Type == agent.EventStepStart && ev.Capability == capability {
				once()
			}
		}
		d <- o
	}()
	return st, d
}

// Close cancels a run in progress and waits for it: the run ends canceled,
// saying the agent was closed, and once Close returns no goroutine of the
// agent or of the engine is left. The thread is left unfinished, and an
// agent opened later on the store recovers it.
func TestCloseStopsARunAndJoinsItsGoroutines(t *testing.T) {
	before := goleak.IgnoreCurrent()
	store := memory.New()
	w := newWorld()
	w.plan = func(int, state.State) []state.PlanStep {
		return []state.PlanStep{step("read_a", "a"), step(state.NodeRespond, "answer")}
	}
	cfg := w.config(t)
	cfg.Store = store
	// The first call waits for its context; a later one (the recovery) answers.
	entered := make(chan struct{})
	var calls atomic.Int32
	readA := capabilities.Define(capabilities.Definition{Name: "read_a", Description: "reads a", Provides: []string{"OUT"},
		Run: func(ctx context.Context, _ capabilities.Step) (capabilities.Output, error) {
			if calls.Add(1) == 1 {
				close(entered)
				<-ctx.Done()
				return capabilities.Output{}, ctx.Err()
			}
			return capabilities.Result("OUT", 1, "read_a ok"), nil
		}})
	if err := cfg.Registry.Register(readA); err != nil {
		t.Fatal(err)
	}
	a := mustAgent(t, cfg)
	_, done := startRun(a, "t", "read a", "read_a")
	<-entered // the capability runs, on a goroutine of the agent's
	if len(startedBy()) == 0 {
		t.Fatal("no goroutine of the agent while its capability runs: the check would see none after Close either")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	joined(t)
	o := <-done
	if last := o.last(); last.Type != agent.EventDone || last.Status != agent.RunCanceled ||
		!errors.Is(o.err, agent.ErrClosed) || !errors.Is(o.err, context.Canceled) || !strings.Contains(last.Err, "agent: closed") {
		t.Fatalf("the run Close stopped ended with %+v, %v; want done, canceled, wrapping ErrClosed", last, o.err)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatalf("a second Close: %v", err)
	}

	b := mustAgent(t, cfg)
	if got, err := b.Unfinished(context.Background()); err != nil || len(got) != 1 || got[0] != "t" {
		t.Fatalf("Unfinished after Close = %v, %v; want [t]", got, err)
	}
	if got, err := b.RecoverRuns(context.Background()); err != nil || len(got) != 1 {
		t.Fatalf("RecoverRuns = %v, %v; want t resumed", got, err)
	}
	if s, st, err := b.State(context.Background(), "t"); err != nil || st != agent.RunAnswered || !strings.Contains(s.Messages[len(s.Messages)-1].Content, "read_a ok") {
		t.Fatalf("after the recovery: %v, %v", st, err)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, before)
}

// After Close every call that would start something fails with ErrClosed,
// and none of them touches the thread; reads still work.
func TestAfterCloseNothingStarts(t *testing.T) {
	w := writeWorld()
	cfg := withOptions(w.config(t), state.Options{WritesEnabled: true, ApprovalMode: state.ApprovalModeSelective})
	a := mustAgent(t, cfg)
	ap := approvalOf(t, run(t, a, "t", "raise the voltage"))
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	wantClosed := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, agent.ErrClosed) {
			t.Errorf("%s after Close: %v; want ErrClosed", what, err)
		}
	}
	stream := func(what string, events func(func(agent.Event, error) bool)) {
		t.Helper()
		var o outcome
		for ev, err := range events {
			o.events = append(o.events, ev)
			if err != nil {
				o.err = err
			}
		}
		wantClosed(what, o.err)
		if len(o.events) != 1 || o.last().Type != agent.EventDone || o.last().Status != agent.RunFailed || o.last().Err != "agent: closed" {
			t.Errorf("%s after Close yielded %+v; want one done event saying the agent is closed", what, o.events)
		}
	}
	stream("Run", a.Run(ctx, agent.TurnRequest{Thread: "t", Input: "yes"}))
	stream("Run on a new thread", a.Run(ctx, agent.TurnRequest{Thread: "new", Input: "hello"}))
	stream("Resume", a.Resume(ctx, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes"}))
	_, err := a.RecoverRuns(ctx)
	wantClosed("RecoverRuns", err)
	for _, err := range a.ClaimUnfinished(ctx) {
		wantClosed("ClaimUnfinished", err)
	}
	_, err = a.Prune(ctx)
	wantClosed("Prune", err)
	wantClosed("ExpireApproval", a.ExpireApproval(ctx, "t", ap.ID))
	_, err = a.CreateThread(ctx, "other", nil)
	wantClosed("CreateThread", err)
	wantClosed("SetThreadMetadata", a.SetThreadMetadata(ctx, "t", map[string]string{"title": "x"}))
	wantClosed("DeleteThread", a.DeleteThread(ctx, "t"))
	if len(w.effects()) != 0 {
		t.Fatalf("the write took effect after Close: %+v", w.effects())
	}
	// Nothing changed: the approval still waits, for an agent that is open.
	if _, st, err := a.State(ctx, "t"); err != nil || st != agent.RunInterrupted {
		t.Fatalf("State after Close: %v, %v; want the approval still pending", st, err)
	}
	if aps, err := a.PendingApprovals(ctx, "t"); err != nil || len(aps) != 1 || aps[0].ID != ap.ID {
		t.Fatalf("PendingApprovals after Close: %v, %v", aps, err)
	}
}

// A claimed run nobody resumed is released by Close: another replica
// claims it at once, not a lease TTL later, and the claim itself fails.
func TestCloseReleasesAClaimNobodyResumed(t *testing.T) {
	for _, be := range backends {
		t.Run(be.Name, func(t *testing.T) {
			s1, s2 := be.Open(t)
			w := newWorld("read_a")
			a, b := replicas(t, w, s1, s2, state.Options{}, agent.DefaultLeaseTTL)
			cutRun(t, a, "t")
			claims := claimAll(t, a)
			if len(claims) != 1 {
				t.Fatalf("a claimed %d runs; want t", len(claims))
			}
			if err := a.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			var o outcome
			for ev, err := range claims[0].Resume(context.Background()) {
				o.events = append(o.events, ev)
				o.err = err
			}
			if !errors.Is(o.err, agent.ErrClosed) || len(o.events) != 1 {
				t.Fatalf("Resume of a claim after Close: %+v, %v; want ErrClosed", o.events, o.err)
			}
			theirs := claimAll(t, b)
			if len(theirs) != 1 {
				t.Fatalf("b claimed %d runs after a closed; want t, released by Close", len(theirs))
			}
			var last agent.Event
			for ev := range theirs[0].Resume(context.Background()) {
				last = ev
			}
			if last.Status != agent.RunAnswered {
				t.Fatalf("b's recovery ended with %+v", last)
			}
		})
	}
}

// slowPruner is a store whose Prune runs until its context ends.
type slowPruner struct {
	*memory.Store
	started chan struct{}
	once    sync.Once
	mu      sync.Mutex
	cause   error
}

func (s *slowPruner) Prune(ctx context.Context, _ checkpoint.PruneOptions) (checkpoint.PruneResult, error) {
	s.once.Do(func() { close(s.started) })
	<-ctx.Done()
	s.mu.Lock()
	s.cause = context.Cause(ctx)
	s.mu.Unlock()
	return checkpoint.PruneResult{}, ctx.Err()
}

// The sweep a turn starts in the background (a positive KeepIntermediate)
// is the agent's: Close cancels it and waits for it.
func TestCloseStopsTheBackgroundSweep(t *testing.T) {
	store := &slowPruner{Store: memory.New(), started: make(chan struct{})}
	cfg := newWorld("read_a").config(t)
	cfg.Store, cfg.KeepIntermediate = store, time.Hour
	a := mustAgent(t, cfg)
	wantAnswer(t, run(t, a, "t", "x"))
	select {
	case <-store.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn started no sweep")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	joined(t)
	store.mu.Lock()
	defer store.mu.Unlock()
	if !errors.Is(store.cause, agent.ErrClosed) {
		t.Fatalf("the sweep ended with %v; want canceled by Close", store.cause)
	}
}

// A run that does not stop (a capability ignoring its context) holds
// Close up until Close's own context ends: Close says so, and a later
// Close returns once the run has ended.
func TestCloseGivesUpAtItsContext(t *testing.T) {
	release := make(chan struct{})
	w := newWorld()
	w.plan = func(int, state.State) []state.PlanStep {
		return []state.PlanStep{step("stuck", "s"), step(state.NodeRespond, "answer")}
	}
	cfg := w.config(t)
	stuck := capabilities.Define(capabilities.Definition{Name: "stuck", Description: "ignores its context", Provides: []string{"OUT"},
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			<-release
			return capabilities.Result("OUT", 1, "stuck ok"), nil
		}})
	if err := cfg.Registry.Register(stuck); err != nil {
		t.Fatal(err)
	}
	a := mustAgent(t, cfg)
	started, done := startRun(a, "t", "x", "stuck")
	<-started

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := a.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 runs or background tasks did not end") {
		t.Fatalf("Close with a run that does not stop: %v; want the deadline, naming one run", err)
	}
	close(release)
	o := <-done
	if !errors.Is(o.err, agent.ErrClosed) {
		t.Fatalf("the run ended with %v; want ErrClosed", o.err)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatalf("Close after the run ended: %v", err)
	}
	joined(t)
}
