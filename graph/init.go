package graph

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// Init gives a thread that has no checkpoint its first one, holding s and
// nothing to run (StatusDone), so the thread exists in the store — listed
// by Store.Threads with s's metadata — before any run. A later Run starts
// from it like from any finished run, under its run id: the checkpoint is
// then one of the first run's own, and a store that prunes a finished run's
// intermediate checkpoints prunes it too. created is false, and nothing is
// written, when the thread has a checkpoint already or a run of this graph
// is in progress on it.
func (c *Compiled[S, U]) Init(ctx context.Context, thread string, s S) (created bool, err error) {
	if thread == "" {
		return false, ErrNoThread
	}
	h, err := c.threads.enter(ctx, thread)
	if err != nil {
		return false, nil // a run in progress: the thread exists
	}
	defer c.threads.leave(thread, h)
	first, firstPut := c.cfg.Store.(checkpoint.FirstPutter)
	if !firstPut {
		if _, err := c.cfg.Store.Get(ctx, thread, uuid.Nil); err == nil {
			return false, nil
		} else if !errors.Is(err, checkpoint.ErrNotFound) {
			return false, fmt.Errorf("graph: read thread %q: %w", thread, err)
		}
	}
	enc, err := c.cfg.Codec.Marshal(&s)
	if err != nil {
		return false, &EncodeError{What: "the initial state", Err: err}
	}
	cp := checkpoint.Checkpoint{ThreadID: thread, ID: newID(), RunID: newID(), Step: 0, State: enc,
		Created: c.clock.Now(), Metadata: c.metadata(s)}
	if firstPut {
		// The check and the write in one step: no read of the thread first.
		created, err = first.PutFirst(ctx, cp)
	} else {
		created, err = true, c.cfg.Store.Put(ctx, cp)
	}
	if err != nil {
		return false, fmt.Errorf("graph: write checkpoint: %w", err)
	}
	return created, nil
}

// isInitial reports whether cp is what Init writes: step 0, nothing next,
// no parent. A run's own first checkpoint names its entry node next.
func isInitial(cp checkpoint.Checkpoint) bool {
	return cp.Step == 0 && len(cp.Next) == 0 && cp.ParentID == uuid.Nil && cp.RunID != uuid.Nil
}
