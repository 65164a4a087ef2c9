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
		ps := plan.Steps[idx]
		sideEffects := capabilities.HasSideEffects(c)
		if !allowed(s, name) {
			u := a.refuseStep(ctx, s, c, idx, ps, now)
			if sideEffects {
				rec := a.auditBase(ctx, s, name, idx, ps, ps.Attempts+1, now)
				rec.Event, rec.Outcome, rec.Reason, rec.Message = AuditRefused, capabilities.OutcomeRefused, RefusedNotAllowed, "this caller is not allowed to use "+name
				a.auditBestEffort(ctx, rec)
			}
			return u, nil
		}
		attempt, firstAt := router.NextAttempt(s, name, idx, now)
		escID := escalationID(name, plan.Number, idx, attempt)
		apID := stepApprovalID(s.Turn, plan.Number, idx, name)
		ans, answered := answerOf(ctx)
		if answered && ans.ID == escID+approvedSuffix {
			ps.Approved = true // approved, then blocked: the approval stands
		}
		if answered && !ans.Approved {
			switch {
			case ans.ID == escID, ans.ID == escID+approvedSuffix:
				cl := capabilities.Classification{Severity: capabilities.Critical, Kind: capabilities.KindResourceExhausted, UserMessage: name + " was blocked and a human gave up"}
				f := a.stepFailure(s, c, idx, ps, now)
				f.Classification, f.Message = notRetried(cl, ans)
				return a.fail(ctx, s, f, nil)
			case ownAnswer(ans.ID, apID):
				// The rejection names what the human was asked, not what
				// the step might describe now.
				summary := ans.Summary
				if summary == "" {
					resolved, _ := resolveInputs(s.Context, ps.Inputs)
					_, summary = needsApproval(c, a.stepFor(ctx, s, ps, idx, attempt, resolved), s.Turn.Options)
				}
				if sideEffects {
					rec := a.auditBase(ctx, s, name, idx, ps, attempt, now)
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
				return a.rejectedStep(ctx, s, c, idx, ps, summary, ans.Rule, now), nil
			default:
				// Another step's approval, pending beside this step's
				// question, was rejected, or a sibling's escalation was given
				// up: that is not this step's answer. It runs, or asks its
				// own question again, below.
				answered = false
			}
		}
		resolved, err := resolveInputs(s.Context, ps.Inputs)
		var (
			out     capabilities.Output
			entries []capabilities.ContextEntry
			arts    []capabilities.Artifact
			end     time.Time
		)
		if sideEffects && err == nil {
			step := a.stepFor(ctx, s, ps, idx, attempt, resolved)
			res, settled := a.sideEffect(ctx, s, c, idx, ps, step, apID, ans, answered, now)
			switch {
			case res.stop != nil:
				return res.stop.update, res.stop.err
			case res.open:
				return state.Update{}, ctx.Err() // the run was canceled; the attempt is reconciled when it resumes
			case res.critical != nil:
				f := a.stepFailure(s, c, idx, ps, now)
				f.Classification, f.Message = *res.critical, res.critical.UserMessage
				f.Elapsed = a.cfg.Now().Sub(now)
				return a.fail(ctx, s, f, nil) // never retried, replanned or replaced: the error report says what to check
			}
			ps = settled
			out, err = res.out, res.err
			if err == nil {
				entries, err = contextEntries(out, ps, name, s.Turn.Number, now)
			}
			if err == nil {
				arts, err = a.stepArtifacts(out, name, s.Turn.Number, plan.Number, idx)
			}
			end = a.cfg.Now()
		} else {
			if err == nil && !ps.Approved {
				if need, summary := needsApproval(c, a.stepFor(ctx, s, ps, idx, attempt, resolved), s.Turn.Options); need {
					if !answered || ans.ID != apID {
						// Asked before the step starts: nothing of it has run.
						return state.Update{}, graph.Interrupt(a.stepApproval(apID, c, a.stepFor(ctx, s, ps, idx, attempt, resolved), summary, now))
					}
					ps.Approved = true
				}
			}
			emit(ctx, Event{Type: EventStepStart, Node: name, Step: idx, Total: len(plan.Steps), Capability: name, Text: ps.TaskObjective, Attempt: attempt})
			if err == nil {
				step := a.stepFor(ctx, s, ps, idx, attempt, resolved)
				nctx, cancel := context.WithDeadline(ctx, a.deadline(s))
				out, err = execute(nctx, c, step)
				cancel()
				if err == nil {
					entries, err = contextEntries(out, ps, name, s.Turn.Number, now)
				}
				if err == nil {
					arts, err = a.stepArtifacts(out, name, s.Turn.Number, plan.Number, idx)
				}
			}
			end = a.cfg.Now()
		}
		if err == nil {
			ps2 := ps
			ps2.Status, ps2.Attempts, ps2.FirstAttemptAt, ps2.NotBefore, ps2.Error = state.StepDone, attempt, firstAt, time.Time{}, nil
			ps2.Recovered = ps.Recovered || attempt > 1
			emit(ctx, Event{Type: EventStepEnd, Node: name, Step: idx, Total: len(plan.Steps), Capability: name, Duration: end.Sub(now), Attempt: attempt})
			for i := range arts {
				emit(ctx, Event{Type: EventArtifact, Node: name, Step: idx, Total: len(plan.Steps), Capability: name, Attempt: attempt, Artifact: &arts[i]})
			}
			return state.Update{Context: entries, NodeSteps: 1, Step: &state.StepUpdate{
				Plan: plan.Number, Index: idx, Step: ps2, ClearError: true,
				Result: &state.StepResult{StepIndex: idx, Capability: name, TaskObjective: ps.TaskObjective, Success: true,
					Attempt: attempt, Duration: end.Sub(now), At: end, Plan: plan.Number, Artifacts: arts},
			}}, nil
		}
		if _, ok := graph.IsInterrupt(err); ok {
			return state.Update{}, err // an approval the capability asks for
		}
		if ctx.Err() != nil {
			return state.Update{}, ctx.Err() // the run was canceled; Resume continues
		}
		emit(ctx, Event{Type: EventStepEnd, Node: name, Step: idx, Total: len(plan.Steps), Capability: name, Duration: end.Sub(now), Err: err.Error(), Attempt: attempt})
		f := a.stepFailure(s, c, idx, ps, now)
		f.Elapsed, f.Message = end.Sub(now), err.Error()
		f.Classification = capabilities.Classify(c, err, capabilities.ErrorContext{Capability: name, StepIndex: idx, Attempt: attempt, Elapsed: f.Elapsed, Task: taskText(s)})
		if a.timedOut(s, err) {
			f.Limit = router.LimitExecutionTime
		} else {
			f.Recover = true
		}
		return a.fail(ctx, s, f, err)
	}
}

// stepFor is what the capability receives for one attempt of a step.
func (a *Agent) stepFor(ctx context.Context, s state.State, ps state.PlanStep, idx, attempt int, resolved []capabilities.ContextEntry) capabilities.Step {
	return capabilities.Step{
		PlannedStep: ps.PlannedStep, Index: idx, Task: taskText(s), Attempt: attempt,
		IdempotencyKey: fmt.Sprintf("%s/%d/%d/%d/%d", threadOf(ctx), s.Turn.Number, s.Turn.Plan.Number, idx, attempt),
		Resolved:       resolved, WritesEnabled: a.writesEnabled(s), Approved: ps.Approved,
	}
}

// execute runs the capability isolated: a panic or runtime.Goexit in it is
// a failure of the step, never of the caller.
func execute(ctx context.Context, c capabilities.Capability, step capabilities.Step) (capabilities.Output, error) {
	return isolated(func() (capabilities.Output, error) { return c.Execute(ctx, step) })
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
