package checkpoint

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"time"
)

// Record is one entry of a store's append-only record log: facts that must
// outlive the runs and threads they are about (an audit trail). The log is
// generic: Kind says what Data holds, Labels make records findable.
// Records are never changed or deleted by the store; DeleteThread keeps them.
type Record struct {
	// Seq is assigned by the store on append, increasing in the order the
	// appends commit, across processes too: a reader paging with
	// RecordFilter.After never skips a record appended meanwhile. Ignored
	// on append.
	Seq int64 `json:"seq"`
	// Kind says what the record is ("audit"); required.
	Kind string `json:"kind"`
	// Thread is the thread the record is about; may be empty.
	Thread string `json:"thread,omitempty"`
	// Time is when the fact happened; zero means the time of the append.
	// Stored like checkpoint times (UTC, whole microseconds).
	Time time.Time `json:"time"`
	// Labels are filterable strings (RecordFilter.Labels).
	Labels map[string]string `json:"labels,omitempty"`
	// Data is the record itself, one JSON value; required. Its bytes come
	// back unchanged.
	Data json.RawMessage `json:"data"`
}

// RecordFilter narrows RecordLog.Records. Zero fields do not filter.
type RecordFilter struct {
	Kind   string
	Thread string
	// Since keeps records with Time ≥ Since; Until those with Time < Until.
	Since, Until time.Time
	// Labels keeps records whose labels contain every key with the same value.
	Labels map[string]string
	// After keeps records with Seq > After (paging oldest first).
	After int64
	// Newest returns the newest records first (and Limit keeps the newest).
	Newest bool
	// Limit caps the number of results; 0 means no limit.
	Limit int
}

// RecordLog is a store that keeps an append-only record log beside its
// checkpoints (memory, SQLite and PostgreSQL do). Implementations must be
// safe for concurrent use; AppendRecords is durable when it returns.
type RecordLog interface {
	// AppendRecords stores the records, all or none, and returns them with
	// Seq (and a zero Time) filled in.
	AppendRecords(ctx context.Context, recs ...Record) ([]Record, error)
	// Records lists the records f keeps, oldest first unless f.Newest.
	Records(ctx context.Context, f RecordFilter) ([]Record, error)
}

// ValidateRecords reports the first record a RecordLog cannot accept: one
// without Kind, with Data that is not one JSON value, or with text that is
// not valid UTF-8 or holds a NUL byte.
func ValidateRecords(recs []Record) error {
	for i, r := range recs {
		field := func(f string) string { return "records[" + strconv.Itoa(i) + "]." + f }
		switch {
		case r.Kind == "":
			return &InvalidError{Field: field("kind"), Reason: "empty"}
		case len(r.Data) == 0 || !json.Valid(r.Data):
			return &InvalidError{Field: field("data"), Reason: "not a JSON value"}
		}
		if p := textProblem(r.Kind); p != "" {
			return &InvalidError{Field: field("kind"), Reason: p}
		}
		if p := textProblem(r.Thread); p != "" {
			return &InvalidError{Field: field("thread"), Reason: p}
		}
		var bad []string
		for k, v := range r.Labels {
			if k == "" || textProblem(k) != "" || textProblem(v) != "" {
				bad = append(bad, k)
			}
		}
		if len(bad) > 0 {
			sort.Strings(bad)
			return &InvalidError{Field: field("labels[" + strconv.Quote(bad[0]) + "]"), Reason: "empty key, invalid UTF-8 or a NUL byte"}
		}
	}
	return nil
}

// MatchRecord reports whether f keeps r (for stores that filter in memory).
func MatchRecord(r Record, f RecordFilter) bool {
	switch {
	case f.Kind != "" && r.Kind != f.Kind,
		f.Thread != "" && r.Thread != f.Thread,
		!f.Since.IsZero() && r.Time.Before(f.Since),
		!f.Until.IsZero() && !r.Time.Before(f.Until),
		r.Seq <= f.After:
		return false
	}
	return MatchMetadata(r.Labels, f.Labels)
}
