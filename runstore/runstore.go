package runstore

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Status is where a run record stands.
type Status string

const (
	Queued      Status = "queued"      // acknowledged, not started
	Running     Status = "running"     // started; its checkpoints say how far it got
	Done        Status = "done"        // ended normally
	Failed      Status = "failed"      // ended with an error (Record.Error)
	Interrupted Status = "interrupted" // waits for a human
	Canceled    Status = "canceled"    // stopped on request
)

// Terminal reports whether the status is final (nothing more happens to
// the run under this record).
func (s Status) Terminal() bool {
	switch s {
	case Done, Failed, Interrupted, Canceled:
		return true
	}
	return false
}

func (s Status) valid() bool { return s == Queued || s == Running || s.Terminal() }

// Record is one run.
type Record struct {
	// ID names the run, unique in the store; chosen by the caller.
	ID string `json:"id"`
	// Seq is assigned by the store when the record is created: increasing
	// in creation order within one process (paging, newest first).
	Seq int64 `json:"seq"`
	// Thread is the thread the run works on.
	Thread string `json:"thread"`
	// Status is where the run stands.
	Status Status `json:"status"`
	// Key, when not empty, is unique among the records: creating a record
	// with a key in use returns the record holding it instead (a repeated
	// request finds its first run).
	Key string `json:"key,omitempty"`
	// Input is what starts the run, one JSON value (the caller's own shape).
	Input json.RawMessage `json:"input,omitempty"`
	// Result is what the run produced, for a repeated request: one JSON
	// value or empty.
	Result json.RawMessage `json:"result,omitempty"`
	// Error says why the run failed, in words for its client.
	Error string `json:"error,omitempty"`
	// Labels are filterable strings (who asked, from where).
	Labels map[string]string `json:"labels,omitempty"`
	// Owner names the process that took the run last.
	Owner string `json:"owner,omitempty"`
	// Attempt counts the updates that started the run (Update.Start).
	Attempt int `json:"attempt"`
	// Created and Updated are set by the store (UTC, whole microseconds).
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// Update changes a run record.
type Update struct {
	// From, when not empty, makes the update conditional: it applies only
	// while the record's status is one of these, else the update fails
	// with ErrConflict and changes nothing.
	From []Status
	// IfOwner, when not empty, makes the update conditional too: it
	// applies only while the record's Owner is this one (a process taking
	// over the run of one that died, ahead of any other).
	IfOwner string
	// Status is the new status (required).
	Status Status
	// Owner, when not empty, is the new owner.
	Owner string
	// Start counts an attempt (Attempt + 1).
	Start bool
	// Error and Result, when not empty, are stored.
	Error  string
	Result json.RawMessage
	// ReleaseKey clears the record's Key, so a new record may take it
	// (a repetition outside the caller's window starts a new run), and
	// its Result, which only a repetition finding the record by its key
	// reads: the answer is not kept twice.
	ReleaseKey bool
}

// Filter narrows Store.ListRuns. Zero fields do not filter.
type Filter struct {
	Thread string
	// Status keeps records with one of these statuses.
	Status []Status
	// Labels keeps records whose labels contain every key with the same value.
	Labels map[string]string
	// Before keeps records with Seq < Before: pass the Seq of the last
	// record of one page to get the next.
	Before int64
	// UpdatedBefore keeps records last updated before this time.
	UpdatedBefore time.Time
	// Limit caps the number of results; 0 means no limit.
	Limit int
}

// ErrConflict: a conditional Update found the record in another status.
var ErrConflict = errors.New("runstore: run record is in another status")

// ErrNotFound: no record has the id or the key.
var ErrNotFound = errors.New("runstore: not found")

// ErrInvalid is the kind of every error a Store returns for input it
// refuses; retrying such a call cannot succeed.
var ErrInvalid = errors.New("runstore: invalid input")

// InvalidError names the field a Store refused and why. It matches
// ErrInvalid.
type InvalidError struct {
	Field  string // e.g. "id", "labels[\"owner\"]"
	Reason string
}

func (e *InvalidError) Error() string { return "runstore: invalid " + e.Field + ": " + e.Reason }

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// Store keeps run records. A checkpoint store that is a Store (memory,
// SQLite and PostgreSQL are) keeps them in the same database as its
// checkpoints. Implementations must be safe for concurrent use; CreateRun
// and UpdateRun are durable when they return.
type Store interface {
	// CreateRun stores a new record (Status Queued when empty) and
	// returns it with Seq, Created and Updated set, and created true. When
	// rec.Key is in use, nothing is stored: the record holding the key is
	// returned with created false. An ID in use is an *InvalidError.
	CreateRun(ctx context.Context, rec Record) (out Record, created bool, err error)
	// UpdateRun applies u to the record with the id and returns it; a
	// missing record is ErrNotFound.
	UpdateRun(ctx context.Context, id string, u Update) (Record, error)
	// GetRun returns the record with the id, or ErrNotFound.
	GetRun(ctx context.Context, id string) (Record, error)
	// GetRunByKey returns the record holding the key, or ErrNotFound.
	GetRunByKey(ctx context.Context, key string) (Record, error)
	// ListRuns returns the records f keeps, newest (highest Seq) first.
	ListRuns(ctx context.Context, f Filter) ([]Record, error)
	// DeleteRuns removes the thread's records (when the thread is deleted).
	DeleteRuns(ctx context.Context, thread string) error
	// PruneRuns removes the records in a terminal status last updated
	// before the time, and returns how many.
	PruneRuns(ctx context.Context, updatedBefore time.Time) (int, error)
}

// Validate reports the first field of a new record a Store cannot
// accept: an empty id or thread, an unknown status, Input or Result that
// is not one JSON value, or text that is not valid UTF-8 or holds a NUL.
func Validate(r Record) error {
	switch {
	case r.ID == "":
		return &InvalidError{Field: "id", Reason: "empty"}
	case r.Thread == "":
		return &InvalidError{Field: "thread", Reason: "empty"}
	case r.Status != "" && !r.Status.valid():
		return &InvalidError{Field: "status", Reason: "unknown status " + strconv.Quote(string(r.Status))}
	case len(r.Input) > 0 && !json.Valid(r.Input):
		return &InvalidError{Field: "input", Reason: "not a JSON value"}
	case len(r.Result) > 0 && !json.Valid(r.Result):
		return &InvalidError{Field: "result", Reason: "not a JSON value"}
	}
	for field, v := range map[string]string{"id": r.ID, "thread": r.Thread, "key": r.Key, "error": r.Error, "owner": r.Owner} {
		if p := textProblem(v); p != "" {
			return &InvalidError{Field: field, Reason: p}
		}
	}
	keys := make([]string, 0, len(r.Labels))
	for k := range r.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == "" || textProblem(k) != "" || textProblem(r.Labels[k]) != "" {
			return &InvalidError{Field: "labels[" + strconv.Quote(k) + "]", Reason: "empty key, invalid UTF-8 or a NUL byte"}
		}
	}
	return nil
}

// ValidateUpdate reports the first field of u a Store cannot accept.
func ValidateUpdate(u Update) error {
	switch {
	case !u.Status.valid():
		return &InvalidError{Field: "status", Reason: "unknown status " + strconv.Quote(string(u.Status))}
	case len(u.Result) > 0 && !json.Valid(u.Result):
		return &InvalidError{Field: "result", Reason: "not a JSON value"}
	}
	for i, s := range u.From {
		if !s.valid() {
			return &InvalidError{Field: "from[" + strconv.Itoa(i) + "]", Reason: "unknown status " + strconv.Quote(string(s))}
		}
	}
	if p := textProblem(u.Error); p != "" {
		return &InvalidError{Field: "error", Reason: p}
	}
	if p := textProblem(u.Owner); p != "" {
		return &InvalidError{Field: "owner", Reason: p}
	}
	if p := textProblem(u.IfOwner); p != "" {
		return &InvalidError{Field: "if_owner", Reason: p}
	}
	return nil
}

// Match reports whether f keeps r (for stores that filter in memory).
func Match(r Record, f Filter) bool {
	switch {
	case f.Thread != "" && r.Thread != f.Thread,
		len(f.Status) > 0 && !slices.Contains(f.Status, r.Status),
		f.Before > 0 && r.Seq >= f.Before,
		!f.UpdatedBefore.IsZero() && !r.Updated.Before(f.UpdatedBefore):
		return false
	}
	return matchLabels(r.Labels, f.Labels)
}

// Apply returns r changed by u at now, or ErrConflict (for
// stores that update in memory; the SQL stores do the same in SQL).
func Apply(r Record, u Update, now time.Time) (Record, error) {
	if len(u.From) > 0 && !slices.Contains(u.From, r.Status) || u.IfOwner != "" && r.Owner != u.IfOwner {
		return r, ErrConflict
	}
	r.Status, r.Updated = u.Status, now
	if u.Owner != "" {
		r.Owner = u.Owner
	}
	if u.Start {
		r.Attempt++
	}
	if u.Error != "" {
		r.Error = u.Error
	}
	if len(u.Result) > 0 {
		r.Result = slices.Clone(u.Result)
	}
	if u.ReleaseKey {
		r.Key, r.Result = "", nil
	}
	return r, nil
}

// matchLabels reports whether labels hold every key of filter with the
// same value.
func matchLabels(labels, filter map[string]string) bool {
	for k, v := range filter {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// textProblem says why s cannot be stored as text by every store, or "":
// PostgreSQL text cannot hold NUL, and JSON would replace invalid UTF-8.
func textProblem(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "not valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL byte"
	}
	return ""
}
