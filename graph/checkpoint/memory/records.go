package memory

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

var _ checkpoint.RecordLog = (*Store)(nil)

// recordLog is the store's append-only record log (checkpoint.RecordLog).
type recordLog struct {
	mu   sync.RWMutex
	recs []checkpoint.Record // ascending Seq
}

// AppendRecords stores copies of recs, normalised like the durable stores
// do, and returns them with Seq (and a zero Time) filled in.
func (s *Store) AppendRecords(ctx context.Context, recs ...checkpoint.Record) ([]checkpoint.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkpoint.ValidateRecords(recs); err != nil {
		return nil, err
	}
	now := time.Now()
	l := &s.records
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]checkpoint.Record, len(recs))
	for i, r := range recs {
		if r.Time.IsZero() {
			r.Time = now
		}
		r.Time = storedTime(r.Time)
		r.Seq = int64(len(l.recs)) + 1
		r.Data = slices.Clone(r.Data)
		if len(r.Labels) == 0 {
			r.Labels = nil
		} else {
			r.Labels = maps.Clone(r.Labels)
		}
		l.recs = append(l.recs, r)
		out[i] = cloneRecord(r)
	}
	return out, nil
}

// Records lists the records f keeps.
func (s *Store) Records(ctx context.Context, f checkpoint.RecordFilter) ([]checkpoint.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l := &s.records
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []checkpoint.Record
	for i := range l.recs {
		j := i
		if f.Newest {
			j = len(l.recs) - 1 - i
		}
		if !checkpoint.MatchRecord(l.recs[j], f) {
			continue
		}
		out = append(out, cloneRecord(l.recs[j]))
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
	}
	return out, nil
}

func cloneRecord(r checkpoint.Record) checkpoint.Record {
	r.Data = slices.Clone(r.Data)
	if r.Labels != nil {
		r.Labels = maps.Clone(r.Labels)
	}
	return r
}
