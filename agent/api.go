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
	// Options are what the turn asks for; nil fields keep the configured
	// ones (Config.Options), and a set field may only tighten them: a
	// looser one fails the run with a *LoosenError.
	Options *TurnOptions
	// MayRaise names the settings (state.RaisableSettings) this caller may raise
	// above the configuration: a server fills it from the API key's
	// permission in its configuration.
	MayRaise []string
	// By names who sends the input (an API key's principal, a local user);
	// when the input answers a pending approval it is recorded as the
	// approver.
	By string
	// Metadata is stored with the thread's checkpoints (owner, tenant, title).
	Metadata map[string]string
	// AllowedCapabilities, when non-nil, are the only capabilities this turn
	// may select, plan and run (respond and clarify are always allowed);
	// names must be registered. Nil allows every capability. See
	// docs/error-handling.md, "Capabilities a caller may not use".
	AllowedCapabilities []string
}

// Answer answers a pending approval.
type Answer struct {
	// ApprovalID must match the pending approval's id.
	ApprovalID string
	// Text is the human's words. Only an explicit yes approves (ParseYes);
	// a no (ParseNo), or a reply the approval model reads as a refusal,
	// rejects; anything else decides nothing: Resume fails with
	// ErrApprovalUnclear and the approval stays pending, to be asked again.
	// Approved, when set, wins over Text. See docs/approvals.md.
	Text string
	// Token is the approval token a chat message named (a frontend's own
	// pointer to this approval, server Chat Completions and Responses):
	// a yes or no in Text is then decided by rule state.AnswerToken.
	Token string
	// Approved, when non-nil, states the decision explicitly (a button).
	Approved *bool
	// Plan is an edited plan, for plan approvals.
	Plan *state.Plan
	// By names who answers (an API key's principal, a local user); it is
	// recorded with the decision, in the step's grant and in the audit log.
	By string
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
