package agent

import (
	"context"
	"time"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
)

// The engine's names a caller of the agent meets (a thread listing, a busy
// thread, a lost lease, a parked run), given here so that a caller such as
// the server needs no graph package: each is the engine's own, not a copy,
// so errors.Is and errors.As match either name.

// ThreadFilter selects the threads Agent.Threads lists.
type ThreadFilter = checkpoint.ThreadFilter

// ThreadInfo is one thread Agent.Threads lists.
type ThreadInfo = checkpoint.ThreadInfo

// LeaseHeldError: another process holds the thread's lease (its holder
// and expiry); a run on the thread fails with it, wrapped in
// ErrThreadBusy.
type LeaseHeldError = checkpoint.LeaseHeldError

// InMemory is implemented by a store that keeps everything in the
// process's memory (checkpoint.InMemory): a caller writes to it in place
// rather than overlapping the write with other work.
type InMemory = checkpoint.InMemory

// IsInMemory reports whether s is an InMemory store that says it is.
func IsInMemory(s any) bool { return checkpoint.IsInMemory(s) }

// ErrThreadBusy: a run goes on on the thread already, in this process or
// in another sharing the store.
var ErrThreadBusy = graph.ErrThreadBusy

// ErrLeaseLost: the run's lease on its thread expired or another process
// took it over; the run's writes under it were refused.
var ErrLeaseLost = checkpoint.ErrLeaseLost

// WithParkAfter makes a run started with ctx park instead of waiting
// more than after for a step's NotBefore (a retry's wait): the run ends
// with RunWaiting and its caller resumes it when due; after <= 0 always
// waits (the default).
func WithParkAfter(ctx context.Context, after time.Duration) context.Context {
	return graph.WithParkAfter(ctx, after)
}

// WithInputKept says that the caller of Run keeps the turn's request
// durably and runs it again after a crash that cut the turn before its
// input reached the store (the server's run record; docs/reliability.md).
// Under checkpoints.durability async the turn's input checkpoint is then
// written while its first step runs rather than before: a commit less
// waited for. A side effect's step still runs only once every checkpoint
// before it is on disk.
func WithInputKept(ctx context.Context) context.Context {
	return graph.WithInputKept(ctx)
}
