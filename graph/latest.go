package graph

import (
	"context"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

type latestKey struct{}

// latestRead is what WithLatest carries.
type latestRead struct {
	thread string
	cp     checkpoint.Checkpoint
	found  bool
}

// WithLatest says that the caller has just read thread's latest checkpoint
// (found false: the thread had none) and holds the thread, so that nothing
// has written it since (a lease: checkpoint.Leaser). A new run on thread
// under ctx takes its parent from that read instead of reading the store
// again. A caller that wrote the thread after its read, or does not hold
// it, must not use it: the run's checkpoint would name a parent that is no
// longer the latest.
func WithLatest(ctx context.Context, thread string, cp checkpoint.Checkpoint, found bool) context.Context {
	cp.State = nil // the run needs its identity, not its state
	return context.WithValue(ctx, latestKey{}, latestRead{thread: thread, cp: cp, found: found})
}

// latestOf returns the read WithLatest carries for thread.
func latestOf(ctx context.Context, thread string) (latestRead, bool) {
	l, ok := ctx.Value(latestKey{}).(latestRead)
	return l, ok && l.thread == thread
}
