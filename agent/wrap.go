package agent

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/state"
)

// This file holds what every node wrapper shares: the thread in the context,
// the turn deadline, the seeded random source, escalation and retry math.

type threadKey struct{}

func withThread(ctx context.Context, thread string) context.Context {
	return context.WithValue(ctx, threadKey{}, thread)
}

func threadOf(ctx context.Context) string {
	t, _ := ctx.Value(threadKey{}).(string)
	return t
}

// retryRand returns the random source of one retry decision, seeded from
// where it is taken (thread, turn, node, step, attempt) so a replay of the
// same failure computes the same delay.
func retryRand(thread string, turn int, node string, step, attempt int) *rand.Rand {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%d\x00%s\x00%d\x00%d", thread, turn, node, step, attempt)
	s := h.Sum64()
	return rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
}

// deadline is the turn's wall-clock limit.
func (a *Agent) deadline(s state.State) time.Time {
	start := s.Turn.StartedAt
	if start.IsZero() {
		start = a.cfg.Now()
	}
	// Time spent waiting for a human does not count; time spent crashed does.
	return start.Add(a.cfg.Limits.MaxExecutionTime + s.Turn.Control.Paused)
}

// overLimit returns the update a node returns instead of running when the
// turn's wall-clock limit has passed.
func (a *Agent) overLimit(s state.State, now time.Time) (state.Update, bool) {
	if now.Before(a.deadline(s)) {
		return state.Update{}, false
	}
	return state.Update{NodeSteps: 1, LimitExceeded: router.LimitExecutionTime}, true
}

// retryDecision applies policy p to a failed attempt. It refuses a retry
// that could not start before the turn's deadline and says so (limit).
func (a *Agent) retryDecision(ctx context.Context, s state.State, node string, step int, p capabilities.RetryPolicy,
	cl capabilities.Classification, attempt int, firstAt, now time.Time) (retry bool, notBefore time.Time, limit string) {
	if cl.Severity != capabilities.Retriable {
		return false, time.Time{}, ""
	}
	r := retryRand(threadOf(ctx), s.Turn.Number, node, step, attempt)
	delay, ok := p.Next(capabilities.Attempt{Number: attempt, FirstAt: firstAt, Kind: cl.Kind, RetryAfter: cl.RetryAfter.D()}, now, r)
	if !ok {
		return false, time.Time{}, ""
	}
	nb := now.Add(delay)
	if !nb.Before(a.deadline(s)) {
		return false, time.Time{}, router.LimitExecutionTime
	}
	return true, nb, ""
}

// timedOut reports whether err is the turn's own deadline passing.
func (a *Agent) timedOut(s state.State, err error) bool {
	return isCtxErr(err) && !a.cfg.Now().Before(a.deadline(s))
}

func isCtxErr(err error) bool {
	return err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled))
}

// escalationID names the escalation of one attempt of a node or step.
func escalationID(node string, plan, step, attempt int) string {
	return fmt.Sprintf("escalation:%s:%d:%d:%d", node, plan, step, attempt)
}

// escalate pauses the run for a human: a resource is exhausted, so retrying
// now would fail again. The human answers "retry" (approve) or "give up".
func (a *Agent) escalate(node, capability string, step int, id string, cl capabilities.Classification, now time.Time) error {
	return graph.Interrupt(state.Approval{
		ID: id, Kind: state.ApprovalEscalation, Capability: capability, StepIndex: step,
		Summary: fmt.Sprintf("%s is blocked: %s. Approve to retry once the resource is available, or reject to give up.",
			node, strings.TrimSuffix(cl.UserMessage, ".")),
		Arguments: map[string]any{"kind": cl.Kind, "severity": cl.Severity.String(), "node": node},
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

func panicErr(v any) error {
	return &capabilities.PanicError{Value: v, Stack: string(debug.Stack())}
}

// emit sends an agent event from inside a node; Run passes it through.
func emit(ctx context.Context, e Event) { graph.Emit(ctx, e) }

func emitRetry(ctx context.Context, node string, info *state.ErrorInfo, now time.Time) {
	if info == nil || !info.Retry {
		return
	}
	ev := Event{Type: EventRetry, Node: node, Retry: &RetryInfo{
		Node: node, Attempt: info.Attempt, Max: info.Policy.MaxAttempts,
		Delay: info.NotBefore.Sub(now), NotBefore: info.NotBefore, Reason: info.Classification.UserMessage,
		Capability: info.Capability, Step: info.StepIndex,
	}}
	if info.StepIndex >= 0 {
		ev.Capability, ev.Step = info.Capability, info.StepIndex
	}
	emit(ctx, ev)
}
