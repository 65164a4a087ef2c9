package memory

import (
	"github.com/capgraph/capgraph/graph/checkpoint"
)

// NewLatestOnly returns an empty store that keeps only each thread's latest
// checkpoint (the one with the greatest id) and its pending writes: enough to
// continue a run, answer an interrupt or resume a failed step, and to list
// threads, at a constant size per thread and a Put that allocates nothing once
// a thread has run a step.
//
// It is for purely in-process use where no history is wanted: it is not
// durable (nothing survives the process), List returns at most the latest
// checkpoint, Get of any earlier id is checkpoint.ErrNotFound, and a
// checkpoint Put with an id older than the thread's latest is dropped (it
// would not have become the latest in any store). It runs the conformance
// suite with checkpointtest.RunLatestOnly.
func NewLatestOnly() *Store {
	s := New()
	s.latestOnly = true
	return s
}

// LatestOnly reports whether the store keeps only each thread's latest
// checkpoint (NewLatestOnly).
func (s *Store) LatestOnly() bool { return s.latestOnly }

// putLatest makes cp the thread's one checkpoint, unless the thread already
// has a newer one. The entry and its buffers are reused from step to step:
// Get and List hand out copies, so nothing outside the store can see them
// change.
func (t *thread) putLatest(cp *checkpoint.Checkpoint) {
	if len(t.cps) == 0 {
		t.cps = []*entry{t.mem.keep(cp)}
		return
	}
	e := t.cps[0]
	switch c := compareUUID(cp.ID, e.id); {
	case c < 0:
		return // older than the latest: not kept
	case c > 0:
		// The previous checkpoint goes, and with it its pending writes.
		delete(t.writes, e.id)
	}
	state, next, meta := e.state, e.next, e.metadata
	*e = entry{id: cp.ID, parent: cp.ParentID, run: cp.RunID, step: cp.Step,
		notBefore: micros(cp.NotBefore), created: micros(cp.Created)}
	e.state = reuse(state, cp.State)
	e.next = reuse(next, cp.Next)
	e.metadata = meta
	if !meta.equals(cp.Metadata) {
		e.metadata = packMeta(cp.Metadata)
	}
}

// reuse copies src into dst's memory when it fits (and dst is not much too
// big for it, so that one huge state does not pin its buffer for good).
func reuse[T any](dst, src []T) []T {
	if len(src) == 0 {
		return nil
	}
	if cap(dst) < len(src) || cap(dst) > 4*len(src)+64 {
		dst = make([]T, 0, len(src)+len(src)/4)
	}
	return append(dst[:0], src...)
}
