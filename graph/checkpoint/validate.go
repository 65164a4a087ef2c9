package checkpoint

import (
	"errors"
	"strconv"

	"github.com/google/uuid"
)

// ErrInvalid is the kind of every error a Store returns for input it refuses
// (an empty thread id, a nil checkpoint id, a write without task or kind).
// Retrying such a call cannot succeed.
var ErrInvalid = errors.New("checkpoint: invalid input")

// InvalidError names the field a Store refused and why. It matches ErrInvalid.
type InvalidError struct {
	Field  string // e.g. "thread_id", "id", "writes[2].task"
	Reason string
}

func (e *InvalidError) Error() string {
	return "checkpoint: invalid " + e.Field + ": " + e.Reason
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// ValidateCheckpoint reports the first field of cp a Store cannot accept. Stores
// call it at the top of Put so that every implementation refuses the same input.
func ValidateCheckpoint(cp Checkpoint) error {
	switch {
	case cp.ThreadID == "":
		return &InvalidError{Field: "thread_id", Reason: "empty"}
	case cp.ID == uuid.Nil:
		return &InvalidError{Field: "id", Reason: "nil uuid"}
	case cp.Step < 0:
		return &InvalidError{Field: "step", Reason: "negative"}
	}
	return nil
}

// ValidateWrites reports the first argument of a PutWrites call a Store cannot accept.
func ValidateWrites(threadID string, checkpointID uuid.UUID, writes []Write) error {
	switch {
	case threadID == "":
		return &InvalidError{Field: "thread_id", Reason: "empty"}
	case checkpointID == uuid.Nil:
		return &InvalidError{Field: "checkpoint_id", Reason: "nil uuid"}
	}
	for i, w := range writes {
		switch {
		case w.Task == "":
			return &InvalidError{Field: "writes[" + strconv.Itoa(i) + "].task", Reason: "empty"}
		case w.Kind == "":
			return &InvalidError{Field: "writes[" + strconv.Itoa(i) + "].kind", Reason: "empty"}
		}
	}
	return nil
}
