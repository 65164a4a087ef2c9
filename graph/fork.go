package graph

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// Time travel, as LangGraph has it: a thread's kept checkpoints are the
// moments it can be inspected at (Decode) and forked from (Fork).

// ErrThreadExists is Fork's error when the new thread has checkpoints.
var ErrThreadExists = errors.New("graph: the thread exists already")

// Decode returns the state a checkpoint holds.
func (c *Compiled[S, U]) Decode(cp checkpoint.Checkpoint) (S, error) {
	var s S
	if err := c.cfg.Codec.Unmarshal(cp.State, &s); err != nil {
		return s, fmt.Errorf("graph: decode state of checkpoint %s: %w", cp.ID, err)
	}
	return s, nil
}

// Fork starts thread to from checkpoint id of thread from (uuid.Nil: its
// latest): to's first checkpoint holds that state as fn changes it, the
// same nodes next (or the ones fn returns, when not nil) and not-before time, a new run, and the pending writes
// keep keeps (nil: none). A run resumed on to continues from there as the
// original would have from that moment; from is not changed. to must not
// exist (ErrThreadExists); it is taken as for a run (ErrThreadBusy). A
// checkpoint that does not exist is the store's checkpoint.ErrNotFound,
// wrapped.
func (c *Compiled[S, U]) Fork(ctx context.Context, from string, id uuid.UUID, to string, fn func(S) (S, []string, error),
	keep func(checkpoint.Write) bool) (checkpoint.Checkpoint, error) {
	if from == "" || to == "" {
		return checkpoint.Checkpoint{}, ErrNoThread
	}
	h, err := c.threads.enter(ctx, to)
	if err != nil {
		return checkpoint.Checkpoint{}, err
	}
	defer c.threads.leave(to, h)
	if _, err := c.cfg.Store.Get(ctx, to, uuid.Nil); err == nil {
		return checkpoint.Checkpoint{}, fmt.Errorf("%w: %q", ErrThreadExists, to)
	} else if !errors.Is(err, checkpoint.ErrNotFound) {
		return checkpoint.Checkpoint{}, fmt.Errorf("graph: read thread %q: %w", to, err)
	}
	t, err := c.cfg.Store.Get(ctx, from, id)
	if err != nil {
		return checkpoint.Checkpoint{}, fmt.Errorf("graph: read checkpoint %s of thread %q: %w", id, from, err)
	}
	s, err := c.Decode(t.Checkpoint)
	if err != nil {
		return checkpoint.Checkpoint{}, err
	}
	next := t.Checkpoint.Next
	if fn != nil {
		var n []string
		if s, n, err = fn(s); err != nil {
			return checkpoint.Checkpoint{}, err
		}
		if n != nil {
			next = n
		}
	}
	enc, err := c.cfg.Codec.Marshal(&s)
	if err != nil {
		return checkpoint.Checkpoint{}, &EncodeError{What: "the forked state", Err: err}
	}
	src := t.Checkpoint
	cp := checkpoint.Checkpoint{ThreadID: to, ID: newID(), RunID: newID(), Step: src.Step, State: enc, Next: next,
		NotBefore: src.NotBefore, Metadata: c.metadata(s), Created: c.clock.Now()}
	var writes []checkpoint.Write
	for _, w := range t.Writes {
		if keep != nil && keep(w) {
			writes = append(writes, w)
		}
	}
	if tp, ok := c.cfg.Store.(checkpoint.TuplePutter); ok && len(writes) > 0 {
		err = tp.PutTuple(ctx, checkpoint.Tuple{Checkpoint: cp, Writes: writes})
	} else {
		err = c.cfg.Store.Put(ctx, cp)
		if err == nil && len(writes) > 0 {
			err = c.cfg.Store.PutWrites(ctx, to, cp.ID, writes)
		}
	}
	if err != nil {
		return checkpoint.Checkpoint{}, fmt.Errorf("graph: write checkpoint: %w", err)
	}
	return cp, nil
}
