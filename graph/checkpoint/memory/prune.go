package memory

import (
	"context"
	"slices"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

var _ checkpoint.Pruner = (*Store)(nil)

// Prune deletes the intermediate checkpoints of finished runs (see
// checkpoint.Pruner). A latest-only store has none: it keeps one
// checkpoint per thread.
func (s *Store) Prune(ctx context.Context, opts checkpoint.PruneOptions) (checkpoint.PruneResult, error) {
	if err := ctx.Err(); err != nil {
		return checkpoint.PruneResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var res checkpoint.PruneResult
	for id, t := range s.threads {
		if (opts.Thread == "" || id == opts.Thread) && len(t.cps) > 0 && t.cps[len(t.cps)-1].metadata.matches(opts.Metadata) {
			t.prune(opts, &res)
		}
	}
	return res, nil
}

// prune deletes the thread's intermediate checkpoints of finished runs, and
// their writes, adding what it deleted to res. Called with the store locked.
func (t *thread) prune(opts checkpoint.PruneOptions, res *checkpoint.PruneResult) {
	n := len(t.cps)
	if n < 2 {
		return
	}
	last := make(map[uuid.UUID]*entry) // the last checkpoint of each run
	for _, e := range t.cps {
		last[e.run] = e
	}
	latest := t.cps[n-1]
	before := micros(opts.FinishedBefore)
	keep := t.cps[:0]
	for _, e := range t.cps {
		l := last[e.run]
		finished := len(l.next) == 0 || l.run != latest.run
		if e == l || !finished || (!opts.FinishedBefore.IsZero() && l.created >= before) {
			keep = append(keep, e)
			continue
		}
		res.Checkpoints++
		res.Writes += int64(len(t.writes[e.id]))
		delete(t.writes, e.id)
		// The entry may share a block with kept ones: drop what it holds,
		// so that its state is not kept alive with the block.
		*e = entry{}
	}
	clear(t.cps[len(keep):])
	t.cps = keep
	if len(keep) < n {
		t.compact()
	}
}

// compact moves the kept checkpoints out of the blocks their run filled,
// and the next run starts blocks of its own. Once a turn is pruned its
// blocks hold mostly emptied entries, which an idle thread kept for good
// and the garbage collector scanned at every cycle (a kilobyte per thread,
// and a multi-turn thread's blocks grow to 64 entries).
func (t *thread) compact() {
	kept := make([]entry, len(t.cps))
	cps := make([]*entry, len(t.cps), len(t.cps)+1)
	for i, e := range t.cps {
		kept[i] = *e
		kept[i].next = slices.Clone(e.next)
		if len(e.state) <= sharedBytes {
			kept[i].state = slices.Clone(e.state) // not the run's whole block
		}
		cps[i] = &kept[i]
	}
	t.cps = cps
	t.mem = arena{meta: t.mem.meta}
}
