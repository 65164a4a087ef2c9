package capabilities_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

// A capability is a Definition: name, description, context types, and Run.
// Classify and Retry are optional; without them the default classifier and
// the application's retry policy apply.
func ExampleDefine() {
	readPV := capabilities.Define(capabilities.Definition{
		Name:        "read_pv",
		Description: "Read the current value of a control-system channel",
		Provides:    []string{"PV_VALUE"},
		Requires:    []capabilities.Requirement{{Type: "CHANNEL_ADDRESSES"}},
		Run: func(ctx context.Context, step capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("PV_VALUE", 401.5, "SR:CURRENT = 401.5 mA"), nil
		},
		// A capability knows its own failures best.
		Classify: func(err error, ec capabilities.ErrorContext) capabilities.Classification {
			if errors.Is(err, errNoSuchChannel) {
				return capabilities.Classification{Severity: capabilities.Replanning, UserMessage: "the channel does not exist",
					Metadata: map[string]any{capabilities.MetaReplanningReason: "find the channel address first"}}
			}
			return capabilities.Classification{} // unset: the default classifier decides
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
	cl := capabilities.Classify(readPV, fmt.Errorf("get: %w", errNoSuchChannel), capabilities.ErrorContext{Capability: "read_pv"})
	fmt.Println(cl.Severity, "-", cl.UserMessage)
	// Output:
	// • read_pv: Read the current value of a control-system channel
	// • find_channels: Find channel addresses from a description
	// replanning - the channel does not exist
}

var errNoSuchChannel = errors.New("no such channel")

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

// device stands in for a control system.
var device = fakeDevice{"Q1": 92, "Q2": 87.5}

type fakeDevice map[string]float64

func (d fakeDevice) Read(_ context.Context, name string) (float64, error) {
	if v, ok := d[name]; ok {
		return v, nil
	}
	return 0, capabilities.NewError(capabilities.Critical, capabilities.KindNotFound, "there is no magnet "+name, nil)
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
	reg := capabilities.NewRegistry()
	fmt.Println(reg.Register(primary, backup), reg.Validate())
	fmt.Println(primary.(capabilities.FallbackProvider).Fallbacks())
	// A fallback that is not registered is reported, naming the capability.
	lonely := capabilities.NewRegistry()
	_ = lonely.Register(primary)
	fmt.Println(lonely.Validate())
	// Output:
	// <nil> <nil>
	// [backup_source]
	// capability "primary_source": fallback "backup_source" is not registered
}

// A write: SideEffects makes every step wait for a human's approval
// (whatever the approval mode), and the Action describes the change
// before it runs. Its Summary is the one summary of the side effect: the
// human approves it and the audit log records it.
func ExampleDefinition_sideEffects() {
	write := capabilities.Define(capabilities.Definition{
		Name: "set_current", Description: "Set a magnet's current to a value the user gives.",
		Provides: []string{"WRITE_RESULT"}, SideEffects: true,
		Action: func(step capabilities.Step) (capabilities.Action, error) {
			v, err := capabilities.Param(step, "value", 0.0)
			return capabilities.Action{Summary: fmt.Sprintf("set BTS:MAG:Q1:CURRENT from 92.00 → %.2f A", v),
				Changes: []capabilities.Change{{Target: "BTS:MAG:Q1:CURRENT", Value: v, Unit: "A", Tolerance: 0.05}}}, err
		},
		Run: func(ctx context.Context, step capabilities.Step) (capabilities.Output, error) {
			if !step.WritesEnabled {
				return capabilities.Output{}, capabilities.ErrWritesDisabled
			}
			v, _ := capabilities.Param(step, "value", 0.0)
			return capabilities.Result("WRITE_RESULT", v, fmt.Sprintf("Q1 set to %.2f A", v)), nil
		},
	})
	step := capabilities.Step{PlannedStep: capabilities.PlannedStep{Parameters: map[string]any{"value": 105}}}
	a, err := capabilities.DescribeAction(write, step)
	fmt.Println(capabilities.HasSideEffects(write), a.Summary, err)
	fmt.Println(a.Changes[0].Target, a.Changes[0].Value, a.Changes[0].Unit)
	// Approval beside SideEffects is refused: there is one summary.
	both := capabilities.Define(capabilities.Definition{Name: "set_twice", Description: "d", SideEffects: true,
		Approval: func(capabilities.Step) (bool, string) { return true, "other words" },
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Output{}, nil
		}})
	fmt.Println(capabilities.NewRegistry().Register(both))
	// Output:
	// true set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A <nil>
	// BTS:MAG:Q1:CURRENT 105 A
	// capability "set_twice": has SideEffects and Approval: a side effect is always approved, with the Action's Summary (leave Approval out)
}
