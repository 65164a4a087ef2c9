package capabilities_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/state"
)

// A capability is a Definition: name, description, context types, and Run.
// The rest is optional: without Classify and Retry the default classifier
// and the application's retry policy apply. An application that wants the
// registry itself (to share it, or to declare context types no capability
// provides) gives it to the agent instead of the list.
func ExampleDefine() {
	readPV := capabilities.Define(capabilities.Definition{
		Name:        "read_pv",
		Description: "Read the current value of a control-system channel",
		Provides:    []string{"PV_VALUE"},
		Requires:    []capabilities.Requirement{{Type: "CHANNEL_ADDRESSES"}},
		Run: func(ctx context.Context, step capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("PV_VALUE", 401.5, "SR:CURRENT = 401.5 mA"), nil
		},
		Retry: capabilities.RetryPolicy{MaxAttempts: 2, InitialInterval: 500 * time.Millisecond},
	})
	findChannels := capabilities.Define(capabilities.Definition{
		Name: "find_channels", Description: "Find channel addresses from a description",
		Provides: []string{"CHANNEL_ADDRESSES"},
		Run: func(ctx context.Context, step capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("CHANNEL_ADDRESSES", []string{"SR:CURRENT"}, "1 channel"), nil
		},
	})
	reg := capabilities.NewRegistry()
	if err := reg.Register(readPV, findChannels); err != nil {
		fmt.Println(err)
		return
	}
	if err := reg.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(reg.Overview())
	// The agent plans find_channels before read_pv, which requires its result.
	a, err := agent.New(agent.Config{Registry: reg})
	if err != nil {
		fmt.Println(err)
		return
	}
	ask(a, "pv", "What is the current value of the channel for the beam current?")
	// Output:
	// • read_pv: Read the current value of a control-system channel
	// • find_channels: Find channel addresses from a description
	// answer: (Offline mode: no language model was used; this answer is assembled from the capability results.)
	//
	// Results for: What is the current value of the channel for the beam current?
	//
	// • 1 channel
	// • SR:CURRENT = 401.5 mA
	// done: answered
}

// A custom classification: a capability knows its own failures best. A
// tripped interlock is no glitch to retry: Classify makes it FATAL, and the
// turn ends at once with the capability's message to the user. Errors it
// leaves unset go to the default classifier.
func ExampleDefinition_classify() {
	readVacuum := capabilities.Define(capabilities.Definition{
		Name: "read_vacuum", Description: "Read the vacuum pressure of a storage ring sector", Provides: []string{"VACUUM"},
		Run: func(ctx context.Context, step capabilities.Step) (capabilities.Output, error) {
			return capabilities.Output{}, fmt.Errorf("gauge SR:VAC:G3: %w", errInterlock)
		},
		Classify: func(err error, ec capabilities.ErrorContext) capabilities.Classification {
			if errors.Is(err, errInterlock) {
				return capabilities.Classification{Severity: capabilities.Fatal, Kind: capabilities.KindLimitViolation,
					UserMessage: "the vacuum interlock of sector 3 is tripped: call the vacuum expert"}
			}
			return capabilities.Classification{} // unset: the default classifier decides
		},
	})

	a, err := agent.New(agent.Config{Capabilities: []capabilities.Capability{readVacuum}})
	if err != nil {
		fmt.Println(err)
		return
	}
	ask(a, "vacuum", "What is the vacuum pressure of storage ring sector 3?")
	cl := capabilities.Classify(readVacuum, errors.New("gauge timeout"), capabilities.ErrorContext{Capability: "read_vacuum"})
	fmt.Println("another error:", cl.Severity, cl.Kind)
	// Output:
	// fatal: read_vacuum - the vacuum interlock of sector 3 is tripped: call the vacuum expert
	// another error: critical unknown
}

var errInterlock = errors.New("interlock tripped")

// Next is pure: the attempt that failed, the time and a random source give
// the delay before the next attempt, or ok=false when the policy is spent.
func ExampleRetryPolicy_Next() {
	p := capabilities.RetryPolicy{MaxAttempts: 4, InitialInterval: time.Second, Jitter: capabilities.JitterNone}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for attempt := 1; ; attempt++ {
		d, ok := p.Next(capabilities.Attempt{Number: attempt}, now, rand.New(rand.NewPCG(1, 2)))
		if !ok {
			fmt.Printf("attempt %d failed: give up\n", attempt)
			break
		}
		fmt.Printf("attempt %d failed: retry in %v\n", attempt, d)
	}
	// A server's Retry-After wins over the computed delay.
	d, _ := p.Next(capabilities.Attempt{Number: 1, RetryAfter: 20 * time.Second}, now, nil)
	fmt.Println("with Retry-After:", d)
	// Output:
	// attempt 1 failed: retry in 1s
	// attempt 2 failed: retry in 2s
	// attempt 3 failed: retry in 4s
	// attempt 4 failed: give up
	// with Retry-After: 20s
}

func ExampleDefaultClassify() {
	for _, err := range []error{
		fmt.Errorf("archiver: %w", &capabilities.StatusError{Code: 503, Delay: 2 * time.Second}),
		fmt.Errorf("read: %w", context.DeadlineExceeded),
		fmt.Errorf("write: %w", capabilities.ErrWritesDisabled),
		errors.New("unexpected reply"),
	} {
		cl := capabilities.DefaultClassify(err)
		fmt.Println(cl.Severity, cl.Kind, cl.RetryAfter)
	}
	// Output:
	// retriable server_error 2s
	// retriable timeout 0s
	// critical writes_disabled 0s
	// critical unknown 0s
}

// A capability returns artifacts beside its context data: here the
// archived history of two channels as a time series, and their last values
// as a table. The agent checks them (Validate), gives them ids and sends
// them to every frontend.
func ExampleOutput_With() {
	start := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	cav1 := capabilities.Series{Name: "SR:RF:CAV1:VOLT", Units: "kV"}
	cav2 := capabilities.Series{Name: "SR:RF:CAV2:VOLT", Units: "kV"}
	for i, v := range []float64{601.8, 601.6, 601.4} {
		cav1.Add(start.Add(time.Duration(i)*time.Minute), v)
		cav2.Add(start.Add(time.Duration(i)*time.Minute), v-1)
	}
	out := capabilities.Result("ARCHIVER_DATA", map[string]int{"samples": 3}, "3 samples of 2 channels").With(
		capabilities.NewTimeSeries("RF cavity voltage, last 3 minutes", cav1, cav2),
		capabilities.NewTable("Last values",
			[]capabilities.Column{{Name: "channel"}, {Name: "last", Units: "kV"}},
			[]any{cav1.Name, 601.4}, []any{cav2.Name, 600.4}),
	)
	for _, a := range out.Artifacts {
		fmt.Println(a.Kind, a.Title, a.Validate())
	}
	b, _ := json.Marshal(out.Artifacts[0].TimeSeries.Series[0])
	fmt.Println(string(b))
	// A mistake is named:
	bad := capabilities.NewTimeSeries("", capabilities.Series{Name: "SR:X", TimesMs: []int64{1, 2}, Values: []float64{4.8}})
	fmt.Println(bad.Validate())
	// Output:
	// timeseries RF cavity voltage, last 3 minutes <nil>
	// table Last values <nil>
	// {"name":"SR:RF:CAV1:VOLT","units":"kV","times_ms":[1795255200000,1795255260000,1795255320000],"values":[601.8,601.6,601.4]}
	// invalid artifact: timeseries series "SR:X" has 2 times and 1 values
}

// Series.Add takes a sample's time and value (docs/writing-capabilities.md,
// "Artifacts"); the series keeps the time as Unix milliseconds.
func ExampleSeries_Add() {
	s := capabilities.Series{Name: "SR:DCCT:CURRENT", Units: "mA"}
	s.Add(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), 500.12)
	fmt.Println(s.TimesMs[0], s.Values[0], s.Time(0).Format(time.RFC3339))
	// Output: 1795262400000 500.12 2026-11-21T12:00:00Z
}

// device stands in for a control system: a magnet's setpoint, read and
// written; its server answers 503 (busy) to the first busy requests.
var device = &fakeDevice{values: map[string]float64{"Q1": 92, "Q2": 87.5}}

type fakeDevice struct {
	values map[string]float64
	busy   atomic.Int32
}

func (d *fakeDevice) Read(_ context.Context, name string) (float64, error) {
	if d.busy.Add(-1) >= 0 {
		return 0, &capabilities.StatusError{Code: 503}
	}
	if v, ok := d.values[name]; ok {
		return v, nil
	}
	return 0, capabilities.NewError(capabilities.Critical, capabilities.KindNotFound, "there is no magnet "+name, nil)
}

func (d *fakeDevice) Write(_ context.Context, name string, v float64) error {
	d.values[name] = v
	return nil
}

// planner is a scripted model whose planner answers with the plans, in
// order, as a chat model replies (prose around a fenced block); the other
// roles run offline.
func planner(plans ...string) *llmtest.Model {
	replies := make([]llmtest.Reply, len(plans))
	for i, p := range plans {
		replies[i] = llmtest.Text("Here is the plan:\n```json\n" + p + "\n```")
	}
	return llmtest.New().Script(llm.RoleOrchestrator, replies...).Only(llm.RoleOrchestrator)
}

// oneStep is a plan of one step of capability with its objective and
// parameters, then the answer.
func oneStep(capability, objective, parameters string) string {
	return `{"steps": [{"context_key": "result", "capability": "` + capability + `", "task_objective": "` + objective + `", "parameters": ` + parameters + `},
	 {"context_key": "answer", "capability": "respond", "task_objective": "answer"}]}`
}

// ask runs one turn on the compiled agent and prints what the user sees:
// the retries, the answer or the question asked, and how the turn ended.
func ask(a *agent.Agent, thread, input string) {
	for ev, err := range a.Run(context.Background(), agent.TurnRequest{Thread: thread, Input: input}) {
		show(ev, err)
	}
}

func show(ev agent.Event, err error) {
	var fatal *agent.FatalError
	switch {
	case errors.As(err, &fatal):
		fmt.Printf("fatal: %s - %s\n", fatal.Capability, fatal.Classification.UserMessage)
	case err != nil:
		fmt.Println("error:", err)
	case ev.Type == agent.EventRetry:
		fmt.Printf("retry: %s attempt %d of %d failed (%s)\n", ev.Retry.Node, ev.Retry.Attempt, ev.Retry.Max, ev.Retry.Reason)
	case ev.Type == agent.EventApprovalRequired:
		fmt.Println("approve?", ev.Approval.Summary)
		for _, r := range ev.Approval.Before {
			fmt.Printf("  %s is now %v %s\n", r.Target, r.Value, r.Unit)
		}
	case ev.Type == agent.EventMessage:
		fmt.Printf("%s: %s\n", ev.Message.Kind, ev.Message.Content)
	case ev.Type == agent.EventDone:
		fmt.Println("done:", ev.Status)
	}
}

// A read capability with a retry policy (docs/writing-capabilities.md, "A
// read capability in a dozen lines"): the parameters are a struct (the
// planner is shown its JSON schema, and a step's parameters are checked
// against it before the function runs), the result a typed context value
// under a key declared once.
func ExampleNew_readCapability() {
	var Setpoint = capabilities.Key[float64]("MAGNET_SETPOINT")

	type SetpointArgs struct {
		Magnet string `json:"magnet" jsonschema:"the magnet's name, e.g. Q1"`
	}

	readSetpoint := capabilities.New(capabilities.Definition{
		Name:        "magnet_setpoint",
		Description: "Read the present setpoint of a magnet in amperes.",
		Retry:       capabilities.RetryPolicy{MaxAttempts: 4, InitialInterval: 200 * time.Millisecond},
	}, Setpoint, func(ctx context.Context, step capabilities.Step, a SetpointArgs) (float64, string, error) {
		v, err := device.Read(ctx, a.Magnet)
		return v, fmt.Sprintf("%s setpoint: %.1f A", a.Magnet, v), err
	})

	// On the compiled agent: the planner writes the step's parameters, and
	// the device's busy answer (503) is retried by the capability's policy.
	device.busy.Store(1)
	a, err := agent.New(agent.Config{Capabilities: []capabilities.Capability{readSetpoint},
		Models: planner(oneStep("magnet_setpoint", "read the setpoint of Q1", `{"magnet": "Q1"}`))})
	if err != nil {
		fmt.Println(err)
		return
	}
	ask(a, "read", "What is the setpoint of magnet Q1?")

	// What the planner is shown, and a step as it plans one.
	guide := readSetpoint.(capabilities.OrchestratorGuideProvider).OrchestratorGuide()
	fmt.Println(string(guide.Parameters))
	step := capabilities.Step{PlannedStep: capabilities.PlannedStep{Parameters: map[string]any{"magnet": "Q1"}}}
	out, err := readSetpoint.Execute(context.Background(), step)
	fmt.Println(out.Values[0].Type, out.Values[0].Value, "-", out.Values[0].Summary, err)
	// A consumer reads the value with the same key.
	entry := capabilities.ContextEntry{Type: "MAGNET_SETPOINT", Key: "q1", Value: json.RawMessage(`92`)}
	v, _ := Setpoint.Input(capabilities.Step{Resolved: []capabilities.ContextEntry{entry}})
	fmt.Println(v + 1)
	// Parameters that do not fit the struct never reach the function.
	step.Parameters = map[string]any{"name": "Q1"}
	_, err = readSetpoint.Execute(context.Background(), step)
	fmt.Println(capabilities.Classify(readSetpoint, err, capabilities.ErrorContext{}).Severity, "-", err)
	// Output:
	// retry: magnet_setpoint attempt 1 of 4 failed (a service is temporarily unavailable)
	// answer: (Offline mode: no language model was used; this answer is assembled from the capability results.)
	//
	// Results for: What is the setpoint of magnet Q1?
	//
	// • Q1 setpoint: 92.0 A
	//
	// Notes:
	// • magnet_setpoint succeeded after 2 attempts (recovered from a transient failure).
	// done: answered
	// {"additionalProperties":false,"properties":{"magnet":{"description":"the magnet's name, e.g. Q1","type":"string"}},"required":["magnet"],"type":"object"}
	// MAGNET_SETPOINT 92 - Q1 setpoint: 92.0 A <nil>
	// 93
	// replanning - The step's parameters are wrong: there is no parameter "name" (the parameters are magnet); parameter "magnet" is missing (a string: the magnet's name, e.g. Q1).
}

// Fallbacks: when a capability fails for good (its retries spent, or
// REPLANNING or CRITICAL), the agent tries the capabilities it names, in
// order, before replanning; they provide the same context types.
func ExampleDefinition_fallbacks() {
	primary := capabilities.Define(capabilities.Definition{
		Name: "primary_source", Description: "Read the beam energy from the primary source.", Provides: []string{"ENERGY"},
		Fallbacks: []string{"backup_source"},
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Output{}, capabilities.NewError(capabilities.Critical, capabilities.KindConnection, "the primary source is offline", nil)
		},
	})
	backup := capabilities.Define(capabilities.Definition{
		Name: "backup_source", Description: "Read the beam energy from the backup source.", Provides: []string{"ENERGY"},
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("ENERGY", 3.0, "beam energy 3.0 GeV (backup source)"), nil
		},
	})

	a, err := agent.New(agent.Config{Capabilities: []capabilities.Capability{primary, backup},
		Models: planner(`{"steps": [{"context_key": "energy", "capability": "primary_source", "task_objective": "read the beam energy"},
		 {"context_key": "answer", "capability": "respond", "task_objective": "answer"}]}`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	ask(a, "energy", "What is the beam energy?")
	// A fallback that is not registered is reported, naming the capability.
	_, err = agent.New(agent.Config{Capabilities: []capabilities.Capability{primary}})
	fmt.Println(err)
	// Output:
	// answer: (Offline mode: no language model was used; this answer is assembled from the capability results.)
	//
	// Results for: What is the beam energy?
	//
	// • beam energy 3.0 GeV (backup source)
	//
	// Notes:
	// • primary_source failed; the result comes from the fallback backup_source.
	// done: answered
	// agent: config Capabilities: capability "primary_source": fallback "backup_source" is not registered
}

// A write with approval: SideEffects makes every step wait for a human's
// approval (whatever the approval mode), and Action describes the change
// before it runs, reading the same typed parameters as the function. Its
// Summary is the one summary of the side effect: the human approves it and
// the audit log records it. The write runs once, after the answer.
func ExampleDefinition_sideEffects() {
	var Written = capabilities.Key[float64]("MAGNET_WRITTEN")

	type SetArgs struct {
		Magnet string  `json:"magnet" jsonschema:"the magnet's name, e.g. Q1"`
		Value  float64 `json:"value" jsonschema:"the new setpoint in amperes"`
	}

	setSetpoint := capabilities.New(capabilities.Definition{
		Name: "set_magnet_setpoint", Description: "Set a magnet's setpoint to a value the user gives.", SideEffects: true,
		Action: func(step capabilities.Step) (capabilities.Action, error) {
			a, err := capabilities.Params[SetArgs](step)
			return capabilities.Action{Summary: fmt.Sprintf("set %s to %.2f A", a.Magnet, a.Value),
				Changes: []capabilities.Change{{Target: a.Magnet, Value: a.Value, Unit: "A", Tolerance: 0.05}}}, err
		},
	}, Written, func(ctx context.Context, step capabilities.Step, a SetArgs) (float64, string, error) {
		return a.Value, fmt.Sprintf("%s set to %.2f A", a.Magnet, a.Value), device.Write(ctx, a.Magnet, a.Value)
	})

	a, err := agent.New(agent.Config{Capabilities: []capabilities.Capability{setSetpoint},
		Models: planner(oneStep("set_magnet_setpoint", "set Q2 to 90 A", `{"magnet": "Q2", "value": 90}`)), Options: state.Options{WritesEnabled: true}})
	if err != nil {
		fmt.Println(err)
		return
	}
	ask(a, "write", "Set magnet Q2 to 90 A")
	fmt.Println("Q2 before the answer:", device.values["Q2"])
	s, _, _ := a.State(context.Background(), "write")
	for ev, err := range a.Resume(context.Background(), "write", agent.Answer{ApprovalID: s.Turn.PendingApproval.ID, Text: "yes"}) {
		show(ev, err)
	}
	fmt.Println("Q2 after:", device.values["Q2"])

	// Approval beside SideEffects is refused: there is one summary.
	both := capabilities.Define(capabilities.Definition{Name: "set_twice", Description: "d", SideEffects: true,
		Approval: func(capabilities.Step) (bool, string) { return true, "other words" },
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Output{}, nil
		}})
	fmt.Println(capabilities.NewRegistry().Register(both))
	// Output:
	// approve? set Q2 to 90.00 A
	// done: interrupted
	// Q2 before the answer: 87.5
	// answer: (Offline mode: no language model was used; this answer is assembled from the capability results.)
	//
	// Results for: Set magnet Q2 to 90 A
	//
	// • Q2 set to 90.00 A
	// done: answered
	// Q2 after: 90
	// capability "set_twice": has SideEffects and Approval: a side effect is always approved, with the Action's Summary (leave Approval out)
}

// A write that reads its target back: the approval shows the value before
// ("from"), the framework asks again if the machine moved beyond the
// change's Tolerance, and confirms the write after it. With no Summary the
// framework writes one from the changes.
func ExampleDefinition_readback() {
	type Q1Args struct {
		Value float64 `json:"value" jsonschema:"Q1's new setpoint in amperes"`
	}
	setQ1 := capabilities.New(capabilities.Definition{Name: "set_q1_setpoint", Description: "Set magnet Q1's setpoint to a value the user gives.", SideEffects: true,
		Action: func(step capabilities.Step) (capabilities.Action, error) {
			p, err := capabilities.Params[Q1Args](step)
			return capabilities.Action{Changes: []capabilities.Change{{Target: "Q1", Value: p.Value, Unit: "A", Tolerance: 0.05}}}, err
		},
		Readback: func(ctx context.Context, a capabilities.Action) ([]capabilities.Reading, error) {
			v, err := device.Read(ctx, "Q1")
			return []capabilities.Reading{{Target: "Q1", Value: v, Unit: "A"}}, err
		},
	}, capabilities.Key[float64]("Q1_WRITTEN"), func(ctx context.Context, step capabilities.Step, p Q1Args) (float64, string, error) {
		return p.Value, fmt.Sprintf("Q1 set to %g A", p.Value), device.Write(ctx, "Q1", p.Value)
	})

	a, err := agent.New(agent.Config{Capabilities: []capabilities.Capability{setQ1},
		Models: planner(oneStep("set_q1_setpoint", "set Q1 to 105 A", `{"value": 105}`)), Options: state.Options{WritesEnabled: true}})
	if err != nil {
		fmt.Println(err)
		return
	}
	ask(a, "readback", "Set magnet Q1 to 105 A")
	s, _, _ := a.State(context.Background(), "readback")
	if s.Turn.PendingApproval == nil {
		return
	}
	for ev, err := range a.Resume(context.Background(), "readback", agent.Answer{ApprovalID: s.Turn.PendingApproval.ID, Text: "yes"}) {
		if ev.Type == agent.EventAudit && ev.Audit.Outcome != "" {
			fmt.Println("audit:", ev.Audit.Outcome)
		}
		show(ev, err)
	}
	// Output:
	// approve? set_q1_setpoint: set Q1 to 105 A
	//   Q1 is now 92 A
	// done: interrupted
	// audit: confirmed
	// answer: (Offline mode: no language model was used; this answer is assembled from the capability results.)
	//
	// Results for: Set magnet Q1 to 105 A
	//
	// • Q1 set to 105 A
	// done: answered
}
