package agent

import (
	"context"
	"iter"

	"github.com/capgraph/capgraph/state"
)

// TurnRequest starts a turn.
type TurnRequest struct {
	// Thread identifies the conversation; a new id starts a new one.
	Thread string
	// Input is the user's message.
	Input string
	// Options override the configured per-turn defaults when non-nil.
	Options *state.Options
	// Metadata is stored with the thread's checkpoints (owner, tenant, title).
	Metadata map[string]string
	// AllowedCapabilities, when non-nil, are the only capabilities this turn
	// may select, plan and run (respond and clarify are always allowed);
	// names must be registered. Nil allows every capability. See allow.go.
	AllowedCapabilities []string
}

// Answer answers a pending approval.
type Answer struct {
	// ApprovalID must match the pending approval's id.
	ApprovalID string
	// Text is the human's words; parsed deterministically (yes/no), anything
	// unclear is a rejection unless Approved is set explicitly.
	Text string
	// Approved, when non-nil, states the decision explicitly (a button).
	Approved *bool
	// Plan is an edited plan, for plan approvals.
	Plan *state.Plan
}

// Runner is what frontends (server, CLI) need from an agent. *Agent
// implements it; tests of a frontend may use a scripted one.
type Runner interface {
	// Run starts a turn and streams its events. The last event is EventDone,
	// or the pair carries a *FatalError or another error.
	Run(ctx context.Context, req TurnRequest) iter.Seq2[Event, error]
	// Resume continues a thread: with an answer to its pending approval, or
	// (zero Answer) after a crash or cancellation.
	Resume(ctx context.Context, thread string, ans Answer) iter.Seq2[Event, error]
	// State returns the thread's latest state and its status.
	State(ctx context.Context, thread string) (state.State, RunStatus, error)
	// DeleteThread removes a thread.
	DeleteThread(ctx context.Context, thread string) error
}
