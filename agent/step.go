package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/state"
)

// stepNode wraps a capability: it runs the plan step the router assigned to
// it (the decision carried to the node), stores the outputs in the context
// store, and hands a failed attempt to the failure pipeline (failure.go).
func (a *Agent) stepNode(c capabilities.Capability) graph.NodeFunc[state.State, state.Update] {
	name := c.Name()
	return func(ctx context.Context, s state.State) (state.Update, error) {
		now := a.cfg.Now()
		if u, stop := a.overLimit(s, now); stop {
			return u, nil
		}
		idx, ok := router.Carried(ctx, s, a.rc).Steps[name]
		if !ok || s.Turn.Plan == nil || idx >= len(s.Turn.Plan.Steps) {
			// The graph routed here but the state assigns no step: never guess.
			t := s.Turn
			t.Control.Error = &state.ErrorInfo{Node: name, Capability: name, StepIndex: -1, At: now,
				Message:        "capability node ran without a plan step",
				Classification: capabilities.Classification{Severity: capabilities.Critical, Kind: capabilities.KindUnknown, UserMessage: "internal routing error: " + name + " ran without a plan step"}}
			return state.Update{Turn: &t, NodeSteps: 1}, nil
		}
		plan := s.Turn.Plan
		at := attempt{s: s, c: c, idx: idx, ps: plan.Steps[idx], now: now}
		if !allowedIn(ctx, s, name) {
			at.n = at.ps.Attempts + 1
			return a.notAllowedStep(ctx, at), nil
		}
		at.n, at.firstAt = router.NextAttempt(s, name, idx, now)
		at.apID = stepApprovalID(s.Turn, plan.Number, idx, name)
		at.ans, at.answered = answerOf(ctx)
		escID := escalationID(name, plan.Number, idx, at.n)
		if at.answered && at.ans.ID == escID+approvedSuffix {
			at.ps.Approved = true // approved, then blocked: the approval stands
		}
		if at.answered && !at.ans.Approved {
			if u, done, err := a.notApproved(ctx, at, escID); done {
				return u, err
			}
			// Another step's approval, pending beside this step's
			// question, was rejected, or a sibling's escalation was given
			// up: that is not this step's answer. It runs, or asks its
			// own question again, below.
			at.answered = false
		}
		return a.runAttempt(ctx, at)
	}
}

// notAllowedStep refuses a step whose capability the caller may not use,
// on the record when it acts on the outside world.
func (a *Agent) notAllowedStep(ctx context.Context, at attempt) state.Update {
	u := a.refuseStep(ctx, at)
	if capabilities.HasSideEffects(at.c) {
		rec := at.record(ctx)
		rec.Event, rec.Outcome, rec.Reason, rec.Message = AuditRefused, capabilities.OutcomeRefused, RefusedNotAllowed, "this caller is not allowed to use "+at.c.Name()
		a.auditBestEffort(ctx, rec)
	}
	return u
}

// notApproved ends the step when the answer the node was re-entered with
// says no to it: a human gave up on its escalation, or rejected its
// approval (or the approval expired, or a new message replaced it). done
// is false when the answer is another step's.
func (a *Agent) notApproved(ctx context.Context, at attempt, escID string) (u state.Update, done bool, err error) {
	name, ans := at.c.Name(), at.ans
	switch {
	case ans.ID == escID, ans.ID == escID+approvedSuffix:
		cl := capabilities.Classification{Severity: capabilities.Critical, Kind: capabilities.KindResourceExhausted, UserMessage: name + " was blocked and a human gave up"}
		f := a.stepFailure(at)
		f.Classification, f.Message = notRetried(cl, ans)
		u, err := a.fail(ctx, at.s, f, nil)
		return u, true, err
	case ownAnswer(ans.ID, at.apID):
		// The rejection names what the human was asked, not what the step
		// might describe now.
		summary := ans.Summary
		if summary == "" {
			resolved, _ := resolveInputs(at.s.Context, at.ps.Inputs)
			_, summary = needsApproval(at.c, a.stepFor(ctx, at, resolved), at.s.Turn.Options)
		}
		if capabilities.HasSideEffects(at.c) {
			rec := at.record(ctx)
			rec.Event, rec.Summary, rec.Digest, rec.ApprovalID, rec.ApprovedBy = AuditRejected, summary, ans.ActionDigest, ans.ID, ans.By
			rec.Rule, rec.Answer, rec.Before, rec.Message = ans.Rule, ans.Answer, ans.Before, "a human rejected the step"
			switch ans.Rule {
			case state.AnswerExpired:
				rec.Event, rec.ApprovedBy, rec.Message = AuditExpired, "", "nobody answered the approval in time"
			case state.AnswerSuperseded:
				rec.Message = "a new message replaced the question"
			}
			a.auditBestEffort(ctx, rec)
		}
		return a.rejectedStep(ctx, at, summary), true, nil
	}
	return state.Update{}, false, nil
}

// runAttempt runs the attempt — a side-effecting capability at most once,
// through the gate (effect.go), any other at once — and records its
// result, or hands its failure to the failure pipeline.
func (a *Agent) runAttempt(ctx context.Context, at attempt) (state.Update, error) {
	resolved, err := resolveInputs(at.s.Context, at.ps.Inputs)
	var out capabilities.Output
	if capabilities.HasSideEffects(at.c) && err == nil {
		res, settled := a.sideEffect(ctx, at, a.stepFor(ctx, at, resolved))
		switch {
		case res.stop != nil:
			return res.stop.update, res.stop.err
		case res.open:
			return state.Update{}, ctx.Err() // the run was canceled; the attempt is reconciled when it resumes
		case res.critical != nil:
			f := a.stepFailure(at)
			f.Classification, f.Message = *res.critical, res.critical.UserMessage
			f.Elapsed = a.cfg.Now().Sub(at.now)
			return a.fail(ctx, at.s, f, nil) // never retried, replanned or replaced: the error report says what to check
		}
		at.ps = settled
		out, err = res.out, res.err
	} else {
		if err == nil && !at.ps.Approved {
			if need, summary := needsApproval(at.c, a.stepFor(ctx, at, resolved), at.s.Turn.Options); need {
				if !at.answered || at.ans.ID != at.apID {
					// Asked before the step starts: nothing of it has run.
					return state.Update{}, graph.Interrupt(a.stepApproval(at.apID, at.c, a.stepFor(ctx, at, resolved), summary, at.now))
				}
				at.ps.Approved = true
			}
		}
		name := at.c.Name()
		emit(ctx, Event{Type: EventStepStart, Node: name, Step: at.idx, Total: len(at.s.Turn.Plan.Steps), Capability: name, Text: at.ps.TaskObjective, Attempt: at.n})
		if err == nil {
			b := a.executeBounded(ctx, a.deadline(at.s), at.c, a.stepFor(ctx, at, resolved))
			out, err = b.out, b.err
		}
	}
	var (
		entries []capabilities.ContextEntry
		arts    []capabilities.Artifact
	)
	if err == nil {
		entries, err = contextEntries(out, at.ps, at.c.Name(), at.s.Turn.Number, at.now)
	}
	if err == nil {
		arts, err = a.stepArtifacts(out, at.c.Name(), at.s.Turn.Number, at.s.Turn.Plan.Number, at.idx)
	}
	end := a.cfg.Now()
	if err != nil {
		return a.stepFailed(ctx, at, end, err)
	}
	return a.stepDone(ctx, at, entries, arts, end), nil
}

// stepDone records the attempt's success, which ended at end: the step
// done, its context entries and artifacts.
func (a *Agent) stepDone(ctx context.Context, at attempt, entries []capabilities.ContextEntry, arts []capabilities.Artifact, end time.Time) state.Update {
	name, plan, ps := at.c.Name(), at.s.Turn.Plan, at.ps
	ps2 := ps
	ps2.Status, ps2.Attempts, ps2.FirstAttemptAt, ps2.NotBefore, ps2.Error = state.StepDone, at.n, at.firstAt, time.Time{}, nil
	ps2.Recovered = ps.Recovered || at.n > 1
	emit(ctx, Event{Type: EventStepEnd, Node: name, Step: at.idx, Total: len(plan.Steps), Capability: name, Duration: end.Sub(at.now), Attempt: at.n})
	for i := range arts {
		emit(ctx, Event{Type: EventArtifact, Node: name, Step: at.idx, Total: len(plan.Steps), Capability: name, Attempt: at.n, Artifact: &arts[i]})
	}
	return state.Update{Context: entries, NodeSteps: 1, Step: &state.StepUpdate{
		Plan: plan.Number, Index: at.idx, Step: ps2, ClearError: true,
		Result: &state.StepResult{StepIndex: at.idx, Capability: name, TaskObjective: ps.TaskObjective, Success: true,
			Attempt: at.n, Duration: end.Sub(at.now), At: end, Plan: plan.Number, Artifacts: arts},
	}}
}

// stepFailed hands the attempt's failure err, at end, to the failure
// pipeline; an interrupt (the capability asks a human) and the run's own
// cancellation are no failures of the step.
func (a *Agent) stepFailed(ctx context.Context, at attempt, end time.Time, err error) (state.Update, error) {
	if _, ok := graph.IsInterrupt(err); ok {
		return state.Update{}, err // an approval the capability asks for
	}
	if ctx.Err() != nil {
		return state.Update{}, ctx.Err() // the run was canceled; Resume continues
	}
	name := at.c.Name()
	emit(ctx, Event{Type: EventStepEnd, Node: name, Step: at.idx, Total: len(at.s.Turn.Plan.Steps), Capability: name, Duration: end.Sub(at.now), Err: err.Error(), Attempt: at.n})
	f := a.stepFailure(at)
	f.Elapsed, f.Message = end.Sub(at.now), err.Error()
	if deadlineFailure(err) {
		f.Classification = capabilities.DefaultClassify(err)
	} else {
		f.Classification = capabilities.Classify(at.c, err, capabilities.ErrorContext{Capability: name, StepIndex: at.idx, Attempt: at.n, Elapsed: f.Elapsed, Task: taskText(at.s)})
	}
	if a.timedOut(at.s, err) {
		f.Limit = router.LimitExecutionTime
	} else {
		f.Recover = true
	}
	return a.fail(ctx, at.s, f, err)
}

// stepFor is what the capability receives for the attempt.
func (a *Agent) stepFor(ctx context.Context, at attempt, resolved []capabilities.ContextEntry) capabilities.Step {
	s, ps := at.s, at.ps
	return capabilities.Step{
		PlannedStep: ps.PlannedStep, Index: at.idx, Task: taskText(s), Attempt: at.n,
		IdempotencyKey: fmt.Sprintf("%s/%d/%d/%d/%d", threadOf(ctx), s.Turn.Number, s.Turn.Plan.Number, at.idx, at.n),
		Resolved:       resolved, WritesEnabled: a.writesEnabled(s), Approved: ps.Approved, Target: s.Turn.Options.Target,
	}
}

// resolveInputs reads the step's inputs from the context store, in order.
func resolveInputs(cs capabilities.ContextStore, refs []capabilities.InputRef) ([]capabilities.ContextEntry, error) {
	out := make([]capabilities.ContextEntry, 0, len(refs))
	for _, r := range refs {
		e, ok := cs.Get(r.Type, r.Key)
		if !ok {
			return nil, fmt.Errorf("%w: context %s.%s is not in the context store", capabilities.ErrMissingInput, r.Type, r.Key)
		}
		out = append(out, e)
	}
	return out, nil
}

// contextEntries turns a step's output into context store entries.
func contextEntries(out capabilities.Output, ps state.PlanStep, capability string, turn int, now time.Time) ([]capabilities.ContextEntry, error) {
	entries := make([]capabilities.ContextEntry, 0, len(out.Values))
	for i, v := range out.Values {
		if v.Type == "" {
			return nil, capabilities.NewError(capabilities.Critical, capabilities.KindFormat,
				fmt.Sprintf("%s returned output value %d without a context type", capability, i), nil)
		}
		key := v.Key
		if key == "" {
			key = ps.ContextKey
		}
		if key == "" {
			key = fmt.Sprintf("%s_%d", capability, i)
		}
		b, err := json.Marshal(v.Value)
		if err != nil {
			return nil, capabilities.NewError(capabilities.Critical, capabilities.KindFormat,
				fmt.Sprintf("%s returned a %s value that cannot be stored", capability, v.Type), err)
		}
		entries = append(entries, capabilities.ContextEntry{Type: v.Type, Key: key, Value: b, Summary: v.Summary,
			TaskObjective: ps.TaskObjective, Capability: capability, Turn: turn, Created: now})
	}
	return entries, nil
}
