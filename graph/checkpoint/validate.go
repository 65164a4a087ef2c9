package checkpoint

import (
	"errors"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

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
// Strings (thread id, next nodes, metadata) must be valid UTF-8 without NUL
// bytes: PostgreSQL text and jsonb cannot hold NUL, and JSON encoding would
// silently replace invalid UTF-8, so a store could not give them back equal.
func ValidateCheckpoint(cp Checkpoint) error {
	switch {
	case cp.ThreadID == "":
		return &InvalidError{Field: "thread_id", Reason: "empty"}
	case cp.ID == uuid.Nil:
		return &InvalidError{Field: "id", Reason: "nil uuid"}
	case cp.Step < 0:
		return &InvalidError{Field: "step", Reason: "negative"}
	}
	if err := text("thread_id", cp.ThreadID); err != nil {
		return err
	}
	for i, n := range cp.Next {
		if err := text("next["+strconv.Itoa(i)+"]", n); err != nil {
			return err
		}
	}
	// Sorted, so the same input always names the same field.
	keys := make([]string, 0, len(cp.Metadata))
	for k := range cp.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := text("metadata key "+strconv.Quote(k), k); err != nil {
			return err
		}
		if err := text("metadata["+strconv.Quote(k)+"]", cp.Metadata[k]); err != nil {
			return err
		}
	}
	return nil
}

// text checks that s can be stored as text by every store.
func text(field, s string) error {
	switch {
	case !utf8.ValidString(s):
		return &InvalidError{Field: field, Reason: "not valid UTF-8"}
	case strings.IndexByte(s, 0) >= 0:
		return &InvalidError{Field: field, Reason: "contains a NUL byte"}
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
	if err := text("thread_id", threadID); err != nil {
		return err
	}
	for i, w := range writes {
		prefix := "writes[" + strconv.Itoa(i) + "]"
		switch {
		case w.Task == "":
			return &InvalidError{Field: prefix + ".task", Reason: "empty"}
		case w.Kind == "":
			return &InvalidError{Field: prefix + ".kind", Reason: "empty"}
		}
		if err := text(prefix+".task", w.Task); err != nil {
			return err
		}
		if err := text(prefix+".kind", string(w.Kind)); err != nil {
			return err
		}
	}
	return nil
}
