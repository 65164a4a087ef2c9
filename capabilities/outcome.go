package capabilities

import (
	"context"
	"errors"
	"time"
)

// Outcome is how one attempt of a side-effecting step ended, as the
// framework records it (audit, events, metrics, every frontend). A change
// happens at most once; when the framework cannot know whether it happened,
// the outcome says so (OutcomeUnconfirmed) instead of guessing, and the step
// is never run again blind.
type Outcome string

const (
	// OutcomeRefused: never attempted — the write switch, the caller's
	// allowed capabilities, the user's intent, an approval that no longer
	// fits, or the application's own limits (ActionRefusedError).
	OutcomeRefused Outcome = "refused"
	// OutcomeFailed: attempted and known not applied (the capability said
	// so with ErrNotApplied, or reconciliation found the machine unchanged).
	// It may run again, under a still-valid approval.
	OutcomeFailed Outcome = "failed"
	// OutcomeConfirmed: applied, and a readback matched what was asked (or,
	// for a capability that cannot read back, it reported success).
	OutcomeConfirmed Outcome = "confirmed"
	// OutcomeMismatch: a readback differs from what was asked and from the
	// value before. Never retried: a human looks at the machine.
	OutcomeMismatch Outcome = "mismatch"
	// OutcomeUnconfirmed: unknown — the process died or the call broke off
	// during the attempt and nothing can tell whether the change happened.
	// Never retried: a human checks.
	OutcomeUnconfirmed Outcome = "unconfirmed"
	// OutcomeUnrequested: planned, but refused at planning because the user
	// did not ask for that change.
	OutcomeUnrequested Outcome = "unrequested"
)

// Outcomes lists every outcome, in the order above.
var Outcomes = []Outcome{OutcomeRefused, OutcomeFailed, OutcomeConfirmed, OutcomeMismatch, OutcomeUnconfirmed, OutcomeUnrequested}

// Valid reports whether o is one of Outcomes.
func (o Outcome) Valid() bool {
	for _, v := range Outcomes {
		if o == v {
			return true
		}
	}
	return false
}

// ErrNotApplied marks an error of a side-effecting capability's Execute
// that is known to have changed nothing (a limit checked before writing, a
// connection refused before the request was sent). Without it the framework
// cannot tell a failed write from a half-done one: it reconciles, and where
// it cannot, the outcome is unconfirmed and the step is not retried.
var ErrNotApplied = errors.New("not applied")

// NotApplied wraps err as known not applied (errors.Is(err, ErrNotApplied)),
// keeping its classification.
func NotApplied(err error) error {
	if err == nil {
		return nil
	}
	return notApplied{err}
}

type notApplied struct{ err error }

func (e notApplied) Error() string   { return e.err.Error() }
func (e notApplied) Unwrap() []error { return []error{e.err, ErrNotApplied} }

// ActionRefusedError is returned by DescribeAction for an action the
// application will refuse whatever a human says: a value outside the
// target's limits, a read-only target. The framework refuses the step at
// once with Reason and Message (outcome refused) and never asks a human to
// approve it.
type ActionRefusedError struct {
	// Reason is a short machine-readable word ("limits", "read_only";
	// ReasonNotFinite when DescribeAction refuses a value that is not a
	// number).
	Reason string
	// Message says why, for the operator.
	Message string
}

func (e *ActionRefusedError) Error() string { return e.Message }

// Reading is the value of one target of an action, read from the outside
// world without acting: now (Readbacker) or at an earlier time
// (HistoryReader).
type Reading struct {
	Target string `json:"target"`
	// Value is a number (float64) or a string, as in Change.Value.
	Value any    `json:"value"`
	Unit  string `json:"unit,omitempty"`
	// At is the time the target had Value, for a reading of its history;
	// zero for a reading now.
	At time.Time `json:"at,omitzero"`
}

// HistoryReader is implemented by a side-effecting capability that can read
// the value every target of an action had at an earlier time (an archive).
// The framework then carries out a change back to the value at a time the
// user names ("restore Q1 to yesterday's value"): the value to set must be
// the one ReadAt returns for that time — never a model's — and the human
// approving it sees the value with its time. ReadAt returns ErrNoReadback
// when it cannot read this action's targets' history; such a restore is
// refused.
type HistoryReader interface {
	ReadAt(ctx context.Context, action Action, at time.Time) ([]Reading, error)
}

// Readbacker is implemented by a side-effecting capability that can read
// the current value of every target of an action without acting. The
// framework then binds an approval to the machine state it was given
// against (the card shows the value before; at execution the value is read
// again and a move beyond Change.Tolerance asks the human again), confirms
// an attempt by reading back after it (OutcomeConfirmed or
// OutcomeMismatch), and reconciles an attempt cut by a crash instead of
// running it again.
//
// Readback returns ErrNoReadback when it cannot read this action's targets:
// the framework then proceeds as for a capability that cannot read back.
type Readbacker interface {
	Readback(ctx context.Context, action Action) ([]Reading, error)
}

// ErrNoReadback is returned by a Readbacker that cannot read an action's
// targets (a Definition without Readback).
var ErrNoReadback = errors.New("capabilities: this capability cannot read its targets back")

// Reconciler is implemented by a side-effecting capability that can tell,
// after the fact, whether an attempt took effect (a message system that
// looks its idempotency key up, say). The framework asks it about an
// attempt whose outcome is unknown (the process died during it, another
// replica took the run over) before anything else. It returns
// OutcomeConfirmed (it happened), OutcomeFailed (it did not: the step may
// run again under a still-valid approval), OutcomeMismatch or
// OutcomeUnconfirmed (it cannot tell: the framework then tries a
// Readbacker). step is the attempt as it ran, with its IdempotencyKey.
type Reconciler interface {
	Reconcile(ctx context.Context, step Step, action Action) (Outcome, error)
}

// Idempotenter is implemented by a side-effecting capability whose effect
// is the same however often one attempt runs with the same idempotency key
// (an MCP tool annotated idempotent, an API that deduplicates by key). An
// attempt whose outcome is unknown may then simply run again with its key.
type Idempotenter interface {
	Idempotent() bool
}
