package memory

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/capgraph/capgraph/runstore"
)

var _ runstore.Store = (*Store)(nil)

// runTable holds the store's run records (runstore.Store).
type runTable struct {
	mu    sync.Mutex
	seq   int64
	byID  map[string]*runstore.Record
	byKey map[string]string // key → id
}

func (t *runTable) init() {
	if t.byID == nil {
		t.byID, t.byKey = map[string]*runstore.Record{}, map[string]string{}
	}
}

// CreateRun stores a copy of rec (see runstore.Store).
func (s *Store) CreateRun(ctx context.Context, rec runstore.Record) (runstore.Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return runstore.Record{}, false, err
	}
	if err := runstore.Validate(rec); err != nil {
		return runstore.Record{}, false, err
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
		return runstore.Record{}, false, &runstore.InvalidError{Field: "id", Reason: fmt.Sprintf("run %q exists", rec.ID)}
	}
	now := storedTime(time.Now())
	t.seq++
	rec = cloneRun(rec)
	rec.Seq, rec.Created, rec.Updated = t.seq, now, now
	if rec.Status == "" {
		rec.Status = runstore.Queued
	}
	t.byID[rec.ID] = &rec
	if rec.Key != "" {
		t.byKey[rec.Key] = rec.ID
	}
	return cloneRun(rec), true, nil
}

// UpdateRun applies u (see runstore.Store).
func (s *Store) UpdateRun(ctx context.Context, id string, u runstore.Update) (runstore.Record, error) {
	if err := ctx.Err(); err != nil {
		return runstore.Record{}, err
	}
	if err := runstore.ValidateUpdate(u); err != nil {
		return runstore.Record{}, err
	}
	t := &s.runs
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	r, ok := t.byID[id]
	if !ok {
		return runstore.Record{}, fmt.Errorf("%w: run %q", runstore.ErrNotFound, id)
	}
	key := r.Key
	nr, err := runstore.Apply(cloneRun(*r), u, storedTime(time.Now()))
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
func (s *Store) GetRun(ctx context.Context, id string) (runstore.Record, error) {
	if err := ctx.Err(); err != nil {
		return runstore.Record{}, err
	}
	t := &s.runs
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.byID[id]
	if !ok {
		return runstore.Record{}, fmt.Errorf("%w: run %q", runstore.ErrNotFound, id)
	}
	return cloneRun(*r), nil
}

// GetRunByKey returns a copy of the record holding key.
func (s *Store) GetRunByKey(ctx context.Context, key string) (runstore.Record, error) {
	if err := ctx.Err(); err != nil {
		return runstore.Record{}, err
	}
	t := &s.runs
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.byKey[key]
	if !ok || key == "" {
		return runstore.Record{}, fmt.Errorf("%w: run key", runstore.ErrNotFound)
	}
	return cloneRun(*t.byID[id]), nil
}

// ListRuns returns the records f keeps, newest first.
func (s *Store) ListRuns(ctx context.Context, f runstore.Filter) ([]runstore.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := &s.runs
	t.mu.Lock()
	var out []runstore.Record
	for _, r := range t.byID {
		if runstore.Match(*r, f) {
			out = append(out, cloneRun(*r))
		}
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b runstore.Record) int { return cmp.Compare(b.Seq, a.Seq) })
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

func cloneRun(r runstore.Record) runstore.Record {
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
