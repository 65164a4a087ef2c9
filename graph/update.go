package graph

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// UpdateState changes a thread's latest state outside a run, as LangGraph's
// update_state does: fn gets the state of the latest checkpoint and returns
// the new one, which is written as a new latest checkpoint, a child of the
// old, with everything else kept (the nodes to run next, a retry's
// not-before time, the run and step it belongs to) and the old one's pending
// writes copied to it, so an interrupted run still waits for its answer and
// resumes as it would have. The metadata is Config.Metadata of the new
// state. A frontend renames a thread this way.
//
// The thread is taken as for a run (ErrThreadBusy while one goes on in this
// process, unless ctx carries the caller's hold, see HoldThread); a caller
// sharing the store with other processes holds its lease (see
// checkpoint.WithLease), which fences the write. A thread without a
// checkpoint is the store's checkpoint.ErrNotFound, wrapped.
func (c *Compiled[S, U]) UpdateState(ctx context.Context, thread string, fn func(S) (S, error)) error {
	if thread == "" {
		return ErrNoThread
	}
	h, err := c.threads.enter(ctx, thread)
	if err != nil {
		return err
	}
	defer c.threads.leave(thread, h)
	s, t, err := c.State(ctx, thread)
	if err != nil {
		return fmt.Errorf("graph: read thread %q: %w", thread, err)
	}
	if s, err = fn(s); err != nil {
		return err
	}
	enc, err := c.cfg.Codec.Marshal(&s)
	if err != nil {
		return &EncodeError{What: "the state", Err: err}
	}
	cp := t.Checkpoint
	cp.ParentID, cp.ID, cp.State, cp.Metadata, cp.Created = cp.ID, idAfter(cp.ID), enc, c.metadata(s), c.clock.Now()
	if err := c.cfg.Store.Put(ctx, cp); err != nil {
		return fmt.Errorf("graph: write checkpoint: %w", err)
	}
	if len(t.Writes) > 0 {
		if err := c.cfg.Store.PutWrites(ctx, thread, cp.ID, t.Writes); err != nil {
			return fmt.Errorf("graph: copy pending writes: %w", err)
		}
	}
	return nil
}

// idAfter returns a new checkpoint id that sorts after prev, also when prev
// was made by a process whose clock is ahead of this one's.
func idAfter(prev uuid.UUID) uuid.UUID {
	id := newID()
	if bytes.Compare(id[:], prev[:]) > 0 {
		return id
	}
	var ts [8]byte
	copy(ts[2:], prev[:6])
	return newIDAt(time.UnixMilli(int64(binary.BigEndian.Uint64(ts[:])) + 1))
}
