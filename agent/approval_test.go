package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/state"
)

// clock is a settable clock for expiry and wall-clock tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// writeWorld: read_a reads, write_x writes (asks for approval in selective
// mode, refuses when writes are disabled); the plan reads, then writes.
func writeWorld() *world {
	w := newWorld("read_a", "write_x")
	w.writes = map[string]bool{"write_x": true}
	w.approval = map[string]func(capabilities.Step) (bool, string){
		"write_x": func(st capabilities.Step) (bool, string) {
			return true, "set SR:RF:VOLT from 4.80 kV to 5.00 kV"
		},
	}
	w.plan = func(int, state.State) []state.PlanStep {
		return []state.PlanStep{step("read_a", "a"), step("write_x", "x", 0), step(state.NodeRespond, "r", 0, 1)}
	}
	return w
}

func withOptions(cfg agent.Config, o state.Options) agent.Config {
	cfg.Options = o
	return cfg
}

var writesOn = state.Options{WritesEnabled: true}

func resume(t tb, a *agent.Agent, thread string, ans agent.Answer) outcome {
	t.Helper()
	var o outcome
	for ev, err := range a.Resume(context.Background(), thread, ans) {
		o.events = append(o.events, ev)
		if err != nil {
			o.err = err
		}
	}
	return o
}

// approvalOf returns the approval an interrupted outcome asks for.
// carriedOut counts the answers of a race that were carried out (nil
// errors); every other answer must have lost the race (already answered, or
// the thread busy with the winner).
func carriedOut(t *testing.T, errs []error) int {
	t.Helper()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, agent.ErrApprovalAnswered), errors.Is(err, graph.ErrThreadBusy):
		default:
			t.Fatalf("racing answer: %v", err)
		}
	}
	return ok
}

func approvalOf(t *testing.T, o outcome) *state.Approval {
	t.Helper()
	if o.err != nil {
		t.Fatalf("run failed: %v", o.err)
	}
	if o.last().Status != agent.RunInterrupted {
		t.Fatalf("run ended %s, want interrupted", o.last().Status)
	}
	var ap *state.Approval
	for _, e := range o.events {
		if e.Type == agent.EventApprovalRequired {
			ap = e.Approval
		}
	}
	if ap == nil {
		t.Fatal("no approval_required event")
	}
	return ap
}

// wantUnclear checks that an answer decided nothing: the resume failed
// with ErrApprovalUnclear naming the approval, which is still pending.
func wantUnclear(t *testing.T, a *agent.Agent, thread string, ap *state.Approval, o outcome) {
	t.Helper()
	var ae *agent.ApprovalError
	if !errors.Is(o.err, agent.ErrApprovalUnclear) || !errors.As(o.err, &ae) || ae.Approval == nil || ae.Approval.ID != ap.ID {
		t.Fatalf("err %v, want ErrApprovalUnclear with the approval", o.err)
	}
	if len(o.events) != 1 {
		t.Fatalf("an unclear answer ran something: %d events", len(o.events))
	}
	pend, err := a.PendingApprovals(context.Background(), thread)
	if err != nil || len(pend) != 1 || pend[0].ID != ap.ID {
		t.Fatalf("pending after an unclear answer: %+v %v", pend, err)
	}
}

func wantRejected(t *testing.T, o outcome) {
	t.Helper()
	if o.err != nil {
		t.Fatalf("unexpected error %v", o.err)
	}
	m := o.message()
	if m == nil || m.Kind != state.KindRejected || !strings.Contains(m.Content, "Nothing was done") {
		t.Fatalf("want a rejection message, got %+v", m)
	}
}

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

func TestStepApprovalApproveAndReject(t *testing.T) {
	tests := []struct {
		name     string
		ans      agent.Answer
		approved bool
	}{
		{"yes in words", agent.Answer{Text: "Yes!"}, true},
		{"button yes", agent.Answer{Approved: yes()}, true},
		{"no in words", agent.Answer{Text: "nope."}, false},
		{"button no", agent.Answer{Approved: no(), Text: "yes"}, false},
		{"German yes", agent.Answer{Text: "Ja."}, true},
		{"French no", agent.Answer{Text: "Non merci"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := writeWorld()
			clk := newClock()
			cfg := withOptions(w.config(t), writesOn)
			cfg.Now = clk.Now
			a := mustAgent(t, cfg)
			ap := approvalOf(t, run(t, a, "t", "raise the voltage"))
			if ap.Kind != state.ApprovalStep || ap.Capability != "write_x" || ap.StepIndex != 1 ||
				ap.Summary != "set SR:RF:VOLT from 4.80 kV to 5.00 kV" || !ap.Expires.Equal(ap.Created.Add(agent.DefaultApprovalExpiry)) {
				t.Fatalf("approval %+v", ap)
			}
			if n := w.caps["read_a"].count(); n != 1 {
				t.Fatalf("read_a ran %d times before the approval, want 1", n)
			}
			if n := w.caps["write_x"].count(); n != 0 {
				t.Fatalf("write_x ran %d times before the approval", n)
			}
			s, st, err := a.State(context.Background(), "t")
			if err != nil || st != agent.RunInterrupted || s.Turn.PendingApproval == nil || s.Turn.PendingApproval.ID != ap.ID {
				t.Fatalf("state: %v %s %+v", err, st, s.Turn.PendingApproval)
			}
			clk.Add(time.Minute)
			ans := tc.ans
			if ans.ApprovalID != "" {
				ans.ApprovalID = ap.ID
			}
			o := resume(t, a, "t", ans)
			if tc.approved {
				wantAnswer(t, o, "write_x ok")
				eff := w.effects()
				if len(eff) != 1 || !eff[0].Approved || !eff[0].WritesEnabled || eff[0].IdempotencyKey != "t/1/1/1/1" {
					t.Fatalf("effects %+v", eff)
				}
			} else {
				wantRejected(t, o)
				if n := w.caps["write_x"].count(); n != 0 {
					t.Fatalf("rejected write ran %d times", n)
				}
			}
			s = finalState(t, a, "t")
			if len(s.Turn.Approvals) != 1 || s.Turn.Approvals[0].ID != ap.ID || s.Turn.Approvals[0].Approved != tc.approved {
				t.Fatalf("recorded approvals %+v", s.Turn.Approvals)
			}
			if s.Turn.Control.Paused != time.Minute {
				t.Fatalf("paused %v, want the minute the human took", s.Turn.Control.Paused)
			}
			if _, st, _ := a.State(context.Background(), "t"); st != agent.RunAnswered {
				t.Fatalf("status %s", st)
			}
		})
	}
}

func TestApprovalModes(t *testing.T) {
	tests := []struct {
		mode  string
		asks  []string // capabilities asked for, in order
		write bool     // write_x took effect
	}{
		{state.ApprovalModeDisabled, nil, true},
		{"", []string{"write_x"}, true}, // selective by default
		{state.ApprovalModeSelective, []string{"write_x"}, true},
		{state.ApprovalModeAll, []string{"read_a", "write_x"}, true},
	}
	for _, tc := range tests {
		t.Run("mode="+tc.mode, func(t *testing.T) {
			w := writeWorld()
			a := mustAgent(t, withOptions(w.config(t), state.Options{WritesEnabled: true, ApprovalMode: tc.mode}))
			o := run(t, a, "t", "x")
			var asked []string
			for o.err == nil && o.last().Status == agent.RunInterrupted {
				ap := approvalOf(t, o)
				asked = append(asked, ap.Capability)
				o = resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "ok"})
			}
			wantAnswer(t, o, "write_x ok")
			if strings.Join(asked, ",") != strings.Join(tc.asks, ",") {
				t.Fatalf("asked for %v, want %v", asked, tc.asks)
			}
			if got := len(w.effects()); got != 1 {
				t.Fatalf("write_x took effect %d times", got)
			}
		})
	}
	if _, err := agent.New(withOptions(writeWorld().config(t), state.Options{ApprovalMode: "sometimes"})); !errors.Is(err, agent.ErrConfig) ||
		!strings.Contains(err.Error(), "sometimes") {
		t.Fatalf("bad mode: %v", err)
	}
	a := mustAgent(t, writeWorld().config(t))
	var err error
	for _, e := range a.Run(context.Background(), agent.TurnRequest{Thread: "t", Input: "x", Options: &agent.TurnOptions{ApprovalMode: "sometimes"}}) {
		err = e
	}
	if !errors.Is(err, agent.ErrBadRequest) || !strings.Contains(err.Error(), "sometimes") {
		t.Fatalf("bad mode in a request: %v", err)
	}
}

func TestWritesDisabled(t *testing.T) {
	w := writeWorld()
	a := mustAgent(t, withOptions(w.config(t), state.Options{ApprovalMode: state.ApprovalModeDisabled}))
	o := run(t, a, "t", "raise the voltage")
	wantReport(t, o, "writes are disabled")
	if n := w.caps["write_x"].count(); n != 0 || len(w.effects()) != 0 {
		t.Fatalf("write_x took effect")
	}
	s := finalState(t, a, "t")
	if st := s.Turn.Plan.Steps[1]; st.Attempts != 1 || st.Error == nil || st.Error.Classification.Kind != capabilities.KindWritesDisabled ||
		st.Error.Classification.Severity != capabilities.Critical {
		t.Fatalf("write step %+v (error %+v), want one non-retried CRITICAL writes_disabled attempt", st, st.Error)
	}
}

func TestDoubleAnswerExecutesOnce(t *testing.T) {
	w := writeWorld()
	a := mustAgent(t, withOptions(w.config(t), writesOn))
	ap := approvalOf(t, run(t, a, "t", "x"))
	wantAnswer(t, resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes"}))
	o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes"})
	var ae *agent.ApprovalError
	if !errors.Is(o.err, agent.ErrApprovalAnswered) || !errors.As(o.err, &ae) || ae.ID != ap.ID || !errors.Is(o.err, agent.ErrBadRequest) {
		t.Fatalf("second answer: %v", o.err)
	}
	if n := len(w.effects()); n != 1 {
		t.Fatalf("write took effect %d times", n)
	}
	// Answers racing each other: one is carried out, the other refused.
	w2 := writeWorld()
	a2 := mustAgent(t, withOptions(w2.config(t), writesOn))
	ap2 := approvalOf(t, run(t, a2, "t", "x"))
	var (
		wg   sync.WaitGroup
		errs = make([]error, 4)
	)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = resume(t, a2, "t", agent.Answer{ApprovalID: ap2.ID, Text: "yes"}).err
		}()
	}
	wg.Wait()
	ok := carriedOut(t, errs)
	if ok != 1 || len(w2.effects()) != 1 {
		t.Fatalf("%d answers carried out, %d effects; want 1 and 1", ok, len(w2.effects()))
	}
}

// An approval expires: a "yes" that comes too late is no approval, and
// the approval ends as expired (rule expired, not a human's rejection);
// a new message on a thread whose approval expired ends it the same way.
func TestApprovalExpiry(t *testing.T) {
	t.Run("answered too late", func(t *testing.T) {
		w := writeWorld()
		clk := newClock()
		cfg := withOptions(w.config(t), writesOn)
		cfg.Now, cfg.ApprovalExpiry = clk.Now, 10*time.Minute
		a := mustAgent(t, cfg)
		ap := approvalOf(t, run(t, a, "t", "x"))
		if !ap.Expires.Equal(clk.Now().Add(10 * time.Minute)) {
			t.Fatalf("expires %v", ap.Expires)
		}
		clk.Add(10 * time.Minute)
		o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes", By: "op-anna"})
		var ae *agent.ApprovalError
		if !errors.Is(o.err, agent.ErrApprovalExpired) || !errors.As(o.err, &ae) || !ae.Expires.Equal(ap.Expires) {
			t.Fatalf("expired answer: %v", o.err)
		}
		s, st, _ := a.State(context.Background(), "t")
		if st != agent.RunAnswered || len(w.effects()) != 0 {
			t.Fatalf("after an expired answer: status %s, %d effects; want the run ended, nothing done", st, len(w.effects()))
		}
		if len(s.Turn.Approvals) != 1 || s.Turn.Approvals[0].Rule != state.AnswerExpired || s.Turn.Approvals[0].Approved {
			t.Fatalf("decision %+v, want an expiry", s.Turn.Approvals)
		}
		if m, _ := s.LastAssistant(); m.Kind != state.KindRejected || !strings.Contains(m.Content, "Nothing was done") {
			t.Fatalf("the turn ended with %q, want it to say nothing was done", m.Content)
		}
		// A second late answer is told the same, and nothing runs.
		if o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes"}); !errors.Is(o.err, agent.ErrApprovalExpired) || len(w.effects()) != 0 {
			t.Fatalf("second late answer: %v, %d effects", o.err, len(w.effects()))
		}
	})
	t.Run("a new message", func(t *testing.T) {
		w := writeWorld()
		clk := newClock()
		cfg := withOptions(w.config(t), writesOn)
		cfg.Now, cfg.ApprovalExpiry = clk.Now, 10*time.Minute
		a := mustAgent(t, cfg)
		approvalOf(t, run(t, a, "t", "x"))
		clk.Add(10 * time.Minute)
		// A new message on the thread ends the expired approval and starts
		// a new turn, even a "yes".
		o := run(t, a, "t", "yes")
		if o.err != nil {
			t.Fatal(o.err)
		}
		if o.events[0].Type != agent.EventStatus || !strings.Contains(o.events[0].Text, "expired") {
			t.Fatalf("first event %+v, want a status about the expired approval", o.events[0])
		}
		s, _, _ := a.State(context.Background(), "t")
		if s.Turn.Number != 2 || countAssistant(s, 1) != 1 || len(w.effects()) != 0 {
			t.Fatalf("turn %d, turn-1 messages %d, effects %d", s.Turn.Number, countAssistant(s, 1), len(w.effects()))
		}
		if m := s.Messages[1]; m.Kind != state.KindRejected {
			t.Fatalf("turn 1 ended with %+v, want nothing done", m)
		}
		if d := s.Turn.Approvals; len(d) != 0 {
			t.Fatalf("turn 2 holds decisions %+v", d)
		}
	})
}

// The approval model reads a free-text answer into a rejection or
// nothing: whatever it replies — even an approval — it never approves,
// and an answer it does not reject stays unanswered (ErrApprovalUnclear).
func TestUnclearAnswerWithApprovalModel(t *testing.T) {
	tests := []struct {
		name     string
		reply    llmtest.Reply
		rejected bool
	}{
		{"model rejects", llmtest.Text(`{"decision": "reject"}`), true},
		{"model unclear", llmtest.Text(`{"decision": "unclear"}`), false},
		{"model says approved", llmtest.Text(`{"approved": true}`), false},
		{"model says approve", llmtest.Text(`{"decision": "approve"}`), false},
		{"model prose", llmtest.Text(`I think they probably agree`), false},
		{"model fails", llmtest.Fail(errors.New("connection refused")), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := writeWorld()
			m := llmtest.New().Script(llm.RoleApproval, tc.reply)
			cfg := withOptions(w.config(t), writesOn)
			cfg.Models = m
			a := mustAgent(t, cfg)
			ap := approvalOf(t, run(t, a, "t", "x"))
			o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "sure thing, go for it"})
			if tc.rejected {
				wantRejected(t, o)
			} else {
				wantUnclear(t, a, "t", ap, o)
			}
			if len(w.effects()) != 0 {
				t.Fatalf("written after %q read by the model", "sure thing, go for it")
			}
			calls := m.Calls()
			if len(calls) != 1 || calls[0].Request.Role != llm.RoleApproval || !strings.Contains(calls[0].Prompt(), "SR:RF:VOLT") {
				t.Fatalf("model calls %+v", calls)
			}
		})
	}
	// Clear words never reach the model.
	w := writeWorld()
	m := llmtest.New()
	cfg := withOptions(w.config(t), writesOn)
	cfg.Models = m
	a := mustAgent(t, cfg)
	ap := approvalOf(t, run(t, a, "t", "x"))
	wantAnswer(t, resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "OK."}))
	if n := len(m.Calls()); n != 0 {
		t.Fatalf("a clear yes called the model %d times", n)
	}
}

func TestPlanApproval(t *testing.T) {
	edited := func(steps ...state.PlanStep) *state.Plan { return &state.Plan{Steps: steps} }
	tests := []struct {
		name    string
		ans     agent.Answer
		err     error
		outcome string // answer, rejected
		caps    []string
	}{
		{"approve", agent.Answer{Text: "yes"}, nil, "answer", []string{"read_a", "write_x"}},
		{"reject", agent.Answer{Text: "no"}, nil, "rejected", nil},
		{"unclear", agent.Answer{Text: "hmm, what does step 2 do?"}, agent.ErrApprovalUnclear, "", nil},
		{"edited plan", agent.Answer{Plan: edited(step("read_a", "only_a"))}, nil, "answer", []string{"read_a"}},
		{"edited plan with words", agent.Answer{Text: "yes", Plan: edited(step("read_a", "only_a"))}, nil, "answer", []string{"read_a"}},
		{"edited plan, unknown capability", agent.Answer{Plan: edited(step("launch_rocket", "r"))}, agent.ErrInvalidPlan, "", nil},
		{"edited plan, input from a later step", agent.Answer{Plan: edited(
			func() state.PlanStep {
				s := step("read_a", "a")
				s.Inputs = []capabilities.InputRef{{Type: "OUT", Key: "b"}}
				return s
			}(), step("write_x", "b"))}, agent.ErrInvalidPlan, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := writeWorld()
			a := mustAgent(t, withOptions(w.config(t), state.Options{WritesEnabled: true, PlanApproval: true, ApprovalMode: state.ApprovalModeDisabled}))
			ap := approvalOf(t, run(t, a, "t", "x"))
			if ap.Kind != state.ApprovalPlan || ap.Plan == nil || len(ap.Plan.Steps) != 3 || !strings.Contains(ap.Summary, "2. write_x") {
				t.Fatalf("approval %+v", ap)
			}
			if n := w.caps["read_a"].count() + w.caps["write_x"].count(); n != 0 {
				t.Fatalf("%d steps ran before the plan was approved", n)
			}
			ans := tc.ans
			ans.ApprovalID = ap.ID
			o := resume(t, a, "t", ans)
			if tc.err != nil {
				if !errors.Is(o.err, tc.err) {
					t.Fatalf("err %v, want %v", o.err, tc.err)
				}
				// Nothing changed: the approval is still pending and can be approved.
				pend, err := a.PendingApprovals(context.Background(), "t")
				if err != nil || len(pend) != 1 || pend[0].ID != ap.ID {
					t.Fatalf("pending %+v %v", pend, err)
				}
				o = resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Approved: yes()})
				wantAnswer(t, o)
				return
			}
			switch tc.outcome {
			case "answer":
				wantAnswer(t, o)
			case "rejected":
				wantRejected(t, o)
			}
			var ran []string
			for _, c := range []string{"read_a", "write_x"} {
				if w.caps[c].count() > 0 {
					ran = append(ran, c)
				}
			}
			if strings.Join(ran, ",") != strings.Join(tc.caps, ",") {
				t.Fatalf("ran %v, want %v", ran, tc.caps)
			}
			s := finalState(t, a, "t")
			if tc.outcome == "answer" && !s.Turn.Plan.Approved {
				t.Fatal("plan not marked approved")
			}
		})
	}
}

func TestApprovalWaitDoesNotCountAgainstWallClock(t *testing.T) {
	w := writeWorld()
	clk := newClock()
	cfg := withOptions(w.config(t), writesOn)
	cfg.Now = clk.Now
	cfg.Limits.MaxExecutionTime = time.Minute
	a := mustAgent(t, cfg)
	ap := approvalOf(t, run(t, a, "t", "x"))
	clk.Add(30 * time.Minute) // the human took half an hour
	wantAnswer(t, resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "y"}), "write_x ok")
}

func TestWallClockCountsAcrossACrash(t *testing.T) {
	// A run stopped between steps (crash, cancel) and resumed later: the
	// time it was down counts against its wall clock.
	w := writeWorld()
	w.caps["write_x"].errs = []error{errHang}
	clk := newClock()
	cfg := withOptions(w.config(t), state.Options{WritesEnabled: true, ApprovalMode: state.ApprovalModeDisabled})
	cfg.Now = clk.Now
	cfg.Limits.MaxExecutionTime = time.Minute
	a := mustAgent(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for ev := range a.Run(ctx, agent.TurnRequest{Thread: "t", Input: "x"}) {
		if ev.Type == agent.EventStepStart && ev.Capability == "write_x" {
			cancel()
		}
	}
	if _, st, _ := a.State(context.Background(), "t"); st != agent.RunCanceled {
		t.Fatalf("status %s", st)
	}
	clk.Add(2 * time.Minute)
	wantReport(t, resume(t, a, "t", agent.Answer{}), "max_execution_time")
}

func TestApprovalThenCrashThenResume(t *testing.T) {
	w := writeWorld()
	// The first execution after the approval hangs: the process "dies" there.
	w.caps["write_x"].errs = []error{errHang}
	cfg := withOptions(w.config(t), writesOn)
	a := mustAgent(t, cfg)
	ap := approvalOf(t, run(t, a, "t", "x"))

	// A restart while the approval is pending: it stays pending, and the
	// new process does not count the run as unfinished.
	a = mustAgent(t, cfg)
	if th, err := a.Unfinished(context.Background()); err != nil || len(th) != 0 {
		t.Fatalf("unfinished %v %v", th, err)
	}
	if pend, err := a.PendingApprovals(context.Background(), "t"); err != nil || len(pend) != 1 || pend[0].ID != ap.ID {
		t.Fatalf("pending after restart %+v %v", pend, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for ev := range a.Resume(ctx, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes"}) {
		if ev.Type == agent.EventStepStart && ev.Capability == "write_x" {
			cancel() // the crash, mid-step, after the answer was stored
		}
	}
	if _, st, _ := a.State(context.Background(), "t"); st != agent.RunCanceled {
		t.Fatalf("status after the crash %s", st)
	}
	// Answering again while the first answer waits to be carried out is refused.
	if o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes"}); !errors.Is(o.err, agent.ErrApprovalAnswered) {
		t.Fatalf("second answer after the crash: %v", o.err)
	}

	a = mustAgent(t, cfg) // the restart
	got, err := a.RecoverRuns(context.Background())
	if err != nil || len(got) != 1 || got[0] != "t" {
		t.Fatalf("recovered %v %v", got, err)
	}
	s := finalState(t, a, "t")
	if m, _ := s.LastAssistant(); m.Kind != state.KindAnswer {
		t.Fatalf("last message %+v", m)
	}
	eff := w.effects()
	if len(eff) != 1 || !eff[0].Approved || eff[0].IdempotencyKey != "t/1/1/1/1" {
		t.Fatalf("effects %+v: want one approved execution, same idempotency key as the attempt cut by the crash", eff)
	}
	if n := w.caps["write_x"].count(); n != 2 {
		t.Fatalf("write_x called %d times, want 2 (the in-flight attempt runs again)", n)
	}
	if got, err := a.RecoverRuns(context.Background()); err != nil || len(got) != 0 {
		t.Fatalf("second recovery %v %v", got, err)
	}
}

func TestRunOnInterruptedThread(t *testing.T) {
	t.Run("clear yes answers", func(t *testing.T) {
		w := writeWorld()
		a := mustAgent(t, withOptions(w.config(t), writesOn))
		approvalOf(t, run(t, a, "t", "x"))
		wantAnswer(t, run(t, a, "t", "Yes."), "write_x ok")
		if s := finalState(t, a, "t"); s.Turn.Number != 1 || len(w.effects()) != 1 {
			t.Fatalf("turn %d, effects %d", s.Turn.Number, len(w.effects()))
		}
	})
	t.Run("clear no rejects", func(t *testing.T) {
		w := writeWorld()
		a := mustAgent(t, withOptions(w.config(t), writesOn))
		approvalOf(t, run(t, a, "t", "x"))
		wantRejected(t, run(t, a, "t", "cancel"))
		if len(w.effects()) != 0 {
			t.Fatal("rejected write took effect")
		}
	})
	t.Run("anything else is a new turn", func(t *testing.T) {
		w := writeWorld()
		w.plan = func(n int, s state.State) []state.PlanStep {
			if s.Turn.Number == 2 {
				return []state.PlanStep{step("read_a", "a2"), step(state.NodeRespond, "r", 0)}
			}
			return []state.PlanStep{step("read_a", "a"), step("write_x", "x", 0), step(state.NodeRespond, "r", 0, 1)}
		}
		a := mustAgent(t, withOptions(w.config(t), writesOn))
		approvalOf(t, run(t, a, "t", "x"))
		o := run(t, a, "t", "what is the beam current?")
		wantAnswer(t, o, "read_a ok")
		if o.events[0].Type != agent.EventStatus || !strings.Contains(o.events[0].Text, "nothing was done") {
			t.Fatalf("first event %+v", o.events[0])
		}
		s := finalState(t, a, "t")
		if s.Turn.Number != 2 || countAssistant(s, 1) != 1 || len(w.effects()) != 0 {
			t.Fatalf("turn %d, turn-1 messages %d, effects %d", s.Turn.Number, countAssistant(s, 1), len(w.effects()))
		}
	})
}

func TestEscalationAfterApprovalKeepsTheApproval(t *testing.T) {
	w := writeWorld()
	w.caps["write_x"].errs = []error{errResource}
	a := mustAgent(t, withOptions(w.config(t), writesOn))
	ap := approvalOf(t, run(t, a, "t", "x"))
	esc := approvalOf(t, resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes"}))
	if esc.Kind != state.ApprovalEscalation {
		t.Fatalf("second question %+v, want the escalation", esc)
	}
	s, _, _ := a.State(context.Background(), "t")
	if s.Turn.Control.Blocked == nil || s.Turn.Control.Blocked.Capability != "write_x" || s.Turn.Control.Blocked.Classification.Kind != capabilities.KindResourceExhausted {
		t.Fatalf("blocked %+v", s.Turn.Control.Blocked)
	}
	// Retrying after the block does not ask for the write's approval again.
	wantAnswer(t, resume(t, a, "t", agent.Answer{ApprovalID: esc.ID, Text: "retry"}), "write_x ok")
	if eff := w.effects(); len(eff) != 1 || !eff[0].Approved {
		t.Fatalf("effects %+v", eff)
	}
}

func TestAnswerErrors(t *testing.T) {
	w := writeWorld()
	a := mustAgent(t, withOptions(w.config(t), writesOn))
	ap := approvalOf(t, run(t, a, "t", "x"))
	o := resume(t, a, "t", agent.Answer{ApprovalID: "step:9:9:9", Text: "yes"})
	if !errors.Is(o.err, agent.ErrApprovalNotPending) || !strings.Contains(o.err.Error(), ap.ID) {
		t.Fatalf("wrong id: %v", o.err)
	}
	o = resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Plan: &state.Plan{Steps: []state.PlanStep{step("read_a", "a")}}})
	if !errors.Is(o.err, agent.ErrInvalidPlan) {
		t.Fatalf("plan for a step approval: %v", o.err)
	}
	// Without an id the answer goes to the first pending approval.
	wantAnswer(t, resume(t, a, "t", agent.Answer{Text: "yes"}))
}

func TestConcurrentApprovals(t *testing.T) {
	twoWrites := func() *world {
		w := newWorld("write_x", "write_y")
		w.writes = map[string]bool{"write_x": true, "write_y": true}
		ask := func(capabilities.Step) (bool, string) { return true, "" }
		w.approval = map[string]func(capabilities.Step) (bool, string){"write_x": ask, "write_y": ask}
		w.plan = func(int, state.State) []state.PlanStep {
			return []state.PlanStep{step("write_x", "x"), step("write_y", "y"), step(state.NodeRespond, "r", 0, 1)}
		}
		return w
	}
	t.Run("approve one, then the other", func(t *testing.T) {
		w := twoWrites()
		a := mustAgent(t, withOptions(w.config(t), writesOn))
		o := run(t, a, "t", "x")
		if n := o.count(agent.EventApprovalRequired); n != 2 {
			t.Fatalf("%d approvals asked, want 2 (both steps are ready together)", n)
		}
		pend, _ := a.PendingApprovals(context.Background(), "t")
		if len(pend) != 2 || !strings.HasPrefix(pend[0].Summary, "run write_x: do x") {
			t.Fatalf("pending %+v", pend)
		}
		o = resume(t, a, "t", agent.Answer{ApprovalID: pend[1].ID, Text: "yes"})
		ap := approvalOf(t, o)
		if ap.ID != pend[0].ID {
			t.Fatalf("still asks %s, want %s", ap.ID, pend[0].ID)
		}
		if eff := w.effects(); len(eff) != 1 || eff[0].PlannedStep.Capability != "write_y" {
			t.Fatalf("effects %+v", eff)
		}
		wantAnswer(t, resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes"}), "write_x ok", "write_y ok")
		if n := len(w.effects()); n != 2 {
			t.Fatalf("%d effects, want 2", n)
		}
	})
	// Each card is answered on its own: a rejection of one leaves the other
	// waiting for its own answer, in either order; nothing after the pair
	// starts, and the one message says what was rejected and what ran.
	for _, tc := range []struct {
		name    string
		answers []string // per pending index at the time: "yes"/"no"
		effects int
	}{
		{"reject the first, approve the second", []string{"no", "yes"}, 1},
		{"approve the first, reject the second", []string{"yes", "no"}, 1},
		{"reject both", []string{"no", "no"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := twoWrites()
			a := mustAgent(t, withOptions(w.config(t), writesOn))
			run(t, a, "t", "x")
			var o outcome
			for i, text := range tc.answers {
				pend, _ := a.PendingApprovals(context.Background(), "t")
				if len(pend) != len(tc.answers)-i {
					t.Fatalf("answer %d: %d pending, want %d", i+1, len(pend), len(tc.answers)-i)
				}
				o = resume(t, a, "t", agent.Answer{ApprovalID: pend[0].ID, Text: text})
				if i < len(tc.answers)-1 {
					if ap := approvalOf(t, o); ap.ID == pend[0].ID {
						t.Fatalf("answer %d: the answered approval %s is asked again", i+1, ap.ID)
					}
				}
			}
			wantRejected(t, o)
			s := finalState(t, a, "t") // exactly one message
			if n := len(w.effects()); n != tc.effects {
				t.Fatalf("%d effects, want %d", n, tc.effects)
			}
			rejected := 0
			for _, st := range s.Turn.Plan.Steps[:2] {
				if st.Status == state.StepRejected {
					rejected++
				}
			}
			if rejected != 2-tc.effects || s.Turn.Plan.Steps[2].Status == state.StepDone {
				t.Fatalf("steps %+v", s.Turn.Plan.Steps)
			}
			if m := o.message().Content; tc.effects == 1 && !strings.Contains(m, "Steps that were carried out: ") {
				t.Errorf("the message hides the approved step: %q", m)
			}
		})
	}
}

func TestFallbackAsksForItsOwnApproval(t *testing.T) {
	w := newWorld("write_x", "write_z")
	w.writes = map[string]bool{"write_x": true, "write_z": true}
	w.approval = map[string]func(capabilities.Step) (bool, string){
		"write_x": func(capabilities.Step) (bool, string) { return true, "write through x" },
		"write_z": func(capabilities.Step) (bool, string) { return true, "write through z" },
	}
	w.fallback["write_x"] = []string{"write_z"}
	w.caps["write_x"].errs = []error{errCritical}
	w.plan = func(int, state.State) []state.PlanStep {
		return []state.PlanStep{step("write_x", "x"), step(state.NodeRespond, "r", 0)}
	}
	a := mustAgent(t, withOptions(w.config(t), writesOn))
	first := approvalOf(t, run(t, a, "t", "x"))
	second := approvalOf(t, resume(t, a, "t", agent.Answer{ApprovalID: first.ID, Text: "yes"}))
	if first.Capability != "write_x" || second.Capability != "write_z" || second.Summary != "write through z" || first.ID == second.ID {
		t.Fatalf("asked %+v then %+v", first, second)
	}
	wantAnswer(t, resume(t, a, "t", agent.Answer{ApprovalID: second.ID, Text: "yes"}), "write_z ok")
	if eff := w.effects(); len(eff) != 1 || eff[0].PlannedStep.Capability != "write_x" || !eff[0].Approved {
		// The step keeps its planned capability; write_z ran it.
		t.Fatalf("effects %+v", eff)
	}
}
