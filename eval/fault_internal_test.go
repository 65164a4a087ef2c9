package eval

import (
	"context"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
)

// The wrapper that injects faults keeps what the agent reads from a
// capability's optional interfaces: a capability without a retry policy,
// readback or reconciler of its own still has none, one with them keeps
// them.
func TestFaultWrapperKeepsOptionalInterfaces(t *testing.T) {
	run := func(context.Context, capabilities.Step) (capabilities.Output, error) {
		return capabilities.Output{}, nil
	}
	var plain capabilities.Capability = bare{}
	policy := capabilities.RetryPolicy{MaxAttempts: 7}
	rich := capabilities.Define(capabilities.Definition{Name: "rich", Description: "d", Run: run, SideEffects: true, Idempotent: true,
		Retry:    policy,
		Readback: func(context.Context, capabilities.Action) ([]capabilities.Reading, error) { return nil, nil },
		Reconcile: func(context.Context, capabilities.Step, capabilities.Action) (capabilities.Outcome, error) {
			return "", nil
		},
		Approval:  func(capabilities.Step) (bool, string) { return true, "ask" },
		Fallbacks: []string{"plain"},
	})
	in := newInjector([]Fault{{Capability: "plain", Fault: "critical"}, {Capability: "rich", Fault: "critical"}})
	wp, wr := wrapCapability(plain, in), wrapCapability(rich, in)

	if _, ok := capabilities.HasOwnRetryPolicy(wp); ok {
		t.Error("a capability without a retry policy got one")
	}
	if _, ok := wp.(capabilities.Readbacker); ok {
		t.Error("a capability without readback got one")
	}
	if _, ok := wp.(capabilities.Reconciler); ok {
		t.Error("a capability without a reconciler got one")
	}
	if capabilities.HasSideEffects(wp) || wp.(capabilities.Idempotenter).Idempotent() {
		t.Error("a plain capability got side effects")
	}
	if p, ok := capabilities.HasOwnRetryPolicy(wr); !ok || p.MaxAttempts != 7 {
		t.Errorf("retry policy %+v, %v", p, ok)
	}
	if _, ok := wr.(capabilities.Readbacker); !ok {
		t.Error("readback lost")
	}
	if _, ok := wr.(capabilities.Reconciler); !ok {
		t.Error("reconciler lost")
	}
	if !capabilities.HasSideEffects(wr) || !wr.(capabilities.Idempotenter).Idempotent() {
		t.Error("side effects lost")
	}
	if req, sum := wr.(capabilities.ApprovalRequirer).RequiresApproval(capabilities.Step{}); !req || sum != "ask" {
		t.Error("approval lost")
	}
	if fb := wr.(capabilities.FallbackProvider).Fallbacks(); len(fb) != 1 {
		t.Error("fallbacks lost")
	}
	// The first call fails with the injected severity, read as itself.
	_, err := wr.Execute(context.Background(), capabilities.Step{})
	if cl := capabilities.Classify(wr, err, capabilities.ErrorContext{}); cl.Severity != capabilities.Critical || cl.Kind != KindInjected {
		t.Errorf("classification %+v", cl)
	}
	if _, err := wr.Execute(context.Background(), capabilities.Step{}); err != nil {
		t.Errorf("the second call failed too: %v", err)
	}
}

func TestInjectorCountsCalls(t *testing.T) {
	in := newInjector([]Fault{{Capability: "c", Fault: "timeout", Call: 2, Times: 2}, {Capability: "d", Fault: "panic", Times: -1}})
	var got []bool
	for range 5 {
		_, ok := in.next("c")
		got = append(got, ok)
	}
	if want := []bool{false, true, true, false, false}; !equal(got, want) {
		t.Errorf("c failed at %v, want %v", got, want)
	}
	for range 3 {
		if _, ok := in.next("d"); !ok {
			t.Error("times -1 stopped failing")
		}
	}
}

// bare implements Capability and nothing else.
type bare struct{}

func (bare) Name() string                         { return "plain" }
func (bare) Description() string                  { return "d" }
func (bare) Provides() []string                   { return nil }
func (bare) Requires() []capabilities.Requirement { return nil }
func (bare) Execute(context.Context, capabilities.Step) (capabilities.Output, error) {
	return capabilities.Output{}, nil
}

func equal(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
