package capabilities

import (
	"context"
	"reflect"
	"time"
)

// Definition builds a Capability from plain fields: the quickest way to write
// one. Only Name, Description and Run are required.
type Definition struct {
	Name        string
	Description string
	Provides    []string
	Requires    []Requirement
	Run         func(ctx context.Context, step Step) (Output, error)

	// Optional behaviour; nil means "use the defaults".
	Classify func(err error, ec ErrorContext) Classification
	// Retry is the capability's own retry policy; its zero fields are
	// filled from the configured policies. The zero value is no policy of
	// its own; MaxAttempts 1 says "never retry".
	Retry             RetryPolicy
	ClassifierGuide   *ClassifierGuide
	OrchestratorGuide *OrchestratorGuide
	Fallbacks         []string
	// Approval asks a human to approve a step of a capability without side
	// effects, in selective approval mode, with a summary to judge (see
	// ApprovalRequirer). A side-effecting capability leaves it out.
	Approval func(step Step) (bool, string)
	// SideEffects declares that Run acts on the outside world; the framework
	// then guards every execution (see SideEffecter), and a human approves
	// every one, whatever the approval mode.
	SideEffects bool
	// Action describes what a step will do, without doing it (see
	// ActionDescriber); used only when SideEffects is set. Its Summary is
	// the one summary of the side effect: the human approves it and the
	// audit log records it (without one, the framework writes it from the
	// changes).
	Action func(step Step) (Action, error)
	// Readback reads the action's targets now, without acting (see
	// Readbacker); ReadAt reads their value at an earlier time (see
	// HistoryReader); Reconcile tells whether an attempt cut short took effect
	// (see Reconciler); Idempotent declares that running one attempt again
	// with its idempotency key is harmless (see Idempotenter). Used only
	// when SideEffects is set.
	Readback   func(ctx context.Context, action Action) ([]Reading, error)
	ReadAt     func(ctx context.Context, action Action, at time.Time) ([]Reading, error)
	Reconcile  func(ctx context.Context, step Step, action Action) (Outcome, error)
	Idempotent bool
	// Deadline bounds one attempt of Run (see Deadliner); 0 means the
	// configured default, else DefaultDeadline.
	Deadline time.Duration
}

// Define returns the capability a Definition describes. What is wrong with
// the definition (no Run, a name or a context type misspelt, a retry policy
// that cannot work) is reported, with every other capability's problems, by
// Registry.Register and agent.New.
func Define(d Definition) Capability {
	var problems []string
	if d.Run == nil {
		problems = append(problems, "has no Run function")
	}
	if d.SideEffects && d.Approval != nil {
		problems = append(problems, "has SideEffects and Approval: a side effect is always approved, with the Action's Summary (leave Approval out)")
	}
	return &defined{d: d, problems: problems}
}

type defined struct {
	d        Definition
	problems []string                // found by Define or New, reported by Register
	types    map[string]reflect.Type // what New provides, by context type
}

func (c *defined) ProvidedTypes() map[string]reflect.Type { return c.types }

// definitionProblems is what Register reports besides its own checks.
func (c *defined) definitionProblems() []string { return c.problems }

func (c *defined) Name() string            { return c.d.Name }
func (c *defined) Description() string     { return c.d.Description }
func (c *defined) Provides() []string      { return c.d.Provides }
func (c *defined) Requires() []Requirement { return c.d.Requires }
func (c *defined) Execute(ctx context.Context, s Step) (Output, error) {
	if c.d.Run == nil { // unregistered: Register refuses it
		return Output{}, NewError(Critical, KindUnknown, "capability "+c.d.Name+" has no Run function", nil)
	}
	return c.d.Run(ctx, s)
}

func (c *defined) ClassifyError(err error, ec ErrorContext) Classification {
	if c.d.Classify == nil {
		return Classification{}
	}
	return c.d.Classify(err, ec)
}

func (c *defined) RetryPolicy() RetryPolicy { return c.d.Retry }

func (c *defined) ClassifierGuide() *ClassifierGuide     { return c.d.ClassifierGuide }
func (c *defined) OrchestratorGuide() *OrchestratorGuide { return c.d.OrchestratorGuide }
func (c *defined) Fallbacks() []string                   { return c.d.Fallbacks }
func (c *defined) RequiresApproval(s Step) (bool, string) {
	if c.d.Approval == nil {
		return false, ""
	}
	return c.d.Approval(s)
}

func (c *defined) SideEffects() bool { return c.d.SideEffects }

// DescribeAction uses the definition's Action; without one it is StepAction.
func (c *defined) DescribeAction(s Step) (Action, error) {
	if c.d.Action == nil {
		return StepAction(c.d.Name, s), nil
	}
	a, err := c.d.Action(s)
	a.Capability = c.d.Name
	return a, err
}

// Readback uses the definition's Readback; without one it cannot read
// (ErrNoReadback).
func (c *defined) Readback(ctx context.Context, a Action) ([]Reading, error) {
	if c.d.Readback == nil {
		return nil, ErrNoReadback
	}
	return c.d.Readback(ctx, a)
}

// ReadAt uses the definition's ReadAt; without one it cannot read the
// targets' history (ErrNoReadback).
func (c *defined) ReadAt(ctx context.Context, a Action, at time.Time) ([]Reading, error) {
	if c.d.ReadAt == nil {
		return nil, ErrNoReadback
	}
	return c.d.ReadAt(ctx, a, at)
}

// Reconcile uses the definition's Reconcile; without one it cannot tell
// (OutcomeUnconfirmed), and the framework tries Readback.
func (c *defined) Reconcile(ctx context.Context, s Step, a Action) (Outcome, error) {
	if c.d.Reconcile == nil {
		return OutcomeUnconfirmed, nil
	}
	return c.d.Reconcile(ctx, s, a)
}

func (c *defined) Idempotent() bool { return c.d.Idempotent }

func (c *defined) Deadline() time.Duration { return c.d.Deadline }

// HasOwnRetryPolicy reports whether c states a retry policy of its own: it
// is a RetryPolicyProvider whose policy sets at least one field (a
// Definition without Retry gives the zero policy, which is none).
func HasOwnRetryPolicy(c Capability) (RetryPolicy, bool) {
	if p, ok := c.(RetryPolicyProvider); ok {
		if own := p.RetryPolicy(); !own.IsZero() {
			return own, true
		}
	}
	return RetryPolicy{}, false
}
