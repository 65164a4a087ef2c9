package server

import (
	"context"
	"iter"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/state"
)

// Agent is what the server needs of an agent (Config.Runner): running a
// turn, resuming a thread, reading its state, deleting it — agent.Runner's
// methods. *agent.Agent is one, with every optional feature below; a test
// may give a scripted one.
//
// The features below are optional, in the manner of http.Flusher: an
// Agent that has the methods gets the feature, one that has not gets the
// fallback each one names. *agent.Agent has them all, and the compiler
// checks that it does (below), so a method renamed in package agent fails
// the build instead of switching a feature of the server off.
type Agent interface {
	// Run starts a turn and streams its events (agent.Runner.Run).
	Run(ctx context.Context, req agent.TurnRequest) iter.Seq2[agent.Event, error]
	// Resume continues a thread: with an answer to its pending approval,
	// or (zero Answer) after a crash or cancellation.
	Resume(ctx context.Context, thread string, ans agent.Answer) iter.Seq2[agent.Event, error]
	// State returns the thread's latest state and its status.
	State(ctx context.Context, thread string) (state.State, agent.RunStatus, error)
	// DeleteThread removes a thread.
	DeleteThread(ctx context.Context, thread string) error
}

// ThreadStore is an Agent that keeps threads in its checkpoint store, with
// their metadata: the server writes each thread's owner and client id
// there and lists and finds threads by them (threadlist.go), so threads
// survive a restart and every replica sees them. Without it, the threads
// created and not yet run are kept in this process's memory.
type ThreadStore interface {
	// Threads lists the threads the filter keeps.
	Threads(ctx context.Context, filter agent.ThreadFilter) ([]agent.ThreadInfo, error)
	// CreateThread creates a thread before its first turn, durably;
	// created is false when it existed.
	CreateThread(ctx context.Context, thread string, metadata map[string]string) (created bool, err error)
	// SetThreadMetadata changes a thread's metadata between turns (a key
	// set to "" is removed); agent.ErrUnknownThread for a thread not
	// stored yet.
	SetThreadMetadata(ctx context.Context, thread string, set map[string]string) error
}

// RunRecorder is an Agent whose store keeps the server's run records
// (docs/reliability.md); with a store shared by replicas, their runs
// queue too (replicas.go). Without it, Config.Runs must be set.
type RunRecorder interface {
	RunStore() runstore.Store
}

// TurnChecker is an Agent that says which options a turn would run with,
// or refuses a request that loosens them (*agent.LoosenError): the server
// refuses such a turn (403) before any run starts, and the web page shows
// the write switch. Without it, the agent's own refusal fails the run.
type TurnChecker interface {
	TurnOptions(req agent.TurnRequest) (state.Options, error)
}

// ApprovalKeeper is an Agent that lists every approval a thread waits for
// (concurrent steps each ask) and ends one as expired when its chat token
// has expired. Without it, the server knows the one approval State shows,
// and an expired token's answer is refused without ending the approval.
type ApprovalKeeper interface {
	PendingApprovals(ctx context.Context, thread string) ([]state.Approval, error)
	ExpireApproval(ctx context.Context, thread, id string) error
}

// ArtifactReader is an Agent that reads a turn's artifacts, earlier turns
// included (agent.ErrUnknownTurn for a turn it has not). Without it, only
// the latest turn's artifacts are read, from its state.
type ArtifactReader interface {
	Artifacts(ctx context.Context, thread string, turn int) ([]capabilities.Artifact, int, error)
}

// AuditReader is an Agent that lists its audit records of side-effecting
// steps, for GET /api/audit. Without it, that route answers 404.
type AuditReader interface {
	Audit(ctx context.Context, f agent.AuditFilter) ([]agent.AuditEntry, error)
}

// Recoverer is an Agent that claims, under the thread's lease, the runs
// cut between two steps that have no run record (a terminal's run, say),
// one at a time; says how many recovered runs may go on at once (0: no
// bound of its own); and how long its leases last (0: the default), which
// the leases of run records follow. Without it, RecoverRuns recovers the
// recorded runs only and reports ErrNoRecovery.
type Recoverer interface {
	ClaimUnfinished(ctx context.Context) iter.Seq2[*agent.ClaimedRun, error]
	RecoveryLimit() int
	LeaseTTL() time.Duration
}

// *agent.Agent has every feature.
var _ interface {
	Agent
	ThreadStore
	RunRecorder
	TurnChecker
	ApprovalKeeper
	ArtifactReader
	AuditReader
	Recoverer
} = (*agent.Agent)(nil)

// features are the optional interfaces the server's Agent has, found once
// in New; nil where it has not.
type features struct {
	threads   ThreadStore
	turns     TurnChecker
	approvals ApprovalKeeper
	artifacts ArtifactReader
	audit     AuditReader
	recovery  Recoverer
}

func featuresOf(a Agent) features {
	var f features
	f.threads, _ = a.(ThreadStore)
	f.turns, _ = a.(TurnChecker)
	f.approvals, _ = a.(ApprovalKeeper)
	f.artifacts, _ = a.(ArtifactReader)
	f.audit, _ = a.(AuditReader)
	f.recovery, _ = a.(Recoverer)
	return f
}
