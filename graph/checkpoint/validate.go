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
	// Field names are built only on failure: Put is on the engine's hot path.
	if r := textProblem(cp.ThreadID); r != "" {
		return &InvalidError{Field: "thread_id", Reason: r}
	}
	for i, n := range cp.Next {
		if r := textProblem(n); r != "" {
			return &InvalidError{Field: "next[" + strconv.Itoa(i) + "]", Reason: r}
		}
	}
	var bad []string // metadata keys with a problem, sorted so the same input names the same field
	for k, v := range cp.Metadata {
		if textProblem(k) != "" || textProblem(v) != "" {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		k := bad[0]
		if r := textProblem(k); r != "" {
			return &InvalidError{Field: "metadata key " + strconv.Quote(k), Reason: r}
		}
		return &InvalidError{Field: "metadata[" + strconv.Quote(k) + "]", Reason: textProblem(cp.Metadata[k])}
	}
	return nil
}

// textProblem says why s cannot be stored as text by every store, or "".
func textProblem(s string) string {
	// Fast path for what every Put carries: a short ASCII thread id and node
	// names, checked in one pass.
	ascii := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == 0 || c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return ""
	}
	switch {
	case !utf8.ValidString(s):
		return "not valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL byte"
	}
	return ""
}

// ValidateWrites reports the first argument of a PutWrites call a Store cannot accept.
func ValidateWrites(threadID string, checkpointID uuid.UUID, writes []Write) error {
	switch {
	case threadID == "":
		return &InvalidError{Field: "thread_id", Reason: "empty"}
	case checkpointID == uuid.Nil:
		return &InvalidError{Field: "checkpoint_id", Reason: "nil uuid"}
	}
	if r := textProblem(threadID); r != "" {
		return &InvalidError{Field: "thread_id", Reason: r}
	}
	for i, w := range writes {
		field, reason := "", ""
		switch {
		case w.Task == "":
			field, reason = "task", "empty"
		case w.Kind == "":
			field, reason = "kind", "empty"
		default:
			if reason = textProblem(w.Task); reason != "" {
				field = "task"
			} else if reason = textProblem(string(w.Kind)); reason != "" {
				field = "kind"
			}
		}
		if reason != "" {
			return &InvalidError{Field: "writes[" + strconv.Itoa(i) + "]." + field, Reason: reason}
		}
	}
	return nil
}
