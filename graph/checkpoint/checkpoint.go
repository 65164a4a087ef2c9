package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
)

// ErrNotFound is returned by Store.Get when a thread or checkpoint does not exist.
var ErrNotFound = errors.New("checkpoint: not found")

// Checkpoint is the durable record written after every step of a run. It holds
// the whole truth needed to continue the run: the state and the nodes to run next.
type Checkpoint struct {
	ThreadID string    `json:"thread_id"`
	ID       uuid.UUID `json:"id"`        // UUIDv7: sorts by creation time
	ParentID uuid.UUID `json:"parent_id"` // uuid.Nil for the first checkpoint of a thread
	RunID    uuid.UUID `json:"run_id"`    // the run (one turn) that wrote it
	Step     int       `json:"step"`      // 0 = the input checkpoint of a run
	// State is the encoded graph state after the step.
	State json.RawMessage `json:"state"`
	// Next lists the nodes to run next; empty means the run finished.
	Next []string `json:"next,omitempty"`
	// NotBefore is the earliest time the next step may start (a durable retry delay).
	NotBefore time.Time `json:"not_before,omitzero"`
	// Metadata is free-form, filterable data (owner, tenant, title, ...).
	Metadata map[string]string `json:"metadata,omitempty"`
	Created  time.Time         `json:"created"`
}

// WriteKind says what a pending write carries.
type WriteKind string

const (
	// WriteUpdate is the encoded update of a node that finished within a step
	// whose siblings have not all finished yet.
	WriteUpdate WriteKind = "update"
	// WriteError records the error of a node that failed.
	WriteError WriteKind = "error"
	// WriteInterrupt records an interrupt raised by a node; its value is the payload.
	WriteInterrupt WriteKind = "interrupt"
	// WriteResume records the value a human answered an interrupt with.
	WriteResume WriteKind = "resume"
)

// Write is a pending write: output of one task (node) computed from a checkpoint
// before the step that contains it completed. Writes are keyed by
// (checkpoint, task, kind): writing the same key again replaces the value, so
// writes are idempotent.
type Write struct {
	Task  string          `json:"task"`
	Kind  WriteKind       `json:"kind"`
	Value json.RawMessage `json:"value,omitempty"`
}

// Tuple is a checkpoint with the pending writes recorded against it.
type Tuple struct {
	Checkpoint Checkpoint `json:"checkpoint"`
	Writes     []Write    `json:"writes,omitempty"`
}

// ListOptions narrows Store.List. Results are newest first.
type ListOptions struct {
	// Before, when not uuid.Nil, returns only checkpoints older than this id.
	Before uuid.UUID
	// Limit caps the number of results; 0 means no limit.
	Limit int
	// Filter keeps checkpoints whose metadata contains every key with the same value.
	Filter map[string]string
}

// ThreadFilter narrows Store.Threads.
type ThreadFilter struct {
	// ThreadID, when set, keeps only that thread: a lookup by the store's
	// key, where a Metadata filter alone reads every thread.
	ThreadID string
	// Metadata keeps threads whose latest checkpoint has every key with the same value.
	Metadata map[string]string
	// Limit caps the number of results; 0 means no limit.
	Limit int
	// Before, when not uuid.Nil, keeps threads whose latest checkpoint is
	// older than this checkpoint id: pass the Latest of the last thread of
	// one page to get the next. A thread updated between two pages moves
	// to the front and is not listed again.
	Before uuid.UUID
}

// ThreadInfo summarises one thread.
type ThreadInfo struct {
	ThreadID string            `json:"thread_id"`
	Latest   uuid.UUID         `json:"latest"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Created  time.Time         `json:"created"` // time of the first checkpoint
	Updated  time.Time         `json:"updated"` // time of the latest checkpoint
}

// Store persists checkpoints. Implementations must be safe for concurrent use.
// Put must be durable when it returns: the engine starts the next step only then.
type Store interface {
	// Put stores one checkpoint.
	Put(ctx context.Context, cp Checkpoint) error
	// PutWrites stores pending writes against an existing checkpoint.
	PutWrites(ctx context.Context, threadID string, checkpointID uuid.UUID, writes []Write) error
	// Get returns a checkpoint and its pending writes; uuid.Nil means the latest
	// of the thread. A missing thread or checkpoint is ErrNotFound.
	Get(ctx context.Context, threadID string, checkpointID uuid.UUID) (Tuple, error)
	// List returns a thread's checkpoints, newest first.
	List(ctx context.Context, threadID string, opts ListOptions) ([]Checkpoint, error)
	// Threads lists threads, most recently updated first.
	Threads(ctx context.Context, filter ThreadFilter) ([]ThreadInfo, error)
	// DeleteThread removes a thread's checkpoints and writes. Deleting a missing
	// thread is not an error.
	DeleteThread(ctx context.Context, threadID string) error
}

// TuplePutter is implemented by a Store that can write a checkpoint and
// pending writes against it in one durable transaction: after a crash both
// are there or neither is, and no reader sees the checkpoint without them.
// The engine stores a human's answer to an interrupt so (the answer's
// checkpoint and its resume writes); with a Store that lacks it, a crash
// between the checkpoint and its writes loses the answer, and the thread
// reads as cut rather than interrupted. Every store of this module
// implements it; so must a wrapper around one (forward the method).
type TuplePutter interface {
	// PutTuple stores t.Checkpoint as Put does and t.Writes against it as
	// PutWrites does, all or nothing.
	PutTuple(ctx context.Context, t Tuple) error
}

// FirstPutter is implemented by a Store that can store a thread's first
// checkpoint in one step with the check that the thread has none: the
// engine's Init then does not read the thread first, and two callers
// initializing the same thread store one first checkpoint between them.
// Every store of this module implements it; with a Store that lacks it,
// Init reads the thread, then puts (so a wrapper around one should forward
// the method).
type FirstPutter interface {
	// PutFirst stores cp as Put does when cp's thread has no checkpoint, and
	// reports whether it did; a thread that has one is left as it is.
	PutFirst(ctx context.Context, cp Checkpoint) (stored bool, err error)
}

// InMemory is implemented by a Store that keeps everything in the
// process's memory (memory.New, memory.NewLatestOnly): a write waits for no
// I/O, and nothing outlives the process. A caller that would overlap a
// write with other work to hide its latency — the engine's writer under
// graph.DurabilityAsync, a server making a new thread beside the run's
// record — writes to such a store in place: a goroutine and its wake-ups
// would cost more than the write.
type InMemory interface {
	InMemory() bool
}

// IsInMemory reports whether s is an InMemory store that says it is.
func IsInMemory(s any) bool {
	m, ok := s.(InMemory)
	return ok && m.InMemory()
}

// MatchMetadata reports whether md contains every key of filter with the same value.
func MatchMetadata(md, filter map[string]string) bool {
	for k, v := range filter {
		if got, ok := md[k]; !ok || got != v {
			return false
		}
	}
	return true
}
