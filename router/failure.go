package router

import (
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

// This file is the writing side of severity: how a failed attempt is
// recorded in the state, so that Decide (the reading side) routes it. The
// package doc gives the table; the node wrappers of the agent fill a Failure
// and act on the Outcome.

// Failure is one failed attempt of a graph node, as the node's wrapper saw it.
type Failure struct {
	// Node is the graph node that ran: an infrastructure node, or the
	// capability running a plan step (a fallback, when one stands in).
	Node string
	// Step is the plan step's index, or -1 for an infrastructure node.
	Step int
	// Attempt is the attempt that failed, from 1 (see NextAttempt).
	Attempt int
	// FirstAt is when the first attempt of the episode started (the
	// policy's MaxElapsed); At is when this attempt started: a retry's delay
	// runs from it.
	FirstAt, At time.Time
	// Elapsed is how long the attempt ran.
	Elapsed time.Duration
	// Classification says how bad the failure is; Message is the error's text.
	Classification capabilities.Classification
	Message        string
	// Policy is the retry policy in force (zero: the capability default).
	Policy capabilities.RetryPolicy
	// Recover allows recovery: a FATAL abort, an escalation to a human, a
	// retry, a fallback. False records the failure as it is (a refusal, a
	// human who gave up): the router sends it on by its severity.
	Recover bool
	// Limit names a limit the attempt ran into (the turn's wall clock): the
	// failure is recorded as it is and the turn goes to the error node.
	Limit string
	// Deadline is the turn's wall-clock limit: no retry is scheduled to
	// start at or after it (zero: none).
	Deadline time.Time
	// Fallbacks are the capabilities a plan step may switch to, in order:
	// declared by the step's capability, registered, allowed for the caller.
	Fallbacks []string
	// Approved and Grant are the plan step's approval the attempt ran
	// under: a retry keeps it, a fallback asks for its own.
	Approved bool
	Grant    *state.Grant
}

// Action is what a node wrapper does with a recorded failure.
type Action uint8

const (
	// Recorded: the update records the failure, a scheduled retry or the
	// error Decide routes by severity; the wrapper returns it.
	Recorded Action = iota
	// Fallback: the update switches the plan step to Outcome.Fallback, which
	// the router runs next.
	Fallback
	// Escalate: nothing is recorded; the wrapper pauses the run for a human
	// (a resource is exhausted: retrying now would fail again).
	Escalate
	// Abort: nothing is recorded; the run ends with a typed error (FATAL).
	Abort
)

var actionNames = [...]string{Recorded: "recorded", Fallback: "fallback", Escalate: "escalate", Abort: "abort"}

func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", a)
}

// Outcome says what Record decided.
type Outcome struct {
	Action Action
	// Error is the failure as recorded (Recorded): Retry and NotBefore say
	// whether and when the node runs again.
	Error *state.ErrorInfo
	// Fallback names the capability now running the plan step (Fallback).
	Fallback string
}

// Record writes failure f of a node of state s into an update, in this
// order (the first that applies):
//
//  1. the attempt ran into a limit (f.Limit): recorded with the limit, no
//     recovery (→ error node);
//  2. FATAL, recovery allowed: Abort, nothing recorded;
//  3. a resource is exhausted, recovery allowed: Escalate, nothing recorded;
//  4. RETRIABLE, recovery allowed, the policy grants another attempt: a
//     retry at its not-before time (the attempt's end + the policy's
//     delay, drawn from rnd); a retry that could not start before
//     f.Deadline is not scheduled, and the turn's wall-clock limit is
//     recorded instead;
//  5. no retry, recovery allowed, the failure one a different capability
//     might avoid (see fallbackAllowed) and a fallback left: the step
//     switches to it, its attempts start again;
//  6. otherwise the failure is recorded for Decide: REPLANNING and
//     RECLASSIFICATION keep the step pending for the recovery node, any
//     other severity fails it for good; an orchestrator failure classified
//     REPLANNING uses up a planning attempt (an invalid plan counts, so
//     repeated invalid plans end in the error node).
//
// Record is pure: now (when the failure is recorded) and rnd (the jitter,
// see RetryRand) are inputs, so a replay records the same failure.
func Record(s state.State, f Failure, now time.Time, rnd *rand.Rand) (state.Update, Outcome) {
	cl := f.Classification
	if f.Limit == "" && f.Recover {
		switch {
		case cl.Severity == capabilities.Fatal:
			return state.Update{}, Outcome{Action: Abort}
		case cl.Kind == capabilities.KindResourceExhausted:
			return state.Update{}, Outcome{Action: Escalate}
		}
	}
	p := f.Policy
	if p.MaxAttempts == 0 {
		p = p.WithDefaults()
	}
	var (
		retry bool
		nb    time.Time
		limit = f.Limit
	)
	if f.Recover && limit == "" && cl.Severity == capabilities.Retriable {
		// The delay counts from when the attempt failed, not from when it
		// started: a server's Retry-After is "after this answer".
		failed := f.At.Add(f.Elapsed)
		a := capabilities.Attempt{Number: f.Attempt, FirstAt: f.FirstAt, Kind: cl.Kind, RetryAfter: cl.RetryAfter.D()}
		if delay, ok := p.Next(a, failed, rnd); ok {
			nb = failed.Add(delay)
			if retry = f.Deadline.IsZero() || nb.Before(f.Deadline); !retry {
				nb, limit = time.Time{}, LimitExecutionTime
			}
		}
	}
	info := &state.ErrorInfo{Node: f.Node, StepIndex: f.Step, Classification: cl, Message: f.Message,
		Attempt: f.Attempt, At: f.At, Elapsed: f.Elapsed, Policy: p, Retry: retry, NotBefore: nb}
	if f.Step < 0 || s.Turn.Plan == nil || f.Step >= len(s.Turn.Plan.Steps) {
		info.StepIndex = -1
		return recordNode(s, f, info, limit), Outcome{Action: Recorded, Error: info}
	}
	info.Capability = f.Node
	plan := s.Turn.Plan
	ps := plan.Steps[f.Step]
	ps.Approved, ps.Grant = f.Approved, f.Grant
	result := &state.StepResult{StepIndex: f.Step, Capability: f.Node, TaskObjective: ps.TaskObjective,
		Attempt: f.Attempt, Duration: f.Elapsed, Error: f.Message, Severity: cl.Severity.String(), At: f.At.Add(f.Elapsed), Plan: plan.Number}
	if f.Recover && !retry && limit == "" && fallbackAllowed(cl) {
		if fb := nextFallback(ps, f.Fallbacks); fb != "" {
			ps.Fallback = fb
			ps.FallbacksTried = append(slices.Clip(ps.FallbacksTried), fb)
			ps.Attempts, ps.FirstAttemptAt, ps.NotBefore, ps.Error, ps.Recovered = 0, time.Time{}, time.Time{}, nil, false
			ps.Approved, ps.Grant = false, nil // an approval is for one capability; the fallback asks for its own
			return state.Update{NodeSteps: 1, Step: &state.StepUpdate{Plan: plan.Number, Index: f.Step, Step: ps, Result: result, ClearError: true}},
				Outcome{Action: Fallback, Fallback: fb}
		}
	}
	ps.Attempts, ps.FirstAttemptAt, ps.NotBefore, ps.Error = f.Attempt, f.FirstAt, nb, info
	if !retry && cl.Severity != capabilities.Replanning && cl.Severity != capabilities.Reclassification {
		ps.Status = state.StepFailed
	}
	return state.Update{NodeSteps: 1, LimitExceeded: limit, Step: &state.StepUpdate{Plan: plan.Number, Index: f.Step, Step: ps, Result: result, Error: info}},
		Outcome{Action: Recorded, Error: info}
}

// recordNode records the failure of an infrastructure node in the turn: its
// retry bookkeeping (Control.Retries), the current error, and the planning
// budget an invalid plan uses up.
func recordNode(s state.State, f Failure, info *state.ErrorInfo, limit string) state.Update {
	t := s.Turn
	t.Control.Retries = maps.Clone(t.Control.Retries)
	if t.Control.Retries == nil {
		t.Control.Retries = map[string]state.RetryState{}
	}
	t.Control.Retries[f.Node] = state.RetryState{Attempts: f.Attempt, FirstAt: f.FirstAt, NotBefore: info.NotBefore}
	t.Control.Error = info
	t.Control.Blocked = nil
	if f.Node == state.NodeOrchestrator && info.Classification.Severity == capabilities.Replanning {
		t.Control.PlansCreated++
	}
	return state.Update{Turn: &t, NodeSteps: 1, LimitExceeded: limit}
}

// fallbackAllowed reports whether a different capability might avoid the
// failure: not when the refusal or the limit would apply to it as well.
func fallbackAllowed(cl capabilities.Classification) bool {
	switch cl.Severity {
	case capabilities.Retriable, capabilities.Replanning, capabilities.Critical:
	default:
		return false
	}
	switch cl.Kind {
	case capabilities.KindWritesDisabled, capabilities.KindResourceExhausted, capabilities.KindRejected, capabilities.KindLimitViolation:
		return false
	}
	return true
}

// nextFallback returns the first of candidates the step has not tried.
func nextFallback(ps state.PlanStep, candidates []string) string {
	for _, fb := range candidates {
		if fb != ps.Capability && !slices.Contains(ps.FallbacksTried, fb) {
			return fb
		}
	}
	return ""
}

// NextAttempt returns the number of the attempt node is about to make (a
// plan step's when step >= 0) and when the episode's first attempt started
// (now for a first attempt). An infrastructure node's attempts start again
// whenever it is entered for another reason than retrying its own RETRIABLE
// failure (its first run, a recovery route): the episodes themselves are
// bounded by the budgets.
func NextAttempt(s state.State, node string, step int, now time.Time) (attempt int, firstAt time.Time) {
	var rs state.RetryState
	if step >= 0 {
		if p := s.Turn.Plan; p != nil && step < len(p.Steps) {
			rs = state.RetryState{Attempts: p.Steps[step].Attempts, FirstAt: p.Steps[step].FirstAttemptAt}
		}
	} else if e := CurrentError(s); e != nil && e.Node == node && e.Classification.Severity == capabilities.Retriable {
		rs = s.Turn.Control.Retries[node]
	}
	if rs.FirstAt.IsZero() {
		rs.FirstAt = now
	}
	return rs.Attempts + 1, rs.FirstAt
}

// RetryRand returns the random source of one retry decision, seeded from
// where it is taken (thread, turn, node, step, attempt), so a replay of the
// same failure computes the same delay.
func RetryRand(thread string, turn int, node string, step, attempt int) *rand.Rand {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%d\x00%s\x00%d\x00%d", thread, turn, node, step, attempt)
	s := h.Sum64()
	return rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
}
