package router_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/state"
)

// exact is a policy without jitter: delays 1 s, 2 s, ….
var exact = capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Second, Jitter: capabilities.JitterNone}

func cls(sev capabilities.Severity, kind string) capabilities.Classification {
	return capabilities.Classification{Severity: sev, Kind: kind, UserMessage: "it failed"}
}

// stepFail is attempt n of step 0 ("read") of planned(...), started at t0.
func stepFail(cl capabilities.Classification, attempt int) router.Failure {
	return router.Failure{Node: "read", Step: 0, Attempt: attempt, FirstAt: t0, At: t0, Elapsed: 100 * time.Millisecond,
		Classification: cl, Message: "boom", Policy: exact, Recover: true, Deadline: t0.Add(time.Minute)}
}

func nodeFail(node string, cl capabilities.Classification, attempt int) router.Failure {
	f := stepFail(cl, attempt)
	f.Node, f.Step = node, -1
	return f
}

// record applies Record's update to s and routes the result: the writing
// side and the reading side together.
func record(t *testing.T, s state.State, f router.Failure) (state.State, router.Outcome, router.Decision) {
	t.Helper()
	before, _ := json.Marshal(s)
	u, out := router.Record(s, f, t0.Add(f.Elapsed), router.RetryRand("th", 1, f.Node, f.Step, f.Attempt))
	if after, _ := json.Marshal(s); string(before) != string(after) {
		t.Fatal("Record changed its input state")
	}
	if out.Action == router.Abort || out.Action == router.Escalate {
		if b, _ := json.Marshal(u); string(b) != "{}" {
			t.Fatalf("%s recorded %s; it must record nothing", out.Action, b)
		}
		return s, out, router.Decision{}
	}
	ns, err := state.Apply(s, u)
	if err != nil {
		t.Fatal(err)
	}
	if ns.Turn.Control.NodeSteps != s.Turn.Control.NodeSteps+1 {
		t.Fatalf("node steps %d, want the attempt counted", ns.Turn.Control.NodeSteps)
	}
	return ns, out, router.Decide(ns, cfg)
}

func wantRoute(t *testing.T, d router.Decision, cause router.Cause, limit string, next ...string) {
	t.Helper()
	if d.Cause != cause || d.Limit != limit || !slices.Equal(d.Next, next) {
		t.Fatalf("routed %v %s limit=%q; want %v %s limit=%q", d.Next, d.Cause, d.Limit, next, cause, limit)
	}
}

func TestRecordStepRetry(t *testing.T) {
	s := planned(st("read", P), st(state.NodeRespond, P))
	ns, out, d := record(t, s, stepFail(cls(capabilities.Retriable, capabilities.KindTimeout), 1))
	wantRoute(t, d, router.CauseRetry, "", "read")
	if out.Action != router.Recorded || out.Error == nil || !out.Error.Retry || !out.Error.NotBefore.Equal(t0.Add(1100*time.Millisecond)) {
		t.Fatalf("outcome %s %+v; want a retry at t0+1.1s (the attempt's end, after 100ms, + the delay)", out.Action, out.Error)
	}
	if !d.NotBefore.Equal(t0.Add(1100*time.Millisecond)) || d.Steps["read"] != 0 {
		t.Fatalf("decision %+v; want the step again at t0+1.1s", d)
	}
	ps := ns.Turn.Plan.Steps[0]
	if ps.Status != P || ps.Attempts != 1 || !ps.FirstAttemptAt.Equal(t0) || ps.Error == nil || ps.Error.Capability != "read" {
		t.Fatalf("step %+v", ps)
	}
	if r := ns.Turn.Results; len(r) != 1 || r[0].Success || r[0].Severity != "retriable" || !r[0].At.Equal(t0.Add(100*time.Millisecond)) {
		t.Fatalf("results %+v", r)
	}
	// The next attempt is number 2 of the same episode.
	if n, first := router.NextAttempt(ns, "read", 0, t0.Add(time.Hour)); n != 2 || !first.Equal(t0) {
		t.Fatalf("next attempt %d from %v", n, first)
	}
	// The second failure waits twice as long; the third has no attempt left.
	ns, _, d = record(t, ns, func() router.Failure {
		f := stepFail(cls(capabilities.Retriable, capabilities.KindTimeout), 2)
		f.At = t0.Add(time.Second)
		return f
	}())
	wantRoute(t, d, router.CauseRetry, "", "read")
	if !d.NotBefore.Equal(t0.Add(3100 * time.Millisecond)) {
		t.Fatalf("second retry at %v, want t0+3.1s (its end at t0+1.1s + 2s)", d.NotBefore)
	}
	ns, out, d = record(t, ns, stepFail(cls(capabilities.Retriable, capabilities.KindTimeout), 3))
	wantRoute(t, d, router.CauseRetriesExhausted, router.LimitAttempts, state.NodeError)
	if out.Error.Retry || ns.Turn.Plan.Steps[0].Status != F {
		t.Fatalf("exhausted: %+v, step %s", out.Error, ns.Turn.Plan.Steps[0].Status)
	}
}

func TestRecordRetryKeepsTheApproval(t *testing.T) {
	f := stepFail(cls(capabilities.Retriable, capabilities.KindConnection), 1)
	f.Approved, f.Grant = true, &state.Grant{ApprovalID: "step:1:1:0:read", Digest: "d"}
	ns, _, _ := record(t, planned(st("read", P)), f)
	if ps := ns.Turn.Plan.Steps[0]; !ps.Approved || ps.Grant == nil || ps.Grant.Digest != "d" {
		t.Fatalf("step %+v; a retry runs under the approval it was given", ps)
	}
}

func TestRecordRetryPastTheDeadline(t *testing.T) {
	f := stepFail(cls(capabilities.Retriable, capabilities.KindTimeout), 1)
	f.Deadline = t0.Add(time.Second) // the retry would start exactly then
	f.Fallbacks = []string{"plot"}
	ns, out, d := record(t, planned(st("read", P)), f)
	wantRoute(t, d, router.CauseLimit, router.LimitExecutionTime, state.NodeError)
	if out.Action != router.Recorded || out.Error.Retry || ns.Turn.Plan.Steps[0].Fallback != "" {
		t.Fatalf("%s %+v; no retry and no fallback once the turn is out of time", out.Action, out.Error)
	}
}

func TestRecordJitterIsReplayable(t *testing.T) {
	f := stepFail(cls(capabilities.Retriable, capabilities.KindTimeout), 1)
	f.Policy.Jitter = capabilities.JitterFull
	var seen []time.Time
	for range 2 {
		_, out := router.Record(planned(st("read", P)), f, t0, router.RetryRand("th", 1, "read", 0, 1))
		if nb := out.Error.NotBefore; nb.Before(t0) || nb.After(t0.Add(time.Second)) {
			t.Fatalf("full jitter gave %v, want within [t0, t0+1s]", nb)
		}
		seen = append(seen, out.Error.NotBefore)
	}
	if !seen[0].Equal(seen[1]) {
		t.Fatalf("the same failure drew %v and %v; a replay must compute the same delay", seen[0], seen[1])
	}
}

func TestRecordFallback(t *testing.T) {
	s := planned(st("read", P), st(state.NodeRespond, P))
	f := stepFail(cls(capabilities.Retriable, capabilities.KindTimeout), 3) // no attempt left
	f.Fallbacks = []string{"read", "plot", "write"}                         // the step's own capability is never its fallback
	f.Approved, f.Grant = true, &state.Grant{Digest: "d"}
	ns, out, d := record(t, s, f)
	if out.Action != router.Fallback || out.Fallback != "plot" {
		t.Fatalf("outcome %s %q, want the fallback plot", out.Action, out.Fallback)
	}
	wantRoute(t, d, router.CauseSteps, "", "plot")
	ps := ns.Turn.Plan.Steps[0]
	if ps.Effective() != "plot" || ps.Attempts != 0 || ps.Error != nil || ps.Approved || ps.Grant != nil || !slices.Equal(ps.FallbacksTried, []string{"plot"}) {
		t.Fatalf("step %+v; the fallback starts afresh and asks for its own approval", ps)
	}
	// The fallback fails too: the next one, then the failure's own route.
	f = stepFail(cls(capabilities.Replanning, capabilities.KindMissingInput), 1)
	f.Node, f.Fallbacks = "plot", []string{"plot", "write"}
	ns, out, _ = record(t, ns, f)
	if out.Fallback != "write" {
		t.Fatalf("second fallback %q", out.Fallback)
	}
	f.Node = "write"
	_, out, d = record(t, ns, f)
	wantRoute(t, d, router.CauseReplan, "", state.NodeOrchestrator)
	if out.Action != router.Recorded {
		t.Fatalf("no fallback left: %s", out.Action)
	}
}

func TestRecordNoFallbackFor(t *testing.T) {
	for _, tc := range []struct {
		name string
		cl   capabilities.Classification
	}{
		{"writes disabled", cls(capabilities.Critical, capabilities.KindWritesDisabled)},
		{"limit violation", cls(capabilities.Critical, capabilities.KindLimitViolation)},
		{"rejected", cls(capabilities.Critical, capabilities.KindRejected)},
		{"reclassification", cls(capabilities.Reclassification, capabilities.KindInvalidInput)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := stepFail(tc.cl, 1)
			f.Fallbacks = []string{"plot"}
			if _, out, _ := record(t, planned(st("read", P)), f); out.Action != router.Recorded {
				t.Fatalf("%s: %s; a different capability would not avoid it", tc.name, out.Action)
			}
		})
	}
	// Recovery not allowed (a refusal): no fallback either.
	f := stepFail(cls(capabilities.Critical, "not_allowed"), 1)
	f.Fallbacks, f.Recover = []string{"plot"}, false
	_, out, d := record(t, planned(st("read", P)), f)
	if out.Action != router.Recorded {
		t.Fatalf("refusal: %s", out.Action)
	}
	wantRoute(t, d, router.CauseCritical, "", state.NodeError)
}

func TestRecordFatalAndEscalation(t *testing.T) {
	s := planned(st("read", P))
	if _, out, _ := record(t, s, stepFail(cls(capabilities.Fatal, "interlock"), 1)); out.Action != router.Abort {
		t.Fatalf("FATAL: %s, want abort", out.Action)
	}
	if _, out, _ := record(t, s, nodeFail(state.NodeClassifier, cls(capabilities.Critical, capabilities.KindResourceExhausted), 1)); out.Action != router.Escalate {
		t.Fatalf("resource exhausted: %s, want escalate", out.Action)
	}
	// A human gave up on the blocked operation: recorded, never escalated again.
	f := nodeFail(state.NodeClassifier, cls(capabilities.Critical, capabilities.KindResourceExhausted), 1)
	f.Recover = false
	_, out, d := record(t, s, f)
	if out.Action != router.Recorded {
		t.Fatalf("gave up: %s", out.Action)
	}
	wantRoute(t, d, router.CauseCritical, "", state.NodeError)
	// Out of time: the limit wins over FATAL and over a retry.
	for _, sev := range []capabilities.Severity{capabilities.Fatal, capabilities.Retriable} {
		f = stepFail(cls(sev, capabilities.KindTimeout), 1)
		f.Recover, f.Limit = false, router.LimitExecutionTime
		ns, out, d := record(t, s, f)
		wantRoute(t, d, router.CauseLimit, router.LimitExecutionTime, state.NodeError)
		if out.Action != router.Recorded || out.Error.Retry || ns.Turn.Plan.Steps[0].Status != F {
			t.Fatalf("%s out of time: %s %+v", sev, out.Action, out.Error)
		}
	}
}

func TestRecordInfrastructureNode(t *testing.T) {
	s := planned()
	s.Turn.Plan, s.Turn.Control.PlansCreated = nil, 0 // the first plan is being made
	ns, out, d := record(t, s, nodeFail(state.NodeOrchestrator, cls(capabilities.Retriable, capabilities.KindServerError), 1))
	wantRoute(t, d, router.CauseRetry, "", state.NodeOrchestrator)
	if rs := ns.Turn.Control.Retries[state.NodeOrchestrator]; rs.Attempts != 1 || !rs.NotBefore.Equal(out.Error.NotBefore) || ns.Turn.Control.Error != out.Error {
		t.Fatalf("retries %+v, error %+v", ns.Turn.Control.Retries, ns.Turn.Control.Error)
	}
	if n, _ := router.NextAttempt(ns, state.NodeOrchestrator, -1, t0); n != 2 {
		t.Fatalf("retrying its own failure is attempt %d, want 2", n)
	}
	if n, _ := router.NextAttempt(ns, state.NodeClassifier, -1, t0); n != 1 {
		t.Fatalf("another node's attempt %d, want 1 (a fresh episode)", n)
	}
	// An invalid plan uses up a planning attempt, so repeated invalid plans
	// end in the error node instead of looping.
	ns, _, d = record(t, s, nodeFail(state.NodeOrchestrator, cls(capabilities.Replanning, capabilities.KindInvalidInput), 1))
	wantRoute(t, d, router.CauseReplan, "", state.NodeOrchestrator)
	ns, _, d = record(t, ns, nodeFail(state.NodeOrchestrator, cls(capabilities.Replanning, capabilities.KindInvalidInput), 1))
	wantRoute(t, d, router.CausePlanningBudget, router.LimitPlanning, state.NodeError)
	if ns.Turn.Control.PlansCreated != 2 {
		t.Fatalf("plans %d", ns.Turn.Control.PlansCreated)
	}
	// A new episode of the node (entered for another reason) starts at attempt 1.
	ns.Turn.Control.Error = nil
	if n, first := router.NextAttempt(ns, state.NodeOrchestrator, -1, t0.Add(time.Hour)); n != 1 || !first.Equal(t0.Add(time.Hour)) {
		t.Fatalf("fresh episode: attempt %d from %v", n, first)
	}
}

// A capability's read timed out and its policy allows another attempt: the
// failure is recorded in the state, and the router, reading it, runs the
// step again at its not-before time.
func ExampleRecord() {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	s := state.State{Turn: state.Turn{Number: 1, Task: &state.Task{Text: "read the beam current"}, ActiveCapabilities: []string{"read"},
		Plan: &state.Plan{Number: 1, Steps: []state.PlanStep{{PlannedStep: capabilities.PlannedStep{Capability: "read"}, Status: state.StepPending}}}}}
	f := router.Failure{Node: "read", Step: 0, Attempt: 1, FirstAt: t0, At: t0, Recover: true,
		Classification: capabilities.Classification{Severity: capabilities.Retriable, Kind: capabilities.KindTimeout},
		Policy:         capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: 2 * time.Second, Jitter: capabilities.JitterNone}}
	u, out := router.Record(s, f, t0, router.RetryRand("thread", 1, "read", 0, 1))
	s, _ = state.Apply(s, u)
	d := router.Decide(s, router.Config{Capabilities: []string{"read"}})
	fmt.Println(out.Action, d.Next, d.Cause, d.NotBefore.Format(time.TimeOnly))
	// Output:
	// recorded [read] retry 12:00:02
}
