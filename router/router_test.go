package router_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/state"
)

var (
	t0  = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cfg = router.Config{Capabilities: []string{"read", "write", "plot"}}
)

func st(capability string, status state.StepStatus, deps ...int) state.PlanStep {
	return state.PlanStep{PlannedStep: capabilities.PlannedStep{Capability: capability, ContextKey: capability}, Status: status, DependsOn: deps}
}

const (
	P = state.StepPending
	D = state.StepDone
	F = state.StepFailed
	S = state.StepSkipped
	R = state.StepRejected
)

// planned is a turn with task, selection and a plan of the given steps.
func planned(steps ...state.PlanStep) state.State {
	return state.State{Turn: state.Turn{Number: 1, Task: &state.Task{Text: "t"}, ActiveCapabilities: []string{"read"},
		Plan: &state.Plan{Number: 1, Steps: steps}, Control: state.Control{PlansCreated: 1}}}
}

func withErr(s state.State, e state.ErrorInfo) state.State {
	s.Turn.Control.Error = &e
	return s
}

func errInfo(node string, step int, sev capabilities.Severity, attempt int, retry bool) state.ErrorInfo {
	return state.ErrorInfo{Node: node, StepIndex: step, Attempt: attempt, Retry: retry, NotBefore: t0,
		Classification: capabilities.Classification{Severity: sev}, Policy: capabilities.RetryPolicy{MaxAttempts: 3}}
}

func TestDecide(t *testing.T) {
	mod := func(s state.State, f func(*state.State)) state.State { f(&s); return s }
	tests := []struct {
		name      string
		s         state.State
		cfg       router.Config
		next      []string
		cause     router.Cause
		limit     string
		notBefore time.Time
		steps     map[string]int
	}{
		{"done", mod(planned(), func(s *state.State) { s.Turn.Done = true }), cfg, []string{router.End}, router.CauseDone, "", time.Time{}, nil},
		{"done wins over an error", withErr(mod(planned(), func(s *state.State) { s.Turn.Done = true }), errInfo("read", 0, capabilities.Critical, 1, false)), cfg, []string{router.End}, router.CauseDone, "", time.Time{}, nil},
		{"a rejected step ends the plan in respond", planned(st("write", R), st("plot", P), st(state.NodeRespond, P, 0, 1)), cfg, []string{state.NodeRespond}, router.CauseRejected, "", time.Time{}, nil},
		{"a rejection wins over a sibling's error", withErr(planned(st("write", R), st("plot", F)), errInfo("plot", 1, capabilities.Critical, 1, false)), cfg, []string{state.NodeRespond}, router.CauseRejected, "", time.Time{}, nil},
		{"a rejection wins over the node-step limit", mod(planned(st("write", R)), func(s *state.State) { s.Turn.Control.NodeSteps = 100 }), cfg, []string{state.NodeRespond}, router.CauseRejected, "", time.Time{}, nil},
		{"done wins over a rejection", mod(planned(st("write", R)), func(s *state.State) { s.Turn.Done = true }), cfg, []string{router.End}, router.CauseDone, "", time.Time{}, nil},
		{"recorded limit", mod(planned(st("read", P)), func(s *state.State) { s.Turn.Control.LimitExceeded = router.LimitExecutionTime }), cfg, []string{state.NodeError}, router.CauseLimit, router.LimitExecutionTime, time.Time{}, nil},
		{"node steps", mod(planned(st("read", P)), func(s *state.State) { s.Turn.Control.NodeSteps = 100 }), cfg, []string{state.NodeError}, router.CauseLimit, router.LimitNodeSteps, time.Time{}, nil},
		{"tokens", mod(planned(st("read", P)), func(s *state.State) { s.Turn.Control.Tokens = 500 }), router.Config{Limits: router.Limits{MaxTokensPerTurn: 500}, Capabilities: cfg.Capabilities}, []string{state.NodeError}, router.CauseLimit, router.LimitTokens, time.Time{}, nil},
		{"tokens without a budget", mod(planned(st("read", P)), func(s *state.State) { s.Turn.Control.Tokens = 1e6 }), cfg, []string{"read"}, router.CauseSteps, "", time.Time{}, map[string]int{"read": 0}},
		{"limits before errors", withErr(mod(planned(), func(s *state.State) { s.Turn.Control.NodeSteps = 100 }), errInfo("read", 0, capabilities.Retriable, 1, true)), cfg, []string{state.NodeError}, router.CauseLimit, router.LimitNodeSteps, time.Time{}, nil},

		{"plan approval asked", mod(planned(st("read", P)), func(s *state.State) { s.Turn.Options.PlanApproval = true }), cfg, []string{state.NodePlanApproval}, router.CausePlanApproval, "", time.Time{}, nil},
		{"approved plan runs", mod(planned(st("read", P)), func(s *state.State) { s.Turn.Options.PlanApproval = true; s.Turn.Plan.Approved = true }), cfg, []string{"read"}, router.CauseSteps, "", time.Time{}, map[string]int{"read": 0}},
		{"errors before plan approval", withErr(mod(planned(st("read", P)), func(s *state.State) { s.Turn.Options.PlanApproval = true }), errInfo(state.NodeOrchestrator, -1, capabilities.Retriable, 1, true)), cfg, []string{state.NodeOrchestrator}, router.CauseRetry, "", t0, nil},

		{"retry an infrastructure node", withErr(planned(), errInfo(state.NodeOrchestrator, -1, capabilities.Retriable, 1, true)), cfg, []string{state.NodeOrchestrator}, router.CauseRetry, "", t0, nil},
		{"retry a step", withErr(planned(st("read", P)), errInfo("read", 0, capabilities.Retriable, 2, true)), cfg, []string{"read"}, router.CauseRetry, "", t0, map[string]int{"read": 0}},
		{"retry a step through its fallback", withErr(planned(func() state.PlanStep { s := st("read", P); s.Fallback = "plot"; return s }()), errInfo("plot", 0, capabilities.Retriable, 1, true)), cfg, []string{"plot"}, router.CauseRetry, "", t0, map[string]int{"plot": 0}},
		{"retries exhausted", withErr(planned(st("read", P)), errInfo("read", 0, capabilities.Retriable, 3, true)), cfg, []string{state.NodeError}, router.CauseRetriesExhausted, router.LimitAttempts, time.Time{}, nil},
		{"policy refused a retry", withErr(planned(st("read", P)), errInfo("read", 0, capabilities.Retriable, 1, false)), cfg, []string{state.NodeError}, router.CauseRetriesExhausted, "", time.Time{}, nil},
		{"retry of a step past the plan", withErr(planned(st("read", P)), errInfo("read", 5, capabilities.Retriable, 1, true)), cfg, []string{state.NodeError}, router.CauseCritical, "", time.Time{}, nil},
		{"retry of a non-node", withErr(planned(), errInfo("bogus", -1, capabilities.Retriable, 1, true)), cfg, []string{state.NodeError}, router.CauseCritical, "", time.Time{}, nil},
		{"a step error parked on the step", mod(planned(st("read", D), func() state.PlanStep {
			s := st("write", P)
			e := errInfo("write", 1, capabilities.Retriable, 1, true)
			s.Error = &e
			return s
		}()), func(*state.State) {}), cfg, []string{"write"}, router.CauseRetry, "", t0, map[string]int{"write": 1}},
		{"replan", withErr(planned(st("read", P)), errInfo("read", 0, capabilities.Replanning, 1, false)), cfg, []string{state.NodeOrchestrator}, router.CauseReplan, "", time.Time{}, nil},
		{"replanning budget spent", withErr(mod(planned(st("read", P)), func(s *state.State) { s.Turn.Control.PlansCreated = 2 }), errInfo("read", 0, capabilities.Replanning, 1, false)), cfg, []string{state.NodeError}, router.CausePlanningBudget, router.LimitPlanning, time.Time{}, nil},
		{"reclassify", withErr(planned(st("read", P)), errInfo("read", 0, capabilities.Reclassification, 1, false)), cfg, []string{state.NodeClassifier}, router.CauseReclassify, "", time.Time{}, nil},
		{"reclassification budget spent", withErr(mod(planned(st("read", P)), func(s *state.State) { s.Turn.Control.Reclassifications = 1 }), errInfo("read", 0, capabilities.Reclassification, 1, false)), cfg, []string{state.NodeError}, router.CauseReclassificationLimit, router.LimitReclassification, time.Time{}, nil},
		{"no reclassification allowed", withErr(planned(st("read", P)), errInfo("read", 0, capabilities.Reclassification, 1, false)), router.Config{Limits: router.Limits{MaxReclassifications: -1}, Capabilities: cfg.Capabilities}, []string{state.NodeError}, router.CauseReclassificationLimit, router.LimitReclassification, time.Time{}, nil},
		{"critical", withErr(planned(st("read", P)), errInfo("read", 0, capabilities.Critical, 1, false)), cfg, []string{state.NodeError}, router.CauseCritical, "", time.Time{}, nil},
		{"unset severity is critical", withErr(planned(st("read", P)), errInfo("read", 0, capabilities.SeverityUnset, 1, false)), cfg, []string{state.NodeError}, router.CauseCritical, "", time.Time{}, nil},
		{"fatal in the state", withErr(planned(st("read", P)), errInfo("read", 0, capabilities.Fatal, 1, false)), cfg, []string{state.NodeError}, router.CauseFatal, "", time.Time{}, nil},

		{"no task", state.State{}, cfg, []string{state.NodeTaskExtraction}, router.CauseNoTask, "", time.Time{}, nil},
		{"no capabilities", state.State{Turn: state.Turn{Task: &state.Task{}}}, cfg, []string{state.NodeClassifier}, router.CauseNoCapabilities, "", time.Time{}, nil},
		{"no plan", mod(planned(), func(s *state.State) { s.Turn.Plan = nil }), cfg, []string{state.NodeOrchestrator}, router.CauseNoPlan, "", time.Time{}, nil},
		{"no plan and no planning budget", mod(planned(), func(s *state.State) { s.Turn.Plan, s.Turn.Control.PlansCreated = nil, 2 }), cfg, []string{state.NodeError}, router.CausePlanningBudget, router.LimitPlanning, time.Time{}, nil},

		{"independent steps together", planned(st("read", P), st("plot", P), st("write", P, 0, 1), st(state.NodeRespond, P)), cfg, []string{"read", "plot"}, router.CauseSteps, "", time.Time{}, map[string]int{"read": 0, "plot": 1}},
		{"dependency waits", planned(st("read", D), st("plot", P), st("write", P, 0, 1), st(state.NodeRespond, P)), cfg, []string{"plot"}, router.CauseSteps, "", time.Time{}, map[string]int{"plot": 1}},
		{"skipped satisfies a dependency", planned(st("read", S), st("write", P, 0), st(state.NodeRespond, P)), cfg, []string{"write"}, router.CauseSteps, "", time.Time{}, map[string]int{"write": 1}},
		{"one step per capability at a time", planned(st("read", P), st("read", P), st(state.NodeRespond, P)), cfg, []string{"read"}, router.CauseSteps, "", time.Time{}, map[string]int{"read": 0}},
		{"bad dependency index waits for every earlier step", planned(st("read", P), st("plot", P, 7)), cfg, []string{"read"}, router.CauseSteps, "", time.Time{}, map[string]int{"read": 0}},
		{"terminal step waits for all earlier steps", planned(st("read", D), st("plot", P), st(state.NodeRespond, P)), cfg, []string{"plot"}, router.CauseSteps, "", time.Time{}, map[string]int{"plot": 1}},
		{"terminal step", planned(st("read", D), st(state.NodeRespond, P)), cfg, []string{state.NodeRespond}, router.CauseSteps, "", time.Time{}, map[string]int{state.NodeRespond: 1}},
		{"nothing runs past a mid-plan terminal step", planned(st("read", D), st(state.NodeClarify, P), st("write", P), st(state.NodeRespond, P)), cfg, []string{state.NodeClarify}, router.CauseSteps, "", time.Time{}, map[string]int{state.NodeClarify: 1}},
		{"terminal step done but no message", planned(st("read", D), st(state.NodeRespond, D)), cfg, []string{state.NodeError}, router.CauseTerminalNotDone, "", time.Time{}, nil},
		{"plan without a terminal step", planned(st("read", D)), cfg, []string{state.NodeRespond}, router.CausePlanFinished, "", time.Time{}, nil},
		{"empty plan", planned(), cfg, []string{state.NodeRespond}, router.CausePlanFinished, "", time.Time{}, nil},
		{"unknown capability", planned(st("hallucinated", P), st(state.NodeRespond, P)), cfg, []string{state.NodeError}, router.CauseUnknownCapability, "", time.Time{}, nil},
		{"failed step", planned(st("read", F), st(state.NodeRespond, P)), cfg, []string{state.NodeError}, router.CauseStepFailed, "", time.Time{}, nil},
		{"stuck on a failed dependency beyond a done step", planned(st("read", D), st("plot", P, 3), st("write", F)), cfg, []string{state.NodeError}, router.CauseStepFailed, "", time.Time{}, nil},
		{"a batch never exceeds the node-step room", mod(planned(st("read", P), st("plot", P), st("write", P)), func(s *state.State) { s.Turn.Control.NodeSteps = 98 }), cfg, []string{"read", "plot"}, router.CauseSteps, "", time.Time{}, map[string]int{"read": 0, "plot": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := json.Marshal(tc.s)
			d := router.Decide(tc.s, tc.cfg)
			after, _ := json.Marshal(tc.s)
			if string(before) != string(after) {
				t.Fatal("Decide changed the state")
			}
			if !slices.Equal(d.Next, tc.next) || d.Cause != tc.cause || d.Limit != tc.limit || !d.NotBefore.Equal(tc.notBefore) {
				t.Fatalf("got %v %s limit=%q at %v; want %v %s limit=%q at %v", d.Next, d.Cause, d.Limit, d.NotBefore, tc.next, tc.cause, tc.limit, tc.notBefore)
			}
			if fmt.Sprint(d.Steps) != fmt.Sprint(tc.steps) && !(len(d.Steps) == 0 && len(tc.steps) == 0) {
				t.Fatalf("steps %v, want %v", d.Steps, tc.steps)
			}
			if d2 := router.Decide(tc.s, tc.cfg); !reflect.DeepEqual(d, d2) {
				t.Fatalf("not deterministic: %v vs %v", d, d2)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c := router.Config{}.WithDefaults()
	if c.MaxPlanningAttempts != 2 || c.MaxReclassifications != 1 || c.MaxNodeSteps != 100 || c.MaxTokensPerTurn != 0 {
		t.Fatalf("%+v", c)
	}
	none := router.Config{Limits: router.Limits{MaxReclassifications: -1}}.WithDefaults().WithDefaults()
	if none.ReclassificationBudget() != 0 {
		t.Fatalf("negative reclassifications became %d", none.ReclassificationBudget())
	}
}

// Decide is a pure function of the state: here a step failed with a
// transient error and its policy allows another attempt at 12:00:02.
func ExampleDecide() {
	s := planned(st("read", state.StepPending), st(state.NodeRespond, state.StepPending))
	s.Turn.Control.Error = &state.ErrorInfo{Node: "read", StepIndex: 0, Attempt: 1, Retry: true,
		NotBefore:      time.Date(2026, 1, 1, 12, 0, 2, 0, time.UTC),
		Classification: capabilities.Classification{Severity: capabilities.Retriable},
		Policy:         capabilities.RetryPolicy{}.WithDefaults()}
	d := router.Decide(s, router.Config{Capabilities: []string{"read"}})
	fmt.Println(d.Next, d.Cause, d.NotBefore.Format(time.TimeOnly))

	s.Turn.Control.Error.Attempt = 3 // the policy's max_attempts
	d = router.Decide(s, router.Config{Capabilities: []string{"read"}})
	fmt.Println(d.Next, d.Cause, d.Limit)
	// Output:
	// [read] retry 12:00:02
	// [error] retries_exhausted max_attempts
}

func BenchmarkDecide(b *testing.B) {
	steps := []state.PlanStep{st("read", D), st("plot", P), st("write", P, 0, 1), st("read", P, 2), st(state.NodeRespond, P)}
	s := planned(steps...)
	for b.Loop() {
		router.Decide(s, cfg)
	}
}
