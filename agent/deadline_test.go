package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/state"
)

// retryReasons lists the reasons of the retries a turn scheduled.
func retryReasons(o outcome) []string {
	var out []string
	for _, e := range o.events {
		if e.Type == agent.EventRetry && e.Retry != nil {
			out = append(out, e.Retry.Reason)
		}
	}
	return out
}

// A read that hangs past its deadline (configured per capability) is
// cancelled and classified timeout, RETRIABLE: the retry policy runs it
// again and the turn answers. Virtual time.
func TestHungCapabilityTimesOutAndIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld("read_a")
		w.caps["read_a"].errs = []error{errHang}
		cfg := w.config(t)
		cfg.CapabilityDeadlines = map[string]time.Duration{"read_a": 10 * time.Second}
		a := mustAgent(t, cfg)
		o := run(t, a, "t", "read")
		wantAnswer(t, o, "read_a ok")
		if n := w.caps["read_a"].count(); n != 2 {
			t.Fatalf("read_a ran %d times, want 2 (timed out, retried)", n)
		}
		reasons := retryReasons(o)
		if len(reasons) != 1 || !strings.Contains(reasons[0], "read_a did not finish within its deadline of 10s") {
			t.Fatalf("retries %q, want one naming read_a's deadline", reasons)
		}
		if n := o.count(agent.EventAbandoned); n != 0 {
			t.Fatalf("%d abandoned events for a capability that returned when cancelled", n)
		}
	})
}

// The retry policy decides: a timeout its NonRetryable lists ends the
// turn in the error report, with the deadline in it.
func TestTimeoutUnderANonRetryablePolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld("read_a")
		w.caps["read_a"].errs = []error{errHang}
		w.policy.NonRetryable = []string{capabilities.KindTimeout}
		cfg := w.config(t)
		cfg.StepDeadline = 5 * time.Second
		a := mustAgent(t, cfg)
		o := run(t, a, "t", "read")
		if m := o.message(); m == nil || m.Kind != state.KindErrorReport {
			t.Fatalf("message %+v, want the error report", m)
		}
		if n := w.caps["read_a"].count(); n != 1 {
			t.Fatalf("read_a ran %d times, want 1", n)
		}
	})
}

// A capability that ignores its context is abandoned once its deadline
// has passed: the run moves on (retried, answered), the abandonment is an
// event (counted by the metrics), and the result it returns afterwards
// is discarded — the thread's context holds the retry's value only.
func TestCapabilityIgnoringItsContextIsAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld("read_a")
		w.caps["read_a"].errs = []error{errFreeze}
		release := make(chan struct{})
		freeze = func() { <-release }
		defer func() { freeze = nil }()
		cfg := w.config(t)
		cfg.CapabilityDeadlines = map[string]time.Duration{"read_a": 10 * time.Second}
		a := mustAgent(t, cfg)
		o := run(t, a, "t", "read")
		wantAnswer(t, o, "read_a ok")
		if n := o.count(agent.EventAbandoned); n != 1 {
			t.Fatalf("%d abandoned events, want 1", n)
		}
		for _, e := range o.events {
			if e.Type == agent.EventAbandoned && (e.Capability != "read_a" || e.Attempt != 1) {
				t.Fatalf("abandoned event %+v, want read_a attempt 1", e)
			}
		}
		close(release) // the abandoned call returns, late, with success
		synctest.Wait()
		s, _, err := a.State(context.Background(), "t")
		if err != nil {
			t.Fatal(err)
		}
		e, ok := s.Context.Get("OUT", "read_a_out")
		if !ok || !strings.Contains(string(e.Value), `"attempt":2`) {
			t.Fatalf("context %+v, want attempt 2's value only", e)
		}
		if o := run(t, a, "t", "again"); o.err != nil || o.message() == nil {
			t.Fatalf("the next turn: %v", o.err)
		}
	})
}

// A side-effecting capability abandoned past its deadline may still act:
// its outcome is unknown. A readback showing the old value proves nothing
// while the call may land, so the outcome is unconfirmed — on the record,
// in the error report — and the write is never run again, also after the
// late call did write.
func TestAbandonedWriteIsUnconfirmedAndNeverRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMachine()
		store := memory.New()
		wr := &writer{target: "Q1", readback: true, block: make(chan struct{})}
		a := m.agentWith(t, store, func(c *agent.Config) { c.CapabilityDeadlines = map[string]time.Duration{"set_q1": 20 * time.Second} },
			map[string]*writer{"set_q1": wr}, plannedWrite{"set_q1", "Q1", 95})
		o := approveAll(t, a, "t", run(t, a, "t", "set Q1 to 95 A"))
		msg := o.message()
		if msg == nil || msg.Kind != state.KindErrorReport || !strings.Contains(msg.Content, "may or may not") {
			t.Fatalf("message %+v (err %v, events %s), want the error report saying the change may or may not have happened", msg, o.err, brief(o.events))
		}
		recs, err := agent.ListAudit(context.Background(), store, agent.AuditFilter{Thread: "t", Event: agent.AuditEnded})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || recs[0].Outcome != capabilities.OutcomeUnconfirmed || recs[0].Reason != "abandoned" {
			t.Fatalf("ended records %+v, want one unconfirmed, abandoned", recs)
		}
		if n := o.count(agent.EventRetry); n != 0 {
			t.Fatalf("%d retries of a write whose outcome is unknown", n)
		}
		close(wr.block) // the late call writes
		synctest.Wait()
		if got := m.effects(); len(got) != 1 {
			t.Fatalf("journal %+v, want exactly the one late write", got)
		}
	})
}

// Stop stops: cancelling a run ends it within a second — inside a
// capability that never returns, and inside a model call that never
// answers — and the thread takes the next turn at once. Virtual time; the
// second is the virtual clock's.
func TestStopEndsTheRunInsideAHungCapability(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld("read_a")
		w.caps["read_a"].errs = []error{errFreeze}
		release := make(chan struct{})
		defer close(release)
		freeze = func() { <-release }
		defer func() { freeze = nil }()
		a := mustAgent(t, w.config(t))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan outcome, 1)
		go func() { done <- runCtx(ctx, a, "t", "read") }()
		synctest.Wait() // frozen inside read_a
		stopped := time.Now()
		cancel()
		o := <-done
		if took := time.Since(stopped); took > time.Second {
			t.Fatalf("the run ended %s after the stop, want within 1s", took)
		}
		if last := o.last(); last.Type != agent.EventDone || last.Status != agent.RunCanceled {
			t.Fatalf("last event %+v, want done, canceled", last)
		}
		wantAnswer(t, run(t, a, "t", "read again"), "read_a ok")
	})
}

func TestStopEndsTheRunInsideAHungModelCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := capabilities.Define(capabilities.Definition{
			Name: "read_beam_current", Description: "Read the beam current of the storage ring", Provides: []string{"BEAM_CURRENT"},
			Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
				return capabilities.Result("BEAM_CURRENT", 401.5, "beam current is 401.5 mA"), nil
			},
		})
		reg := capabilities.NewRegistry()
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
		m := llmtest.New().Script(llm.RoleResponse, llmtest.Hang(), llmtest.Text("The beam current is 401.5 mA.")).Only(llm.RoleResponse)
		a := mustAgent(t, agent.Config{Registry: reg, Models: m})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan outcome, 1)
		go func() { done <- runCtx(ctx, a, "t", "What is the beam current of the storage ring?") }()
		synctest.Wait() // the response model hangs
		stopped := time.Now()
		cancel()
		o := <-done
		if took := time.Since(stopped); took > time.Second {
			t.Fatalf("the run ended %s after the stop, want within 1s", took)
		}
		if last := o.last(); last.Type != agent.EventDone || last.Status != agent.RunCanceled {
			t.Fatalf("last event %+v, want done, canceled", last)
		}
		o = run(t, a, "t", "What is the beam current of the storage ring?")
		if msg := o.message(); o.err != nil || msg == nil || !strings.Contains(msg.Content, "401.5") {
			t.Fatalf("the next turn: %v, %+v", o.err, msg)
		}
	})
}

// A stop inside a write that never returns ends the run at once, and
// settles the attempt on the record as unconfirmed (nothing is read back:
// the call may still land). The resumed run reports it and never writes
// again.
func TestStopInsideAHungWriteLeavesItUnconfirmed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMachine()
		store := memory.New()
		wr := &writer{target: "Q1", readback: true, block: make(chan struct{})}
		a := m.agent(t, store, map[string]*writer{"set_q1": wr}, plannedWrite{"set_q1", "Q1", 95})
		ap := approvalOf(t, run(t, a, "t", "set Q1 to 95 A"))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan outcome, 1)
		go func() {
			var o outcome
			for ev, err := range a.Resume(ctx, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes", By: "op"}) {
				o.events = append(o.events, ev)
				o.err = err
			}
			done <- o
		}()
		synctest.Wait() // inside set_q1
		cancel()
		if o := <-done; o.last().Status != agent.RunCanceled {
			t.Fatalf("last event %+v, want done, canceled", o.last())
		}
		ended, err := agent.ListAudit(context.Background(), store, agent.AuditFilter{Thread: "t", Event: agent.AuditEnded})
		if err != nil || len(ended) != 1 || ended[0].Outcome != capabilities.OutcomeUnconfirmed {
			t.Fatalf("ended records %+v (%v), want one unconfirmed", ended, err)
		}
		o := resume(t, a, "t", agent.Answer{})
		if msg := o.message(); msg == nil || msg.Kind != state.KindErrorReport || !strings.Contains(msg.Content, "may or may not") {
			t.Fatalf("resumed: %+v (%v), want the error report", msg, o.err)
		}
		started, err := agent.ListAudit(context.Background(), store, agent.AuditFilter{Thread: "t", Event: agent.AuditStarted})
		if err != nil || len(started) != 1 {
			t.Fatalf("started records %+v (%v), want the one attempt", started, err)
		}
		close(wr.block)
		synctest.Wait()
		if got := m.effects(); len(got) != 1 {
			t.Fatalf("journal %+v, want the one late write", got)
		}
	})
}

// deafModel is a response model that ignores its context: its first call
// blocks until release is closed, then every call answers. The other
// roles run offline.
type deafModel struct {
	release chan struct{}
	calls   atomic.Int32
}

func (d *deafModel) For(role llm.Role) (llm.Model, bool) { return d, role == llm.RoleResponse }

func (d *deafModel) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	if d.calls.Add(1) == 1 {
		<-d.release
	}
	return llm.Response{Text: "The beam current is 401.5 mA.", FinishReason: llm.FinishStop}, nil
}

// Stop stops also inside a model call that ignores its context: the node
// abandons it, the run ends canceled within a second, the thread answers
// the next turn, and the abandoned call's late reply is dropped.
func TestStopEndsTheRunInsideADeafModelCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := capabilities.Define(capabilities.Definition{
			Name: "read_beam_current", Description: "Read the beam current of the storage ring", Provides: []string{"BEAM_CURRENT"},
			Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
				return capabilities.Result("BEAM_CURRENT", 401.5, "beam current is 401.5 mA"), nil
			},
		})
		reg := capabilities.NewRegistry()
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
		m := &deafModel{release: make(chan struct{})}
		defer close(m.release)
		a := mustAgent(t, agent.Config{Registry: reg, Models: m, Options: state.Options{SkipTaskExtraction: true, SkipClassification: true}})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan outcome, 1)
		go func() { done <- runCtx(ctx, a, "t", "What is the beam current of the storage ring?") }()
		synctest.Wait() // the first model call of the turn does not return
		stopped := time.Now()
		cancel()
		o := <-done
		if took := time.Since(stopped); took > time.Second {
			t.Fatalf("the run ended %s after the stop, want within 1s", took)
		}
		if last := o.last(); last.Type != agent.EventDone || last.Status != agent.RunCanceled {
			t.Fatalf("last event %+v, want done, canceled", last)
		}
		o = run(t, a, "t", "What is the beam current of the storage ring?")
		if msg := o.message(); o.err != nil || msg == nil || msg.Kind != state.KindAnswer {
			t.Fatalf("the next turn: %v, %+v", o.err, msg)
		}
		if n := m.calls.Load(); n != 2 {
			t.Fatalf("%d response calls, want 2 (the abandoned one, the next turn's)", n)
		}
	})
}

func runCtx(ctx context.Context, a *agent.Agent, thread, input string) outcome {
	var o outcome
	for ev, err := range a.Run(ctx, agent.TurnRequest{Thread: thread, Input: input}) {
		o.events = append(o.events, ev)
		if err != nil && !errors.Is(err, context.Canceled) {
			o.err = err
		}
	}
	return o
}

func brief(evs []agent.Event) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(string(e.Type) + " " + e.Node + " " + e.Text + " " + e.Err + " " + string(e.Status) + "\n")
		if e.Message != nil {
			b.WriteString("  " + e.Message.Content + "\n")
		}
	}
	return b.String()
}

// A response model that stops streaming mid-reply: the idle watchdog
// cancels the call, the status line says so, the tokens sent are
// withdrawn, the call is retried under the node's policy and the turn
// answers. Virtual time.
func TestSilentModelStreamIsCancelledAndRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := capabilities.Define(capabilities.Definition{
			Name: "read_beam_current", Description: "Read the beam current of the storage ring", Provides: []string{"BEAM_CURRENT"},
			Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
				return capabilities.Result("BEAM_CURRENT", 401.5, "beam current is 401.5 mA"), nil
			},
		})
		reg := capabilities.NewRegistry()
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
		m := llmtest.New().Script(llm.RoleResponse,
			llmtest.Reply{Chunks: []string{"The beam current ", "is 401.5 mA."}, ChunkDelay: time.Hour}, // silent after the first chunk
			llmtest.Stream("The beam current ", "is 401.5 mA.")).Only(llm.RoleResponse)
		a := mustAgent(t, agent.Config{Registry: reg, Models: llm.WatchModels(m, 20*time.Second)})
		o := run(t, a, "t", "What is the beam current of the storage ring?")
		if msg := o.message(); o.err != nil || msg == nil || msg.Kind != state.KindAnswer || !strings.Contains(msg.Content, "401.5") {
			t.Fatalf("%v, %+v; want the answer", o.err, o.message())
		}
		var status string
		for _, e := range o.events {
			if e.Type == agent.EventStatus && e.Node == state.NodeRespond && strings.Contains(e.Text, "stopped sending") {
				status = e.Text
			}
		}
		if !strings.Contains(status, "no token for 20s") {
			t.Fatalf("no status line saying the model went silent:\n%s", brief(o.events))
		}
		if r := retryReasons(o); len(r) != 1 || !strings.Contains(r[0], "stopped sending") {
			t.Fatalf("retries %q, want one for the stalled stream", r)
		}
		if o.count(agent.EventAnswerReset) != 1 {
			t.Fatalf("the stalled stream's tokens were not withdrawn:\n%s", brief(o.events))
		}
		if calls := m.CallsFor(llm.RoleResponse); len(calls) != 2 {
			t.Fatalf("%d response calls, want 2", len(calls))
		}
	})
}
