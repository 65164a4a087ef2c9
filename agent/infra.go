package agent

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/state"
)

// infraNode wraps an infrastructure node: it counts the step, enforces the
// wall clock, classifies a failure and hands it to the failure pipeline
// (failure.go; attempts are counted per node, so infrastructure retries are
// bounded like capability retries), and on success clears the error and
// keeps the recovery counters honest.
func (a *Agent) infraNode(n nodes.Node) graph.NodeFunc[state.State, state.Update] {
	name := n.Name()
	return func(ctx context.Context, s state.State) (state.Update, error) {
		now := a.cfg.Now()
		if u, stop := a.overLimit(s, now); stop {
			return u, nil
		}
		if ans, ok := answerOf(ctx); ok && !ans.Approved {
			return a.infraNotRetried(ctx, s, n, ans, now)
		}
		nctx, cancel := context.WithDeadline(ctx, a.deadline(s))
		prev := s.Turn.Control.Error
		if prev == nil {
			// A recovery node (orchestrator, classifier) sees the step error it
			// recovers from, even one parked on a step by a concurrent failure.
			s.Turn.Control.Error = router.CurrentError(s)
		}
		u, err := a.callInfra(nctx, n, s)
		cancel()
		s.Turn.Control.Error = prev
		return a.infraDone(ctx, s, n, name, u, err, now, a.cfg.Now())
	}
}

// infraDone finishes an infrastructure node's step from what the node
// returned. A function of its own, so that the node's frame, on the run's
// stack while its model answers, holds none of its locals.
//
//go:noinline
func (a *Agent) infraDone(ctx context.Context, s state.State, n nodes.Node, name string, u state.Update, err error, now, end time.Time) (state.Update, error) {
	// A failed node still reports the tokens its model calls used.
	used := u.Tokens
	if err == nil {
		u, err = a.infraSuccess(s, name, u, now)
	}
	if err == nil {
		u = a.enforceAllowed(ctx, s, name, u)
	}
	if name == state.NodeOrchestrator {
		a.auditPlanning(ctx, s, u, err, now)
	}
	if err == nil {
		return u, nil
	}
	if _, ok := graph.IsInterrupt(err); ok {
		return state.Update{}, err // an approval the node asks for
	}
	if ctx.Err() != nil {
		return state.Update{}, ctx.Err() // the run was canceled; Resume continues
	}
	return a.infraFailed(ctx, s, n, err, now, end, used)
}

// infraNotRetried ends an infrastructure node whose blocked failure a
// human declined to retry (or nobody answered in time). It and
// infraFailed are functions of their own so that the node's frame, on the
// run's stack while its model answers, holds none of their locals.
//
//go:noinline
func (a *Agent) infraNotRetried(ctx context.Context, s state.State, n nodes.Node, ans state.ApprovalDecision, now time.Time) (state.Update, error) {
	cl := capabilities.Classification{Severity: capabilities.Critical, Kind: capabilities.KindResourceExhausted, UserMessage: "the operation was blocked and a human gave up"}
	if ans.Rule == state.AnswerExpired {
		cl.UserMessage = "the operation was blocked and nobody answered in time whether to retry it"
	}
	if prev := s.Turn.Control.Blocked; prev != nil {
		cl = prev.Classification
	}
	f := a.nodeFailure(s, n, now)
	f.Classification, f.Message = notRetried(cl, ans)
	return a.fail(ctx, s, f, nil)
}

// infraFailed records the failure err of an infrastructure node that ran
// from now to end, its model calls having used tokens.
//
//go:noinline
func (a *Agent) infraFailed(ctx context.Context, s state.State, n nodes.Node, err error, now, end time.Time, used map[string]int) (state.Update, error) {
	f := a.nodeFailure(s, n, now)
	f.Elapsed, f.Message = end.Sub(now), err.Error()
	f.Classification = capabilities.Classify(n, err, capabilities.ErrorContext{Capability: n.Name(), StepIndex: -1, Attempt: f.Attempt, Elapsed: f.Elapsed, Task: taskText(s)})
	if a.timedOut(s, err) {
		f.Limit = router.LimitExecutionTime
	} else {
		f.Recover = true
	}
	fu, ferr := a.fail(ctx, s, f, err)
	fu.Tokens = used
	return fu, ferr
}

// callInfra runs an infrastructure node (or the error node), turning a
// panic into an error, and reports each LLM call it made as an
// EventModelCall of the node once it returns.
func (a *Agent) callInfra(ctx context.Context, n nodes.Node, s state.State) (u state.Update, err error) {
	mc := &modelCalls{now: a.cfg.Now}
	defer mc.emit(ctx)
	defer func() {
		if v := recover(); v != nil {
			err = panicErr(v)
		}
	}()
	if restrictedIn(ctx, s) {
		run := ctx
		ctx = nodes.WithAllowed(ctx, func(name string) bool { return allowedIn(run, s, name) })
	}
	return n.Run(llm.WithCallObserver(ctx, mc.observe), s)
}

// modelCalls collects the LLM calls of one node run. A node may make them
// from goroutines of its own (the classifier asks about capabilities
// concurrently), and graph.Emit belongs to the node's goroutine: the calls
// are kept, each with the time it ended, and emitted when the node returns.
type modelCalls struct {
	now   func() time.Time
	mu    sync.Mutex
	calls []Event
}

func (mc *modelCalls) observe(_ context.Context, c llm.Call) {
	ev := Event{Type: EventModelCall, Time: mc.now(), Duration: c.Duration, Call: &ModelCall{Role: string(c.Role), Model: c.Model,
		Usage: Usage{PromptTokens: c.Usage.PromptTokens, CompletionTokens: c.Usage.CompletionTokens, TotalTokens: c.Usage.Total(),
			CachedPromptTokens: c.Usage.CachedPromptTokens}}}
	if c.Err != nil {
		ev.Err = c.Err.Error()
	}
	mc.mu.Lock()
	mc.calls = append(mc.calls, ev)
	mc.mu.Unlock()
}

func (mc *modelCalls) emit(ctx context.Context) {
	mc.mu.Lock()
	calls := mc.calls
	mc.calls = nil
	mc.mu.Unlock()
	for _, ev := range calls {
		emit(ctx, ev)
	}
}

func taskText(s state.State) string {
	if s.Turn.Task != nil {
		return s.Turn.Task.Text
	}
	return s.Turn.Input
}

// infraSuccess normalises a successful infrastructure node's update.
func (a *Agent) infraSuccess(s state.State, name string, u state.Update, now time.Time) (state.Update, error) {
	var t state.Turn
	if u.Turn != nil {
		t = *u.Turn
	} else {
		t = s.Turn
	}
	prev := s.Turn.Control
	recovering := router.CurrentError(s)
	// Counters are the wrapper's business: a node cannot lower them.
	t.Control.NodeSteps, t.Control.Tokens, t.Control.TokensByRole = prev.NodeSteps, prev.Tokens, prev.TokensByRole
	t.Control.PlansCreated = max(t.Control.PlansCreated, prev.PlansCreated)
	t.Control.Reclassifications = max(t.Control.Reclassifications, prev.Reclassifications)
	if t.Control.LimitExceeded == "" {
		t.Control.LimitExceeded = prev.LimitExceeded
	}
	t.Control.Error = nil
	t.Control.Blocked = nil
	if _, ok := prev.Retries[name]; ok {
		t.Control.Retries = maps.Clone(prev.Retries)
		delete(t.Control.Retries, name)
	}
	switch name {
	case state.NodeTaskExtraction:
		if t.Task == nil || strings.TrimSpace(t.Task.Text) == "" {
			t.Task = &state.Task{Text: s.Turn.Input}
		}
	case state.NodeClassifier:
		if recovering != nil && recovering.Classification.Severity == capabilities.Reclassification {
			t.Control.Reclassifications = max(t.Control.Reclassifications, prev.Reclassifications+1)
			if t.Control.ReclassificationReason == "" {
				t.Control.ReclassificationReason = recovering.Classification.UserMessage
			}
		}
		if len(t.ActiveCapabilities) == 0 {
			// Nothing fits: the always-active capabilities can still answer.
			t.ActiveCapabilities = []string{state.NodeRespond, state.NodeClarify}
		}
		t.Plan = nil // a new selection needs a new plan
	case state.NodeOrchestrator:
		// Every plan the orchestrator makes counts against the budget.
		t.Control.PlansCreated = max(t.Control.PlansCreated, prev.PlansCreated+1)
		if t.Plan != nil {
			p := *t.Plan
			p.Number = t.Control.PlansCreated
			if p.Created.IsZero() {
				p.Created = now
			}
			p.Steps = slices.Clone(p.Steps)
			for i := range p.Steps {
				if p.Steps[i].Status == "" {
					p.Steps[i].Status = state.StepPending
				}
			}
			t.Plan = &p
		}
	case state.NodeRespond, state.NodeClarify:
		return a.terminalSuccess(s, name, u, t, now)
	}
	out := u
	out.Turn = &t
	out.Step = nil
	out.NodeSteps = 1
	return out, nil
}

// terminalSuccess checks that respond or clarify wrote the turn's one
// assistant message, marks its plan step done and ends the turn. An answer
// also says which steps recovered after retries or used a fallback.
func (a *Agent) terminalSuccess(s state.State, name string, u state.Update, t state.Turn, now time.Time) (state.Update, error) {
	var msg *state.Message
	var rest []state.Message
	for i := range u.Messages {
		if u.Messages[i].Role == state.RoleAssistant {
			m := u.Messages[i]
			msg = &m // the last assistant message is the turn's message
			continue
		}
		rest = append(rest, u.Messages[i])
	}
	if msg == nil || strings.TrimSpace(msg.Content) == "" {
		return state.Update{}, capabilities.NewError(capabilities.Critical, capabilities.KindFormat,
			name+" finished without writing a message", nil)
	}
	if msg.Kind == "" {
		msg.Kind = state.KindAnswer
		if name == state.NodeClarify {
			msg.Kind = state.KindClarification
		}
	}
	if msg.Turn == 0 {
		msg.Turn = t.Number
	}
	if msg.Time.IsZero() {
		msg.Time = now
	}
	if t.Plan != nil {
		p := *t.Plan
		p.Steps = slices.Clone(p.Steps)
		for i := range p.Steps {
			if p.Steps[i].Effective() == name && (p.Steps[i].Status == "" || p.Steps[i].Status == state.StepPending) {
				p.Steps[i].Status = state.StepDone
				p.Steps[i].Attempts++
				p.Steps[i].Error = nil
				break
			}
		}
		t.Plan = &p
		if msg.Kind == state.KindAnswer {
			if notes := recoveryNotes(p, msg.Content); notes != "" {
				msg.Content = strings.TrimRight(msg.Content, "\n") + "\n\n" + notes
			}
		}
	}
	if msg.Kind == state.KindAnswer {
		if note := a.unchangedNote(t); note != "" {
			msg.Content = strings.TrimRight(msg.Content, "\n") + "\n\n" + note
		}
	}
	t.Done = true
	out := u
	out.Messages = append(rest, *msg)
	out.Turn = &t
	out.Step = nil
	out.NodeSteps = 1
	return out, nil
}

// unchangedNote is what an answer ends with when the user's words asked
// for a change and no side-effecting step of the turn was attempted: the
// answer is a model's, which may say otherwise ("Done: Q1 is at 105 A"),
// so the framework says what happened. "" otherwise: an attempt's outcome
// is said where it is recorded (the audit, a chat answer's outcome lines).
func (a *Agent) unchangedNote(t state.Turn) string {
	if t.Task == nil || !t.Task.Intent.IsChange() {
		return ""
	}
	for _, r := range t.Results {
		if c, ok := a.cfg.Registry.Get(r.Capability); ok && capabilities.HasSideEffects(c) {
			return ""
		}
	}
	return "**Nothing was changed.** Your request asks for a change (" + strings.TrimPrefix(t.Task.Intent.Summary(), "change: ") +
		"), and no step of this turn made one."
}

// recoveryNotes tells the user about degraded paths: fallbacks used and
// steps that only succeeded after retries, unless the answer (content)
// already says so.
func recoveryNotes(p state.Plan, content string) string {
	var lines []string
	for i, st := range p.Steps {
		if st.Status != state.StepDone || state.NodeRespond == st.Effective() || state.NodeClarify == st.Effective() {
			continue
		}
		switch {
		case st.Fallback != "" && !(strings.Contains(content, st.Fallback) && strings.Contains(content, st.Capability)):
			lines = append(lines, fmt.Sprintf("- Step %d (%s) used the fallback %s because %s failed.", i+1, st.TaskObjective, st.Fallback, st.Capability))
		case st.Fallback == "" && st.Recovered && !strings.Contains(content, fmt.Sprintf("after %d attempts", st.Attempts)):
			lines = append(lines, fmt.Sprintf("- Step %d (%s) succeeded after %d attempts.", i+1, st.TaskObjective, st.Attempts))
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "_Recovery notes:_\n" + strings.Join(lines, "\n")
}
