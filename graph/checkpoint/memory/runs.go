package memory

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

var _ checkpoint.RunStore = (*Store)(nil)

// runTable holds the store's run records (checkpoint.RunStore).
type runTable struct {
	mu    sync.Mutex
	seq   int64
	byID  map[string]*checkpoint.RunRecord
	byKey map[string]string // key → id
}

func (t *runTable) init() {
	if t.byID == nil {
		t.byID, t.byKey = map[string]*checkpoint.RunRecord{}, map[string]string{}
	}
}

// CreateRun stores a copy of rec (see checkpoint.RunStore).
func (s *Store) CreateRun(ctx context.Context, rec checkpoint.RunRecord) (checkpoint.RunRecord, bool, error) {
	if err := ctx.Err(); err != nil {
		return checkpoint.RunRecord{}, false, err
	}
	if err := checkpoint.ValidateRun(rec); err != nil {
		return checkpoint.RunRecord{}, false, err
	}
	t := &s.runs
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	if rec.Key != "" {
		if id, ok := t.byKey[rec.Key]; ok {
			return cloneRun(*t.byID[id]), false, nil
		}
	}
	if _, ok := t.byID[rec.ID]; ok {
		return checkpoint.RunRecord{}, false, &checkpoint.InvalidError{Field: "id", Reason: fmt.Sprintf("run %q exists", rec.ID)}
	}
	now := storedTime(time.Now())
	t.seq++
	rec = cloneRun(rec)
	rec.Seq, rec.Created, rec.Updated = t.seq, now, now
	if rec.Status == "" {
		rec.Status = checkpoint.RunQueued
	}
	t.byID[rec.ID] = &rec
	if rec.Key != "" {
		t.byKey[rec.Key] = rec.ID
	}
	return cloneRun(rec), true, nil
}

// UpdateRun applies u (see checkpoint.RunStore).
func (s *Store) UpdateRun(ctx context.Context, id string, u checkpoint.RunUpdate) (checkpoint.RunRecord, error) {
	if err := ctx.Err(); err != nil {
		return checkpoint.RunRecord{}, err
	}
	if err := checkpoint.ValidateRunUpdate(u); err != nil {
		return checkpoint.RunRecord{}, err
	}
	t := &s.runs
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	r, ok := t.byID[id]
	if !ok {
		return checkpoint.RunRecord{}, fmt.Errorf("%w: run %q", checkpoint.ErrNotFound, id)
	}
	key := r.Key
	nr, err := checkpoint.ApplyRunUpdate(cloneRun(*r), u, storedTime(time.Now()))
	if err != nil {
		return cloneRun(*r), err
	}
	if key != "" && nr.Key == "" {
		delete(t.byKey, key)
	}
	*r = nr
	return cloneRun(nr), nil
}

// GetRun returns a copy of the record.
func (s *Store) GetRun(ctx context.Context, id string) (checkpoint.RunRecord, error) {
	if err := ctx.Err(); err != nil {
		return checkpoint.RunRecord{}, err
	}
	t := &s.runs
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.byID[id]
	if !ok {
		return checkpoint.RunRecord{}, fmt.Errorf("%w: run %q", checkpoint.ErrNotFound, id)
	}
	return cloneRun(*r), nil
}

// GetRunByKey returns a copy of the record holding key.
func (s *Store) GetRunByKey(ctx context.Context, key string) (checkpoint.RunRecord, error) {
	if err := ctx.Err(); err != nil {
		return checkpoint.RunRecord{}, err
	}
	t := &s.runs
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.byKey[key]
	if !ok || key == "" {
		return checkpoint.RunRecord{}, fmt.Errorf("%w: run key", checkpoint.ErrNotFound)
	}
	return cloneRun(*t.byID[id]), nil
}

// ListRuns returns the records f keeps, newest first.
func (s *Store) ListRuns(ctx context.Context, f checkpoint.RunFilter) ([]checkpoint.RunRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := &s.runs
	t.mu.Lock()
	var out []checkpoint.RunRecord
	for _, r := range t.byID {
		if checkpoint.MatchRun(*r, f) {
			out = append(out, cloneRun(*r))
		}
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b checkpoint.RunRecord) int { return cmp.Compare(b.Seq, a.Seq) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// DeleteRuns removes the thread's records.
func (s *Store) DeleteRuns(ctx context.Context, thread string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := &s.runs
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, r := range t.byID {
		if r.Thread == thread {
			t.drop(id)
		}
	}
	return nil
}

// PruneRuns removes terminal records last updated before the time.
func (s *Store) PruneRuns(ctx context.Context, before time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	t := &s.runs
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for id, r := range t.byID {
		if r.Status.Terminal() && r.Updated.Before(before) {
			t.drop(id)
			n++
		}
	}
	return n, nil
}

func (t *runTable) drop(id string) {
	if r := t.byID[id]; r != nil && r.Key != "" {
		delete(t.byKey, r.Key)
	}
	delete(t.byID, id)
}

func cloneRun(r checkpoint.RunRecord) checkpoint.RunRecord {
	r.Input, r.Result = slices.Clone(r.Input), slices.Clone(r.Result)
	if len(r.Labels) == 0 {
		r.Labels = nil
	} else {
		r.Labels = maps.Clone(r.Labels)
	}
	if len(r.Input) == 0 {
		r.Input = nil
	}
	if len(r.Result) == 0 {
		r.Result = nil
	}
	return r
}
