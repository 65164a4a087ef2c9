package agent

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/state"
)

// What happens when an attempt fails is decided in router/failure.go
// (router.Record: retry, fallback, escalation, FATAL, the error the router
// routes, the budget). The wrappers here only describe the failure
// (stepFailure, nodeFailure) and turn the outcome into what the run shows:
// an event, an interrupt for a human, a typed error.

// fail records failure f of a node of state s; err is the original error
// (nil for a refusal).
func (a *Agent) fail(ctx context.Context, s state.State, f router.Failure, err error) (state.Update, error) {
	now := a.cfg.Now()
	u, out := router.Record(s, f, now, router.RetryRand(threadOf(ctx), s.Turn.Number, f.Node, f.Step, f.Attempt))
	if a.cfg.Observer != nil {
		emitFailure(ctx, f, out, now, err)
	}
	switch out.Action {
	case router.Abort:
		fe := &FatalError{Node: f.Node, StepIndex: f.Step, Classification: f.Classification, Err: err}
		if f.Step >= 0 {
			fe.Capability = f.Node
		}
		return state.Update{}, fe
	case router.Escalate:
		return state.Update{}, a.escalate(s, f, now)
	case router.Fallback:
		emit(ctx, Event{Type: EventStatus, Node: f.Node, Step: f.Step, Capability: f.Node,
			Text: fmt.Sprintf("%s failed (%s); trying the fallback %s", f.Node, f.Classification.UserMessage, out.Fallback)})
	case router.Recorded:
		emitRetry(ctx, out.Error, now)
	}
	return u, nil
}

// stepFailure describes the failing attempt (its plan step as the attempt
// ran it); the caller adds what went wrong (Classification, Message,
// Elapsed) and Recover or Limit.
func (a *Agent) stepFailure(at attempt) router.Failure {
	s, c, ps := at.s, at.c, at.ps
	n, firstAt := router.NextAttempt(s, c.Name(), at.idx, at.now)
	return router.Failure{Node: c.Name(), Step: at.idx, Attempt: n, FirstAt: firstAt, At: at.now,
		Policy:   capabilities.ResolveRetryPolicy(c, a.cfg.CapabilityRetry, a.cfg.RetryPolicy),
		Deadline: a.deadline(s), Fallbacks: a.fallbacks(s, ps), Approved: ps.Approved, Grant: ps.Grant}
}

// nodeFailure describes the failing attempt of infrastructure node n,
// started at start; the caller adds what went wrong and Recover or Limit.
func (a *Agent) nodeFailure(s state.State, n nodes.Node, start time.Time) router.Failure {
	attempt, firstAt := router.NextAttempt(s, n.Name(), -1, start)
	return router.Failure{Node: n.Name(), Step: -1, Attempt: attempt, FirstAt: firstAt, At: start,
		Policy: a.infraPolicy(n), Deadline: a.deadline(s)}
}

// fallbacks lists the fallbacks declared by the step's original capability
// that are registered and that the caller may use, in order.
func (a *Agent) fallbacks(s state.State, ps state.PlanStep) []string {
	orig, ok := a.cfg.Registry.Get(ps.Capability)
	if !ok {
		return nil
	}
	fp, ok := orig.(capabilities.FallbackProvider)
	if !ok {
		return nil
	}
	var out []string
	for _, fb := range fp.Fallbacks() {
		if _, ok := a.cfg.Registry.Get(fb); ok && allowed(s, fb) {
			out = append(out, fb)
		}
	}
	return out
}

// infraPolicy is the retry policy of infrastructure node n: its own, then
// Config.InfraRetry's, then DefaultInfraRetryPolicy, field by field.
func (a *Agent) infraPolicy(n nodes.Node) capabilities.RetryPolicy {
	var layers []capabilities.RetryPolicy
	if pp, ok := n.(capabilities.RetryPolicyProvider); ok {
		layers = append(layers, pp.RetryPolicy())
	}
	if p, ok := a.cfg.InfraRetry[n.Name()]; ok {
		layers = append(layers, p)
	}
	layers = append(layers, DefaultInfraRetryPolicy())
	return capabilities.MergeRetryPolicies(layers...)
}

// approvedSuffix marks the escalation of a step a human had approved: the
// interrupt discards the step's update, so the approval travels in the id.
const approvedSuffix = ":approved"

// escalationID names the escalation of one attempt of a node or step.
func escalationID(node string, plan, step, attempt int) string {
	return fmt.Sprintf("escalation:%s:%d:%d:%d", node, plan, step, attempt)
}

// escalate pauses the run for a human: a resource is exhausted, so retrying
// now would fail again. The human answers "retry" (approve) or "give up".
func (a *Agent) escalate(s state.State, f router.Failure, now time.Time) error {
	id := escalationID(f.Node, planNumber(s), f.Step, f.Attempt)
	capability := ""
	if f.Step >= 0 {
		capability = f.Node
		if f.Approved {
			id += approvedSuffix
		}
	}
	cl := f.Classification
	return graph.Interrupt(state.Approval{
		ID: id, Kind: state.ApprovalEscalation, Capability: capability, StepIndex: f.Step,
		Summary: fmt.Sprintf("%s is blocked: %s. Approve to retry once the resource is available, or reject to give up.",
			f.Node, strings.TrimSuffix(cl.UserMessage, ".")),
		Arguments: map[string]any{"kind": cl.Kind, "severity": cl.Severity.String(), "node": f.Node},
		Created:   now, Expires: a.expires(now),
	})
}

// gaveUp is the failure recorded when a human declines to retry a blocked operation.
func gaveUp(cl capabilities.Classification) capabilities.Classification {
	cl.Severity = capabilities.Critical
	cl.Kind = capabilities.KindResourceExhausted
	md := maps.Clone(cl.Metadata)
	if md == nil {
		md = map[string]any{}
	}
	md[capabilities.MetaSafetyAbortReason] = "a human chose to give up after the operation was blocked"
	cl.Metadata = md
	return cl
}

// notRetried is the failure recorded, and its message, when decision d
// did not retry a blocked operation: gaveUp for a human's no; for an
// approval nobody answered in time, the reason says that instead (never
// that a human gave up).
func notRetried(cl capabilities.Classification, d state.ApprovalDecision) (capabilities.Classification, string) {
	cl = gaveUp(cl)
	if d.Rule != state.AnswerExpired {
		return cl, "blocked: a human gave up"
	}
	cl.Metadata[capabilities.MetaSafetyAbortReason] = "nobody answered in time whether to retry the blocked operation (the approval expired)"
	return cl, "blocked: nobody answered in time whether to retry (the approval expired)"
}

// emitRetry announces a scheduled retry; Delay is what is left of it at now.
func emitRetry(ctx context.Context, info *state.ErrorInfo, now time.Time) {
	if info == nil || !info.Retry {
		return
	}
	ev := Event{Type: EventRetry, Node: info.Node, Retry: &RetryInfo{
		Node: info.Node, Attempt: info.Attempt, Max: info.Policy.MaxAttempts,
		Delay: info.NotBefore.Sub(now), NotBefore: info.NotBefore, Reason: info.Classification.UserMessage,
		Capability: info.Capability, Step: info.StepIndex,
	}}
	if info.StepIndex >= 0 {
		ev.Capability, ev.Step = info.Capability, info.StepIndex
	}
	emit(ctx, ev)
}

func planNumber(s state.State) int {
	if s.Turn.Plan != nil {
		return s.Turn.Plan.Number
	}
	return 0
}

// emitFailure tells the observer of a failed attempt and what recording
// it did (EventFailure).
func emitFailure(ctx context.Context, f router.Failure, out router.Outcome, now time.Time, err error) {
	det := &Detail{}
	fi := &det.Failure
	*fi = FailureInfo{Severity: f.Classification.Severity.String(), Kind: f.Classification.Kind, Limit: f.Limit}
	switch out.Action {
	case router.Abort:
		fi.Action = "abort"
	case router.Escalate:
		fi.Action = "escalate"
	case router.Fallback:
		fi.Action = "fallback"
	default:
		fi.Action = "recorded"
		if out.Error != nil {
			if out.Error.Retry {
				// The wait scheduled from the failure (router.Record),
				// not what is left of it now: a short one may be past.
				fi.Action, fi.Delay = "retry", out.Error.NotBefore.Sub(out.Error.At.Add(out.Error.Elapsed))
			}
			if out.Error.Classification.Severity != f.Classification.Severity {
				fi.Severity = out.Error.Classification.Severity.String()
			}
		}
	}
	ev := Event{Type: EventFailure, Node: f.Node, Step: f.Step, Attempt: f.Attempt, Detail: det}
	if f.Step >= 0 {
		ev.Capability = f.Node
	}
	if err != nil {
		ev.Err = err.Error()
	}
	emit(ctx, ev)
}
