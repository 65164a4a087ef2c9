package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// InterruptError is returned by a node to pause the run for a human. The run
// stops with status Interrupted after writing a checkpoint; Resume re-enters
// the node with the answer, available through ResumeValue. The node's update is
// discarded: code before the interrupt must be safe to run again.
type InterruptError struct {
	Node    string          // set by the engine
	Payload json.RawMessage // what the human is asked, encoded
}

func (e *InterruptError) Error() string {
	return fmt.Sprintf("graph: node %q interrupted the run", e.Node)
}

// Interrupt returns the error a node returns to pause the run with payload,
// encoded as JSON (by its AppendJSON when it is a JSONAppender). A payload
// that cannot be encoded is an *EncodeError, which fails the node like any
// error it returns; a payload type that may hold what JSON refuses (±Inf,
// NaN) encodes it in a form of its own.
func Interrupt(payload any) error {
	b, err := encodeValue(payload)
	if err != nil {
		return &EncodeError{What: "the interrupt payload", Err: err}
	}
	return &InterruptError{Payload: b}
}

// encodeValue encodes an interrupt's payload or a resume value: by its
// AppendJSON when it is a JSONAppender, else with json.Marshal.
func encodeValue(v any) ([]byte, error) {
	if a, ok := v.(JSONAppender); ok {
		return a.AppendJSON(nil)
	}
	return json.Marshal(v)
}

// IsInterrupt reports whether err is an interrupt and returns it.
func IsInterrupt(err error) (*InterruptError, bool) {
	var ie *InterruptError
	ok := errors.As(err, &ie)
	return ie, ok
}

type resumeKey struct{}

// ResumeValue returns the answer given to Resume when the current node is being
// re-entered after its interrupt; ok is false on an ordinary execution.
func ResumeValue(ctx context.Context) (value json.RawMessage, ok bool) {
	v, ok := ctx.Value(resumeKey{}).(json.RawMessage)
	return v, ok
}

// WithResumeValue returns a context carrying a resume value, as the engine
// passes it to a re-entered node. It is exported for testing nodes in isolation.
func WithResumeValue(ctx context.Context, value json.RawMessage) context.Context {
	return context.WithValue(ctx, resumeKey{}, value)
}
