package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"
)

// A run record is a unit of work a caller acknowledged to someone (a
// client's "202 Accepted", the first byte of a stream): it is written
// durably before the acknowledgement, with what starts the run, and moves
// through
//
//	queued → running → done | failed | interrupted | canceled
//
// so that after a crash every acknowledged run can be found again and
// either carried out or marked failed with a reason. The store knows
// nothing of what a run does: Input and Result are the caller's JSON.
// Records are kept beside the checkpoints, in the same database, and a
// conditional update (RunUpdate.From) lets exactly one of several
// processes take a queued run.

// RunStatus is where a run record stands.
type RunStatus string

const (
	RunQueued      RunStatus = "queued"      // acknowledged, not started
	RunRunning     RunStatus = "running"     // started; its checkpoints say how far it got
	RunDone        RunStatus = "done"        // ended normally
	RunFailed      RunStatus = "failed"      // ended with an error (RunRecord.Error)
	RunInterrupted RunStatus = "interrupted" // waits for a human
	RunCanceled    RunStatus = "canceled"    // stopped on request
)

// Terminal reports whether the status is final (nothing more happens to
// the run under this record).
func (s RunStatus) Terminal() bool {
	switch s {
	case RunDone, RunFailed, RunInterrupted, RunCanceled:
		return true
	}
	return false
}

func (s RunStatus) valid() bool { return s == RunQueued || s == RunRunning || s.Terminal() }

// RunRecord is one run.
type RunRecord struct {
	// ID names the run, unique in the store; chosen by the caller.
	ID string `json:"id"`
	// Seq is assigned by the store when the record is created: increasing
	// in creation order within one process (paging, newest first).
	Seq int64 `json:"seq"`
	// Thread is the thread the run works on.
	Thread string `json:"thread"`
	// Status is where the run stands.
	Status RunStatus `json:"status"`
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
	// Attempt counts the updates that started the run (RunUpdate.Start).
	Attempt int `json:"attempt"`
	// Created and Updated are set by the store (UTC, whole microseconds).
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// RunUpdate changes a run record.
type RunUpdate struct {
	// From, when not empty, makes the update conditional: it applies only
	// while the record's status is one of these, else the update fails
	// with ErrRunConflict and changes nothing.
	From []RunStatus
	// IfOwner, when not empty, makes the update conditional too: it
	// applies only while the record's Owner is this one (a process taking
	// over the run of one that died, ahead of any other).
	IfOwner string
	// Status is the new status (required).
	Status RunStatus
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

// RunFilter narrows RunStore.ListRuns. Zero fields do not filter.
type RunFilter struct {
	Thread string
	// Status keeps records with one of these statuses.
	Status []RunStatus
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

// ErrRunConflict: a conditional RunUpdate found the record in another status.
var ErrRunConflict = errors.New("checkpoint: run record is in another status")

// RunStore keeps run records. A Store that is a RunStore (memory, SQLite
// and PostgreSQL are) keeps them in the same database as its checkpoints.
// Implementations must be safe for concurrent use; CreateRun and UpdateRun
// are durable when they return.
type RunStore interface {
	// CreateRun stores a new record (Status RunQueued when empty) and
	// returns it with Seq, Created and Updated set, and created true. When
	// rec.Key is in use, nothing is stored: the record holding the key is
	// returned with created false. An ID in use is an *InvalidError.
	CreateRun(ctx context.Context, rec RunRecord) (out RunRecord, created bool, err error)
	// UpdateRun applies u to the record with the id and returns it; a
	// missing record is ErrNotFound.
	UpdateRun(ctx context.Context, id string, u RunUpdate) (RunRecord, error)
	// GetRun returns the record with the id, or ErrNotFound.
	GetRun(ctx context.Context, id string) (RunRecord, error)
	// GetRunByKey returns the record holding the key, or ErrNotFound.
	GetRunByKey(ctx context.Context, key string) (RunRecord, error)
	// ListRuns returns the records f keeps, newest (highest Seq) first.
	ListRuns(ctx context.Context, f RunFilter) ([]RunRecord, error)
	// DeleteRuns removes the thread's records (when the thread is deleted).
	DeleteRuns(ctx context.Context, thread string) error
	// PruneRuns removes the records in a terminal status last updated
	// before the time, and returns how many.
	PruneRuns(ctx context.Context, updatedBefore time.Time) (int, error)
}

// ValidateRun reports the first field of a new record a RunStore cannot
// accept: an empty id or thread, an unknown status, Input or Result that
// is not one JSON value, or text that is not valid UTF-8 or holds a NUL.
func ValidateRun(r RunRecord) error {
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

// ValidateRunUpdate reports the first field of u a RunStore cannot accept.
func ValidateRunUpdate(u RunUpdate) error {
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

// MatchRun reports whether f keeps r (for stores that filter in memory).
func MatchRun(r RunRecord, f RunFilter) bool {
	switch {
	case f.Thread != "" && r.Thread != f.Thread,
		len(f.Status) > 0 && !slices.Contains(f.Status, r.Status),
		f.Before > 0 && r.Seq >= f.Before,
		!f.UpdatedBefore.IsZero() && !r.Updated.Before(f.UpdatedBefore):
		return false
	}
	return MatchMetadata(r.Labels, f.Labels)
}

// ApplyRunUpdate returns r changed by u at now, or ErrRunConflict (for
// stores that update in memory; the SQL stores do the same in SQL).
func ApplyRunUpdate(r RunRecord, u RunUpdate, now time.Time) (RunRecord, error) {
	if len(u.From) > 0 && !slices.Contains(u.From, r.Status) || u.IfOwner != "" && r.Owner != u.IfOwner {
		return r, ErrRunConflict
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
