package capabilities

import (
	"context"
	"fmt"
	"time"
)

// DefaultDeadline bounds one attempt of a capability that states no
// deadline of its own (Deadliner, Definition.Deadline) and that the
// configuration gives none: long enough for an archive query or an
// analysis, short enough that a hung read does not take the turn's whole
// wall clock.
const DefaultDeadline = 60 * time.Second

// AbandonGrace is how long the framework waits, once an attempt's context
// is done (its deadline passed, the run stopped), for a capability — or a
// model call — to return before it abandons it and moves on; its late
// result is discarded. Short, so that a stop stops within a second even
// inside code that ignores its context.
const AbandonGrace = 250 * time.Millisecond

// Deadliner gives a capability its own per-attempt deadline (0: none
// stated). The application's configuration for the capability wins over
// it; it wins over the configured default.
type Deadliner interface {
	Deadline() time.Duration
}

// DeadlineError is an attempt that passed its deadline: its context was
// cancelled and it either returned Err or, ignoring the cancellation, did
// not return at all (Abandoned: its late result, should it come, is
// discarded). It matches context.DeadlineExceeded and is RETRIABLE, kind
// timeout, under the capability's retry policy; a side-effecting attempt
// abandoned this way has an unknown outcome and is never retried blind
// (docs/safety.md).
type DeadlineError struct {
	Capability string
	Deadline   time.Duration
	Abandoned  bool
	Err        error
}

func (e *DeadlineError) Error() string {
	msg := fmt.Sprintf("%s did not finish within its deadline of %s", e.Capability, e.Deadline)
	if e.Abandoned {
		return msg + "; it did not stop when cancelled and was abandoned"
	}
	if e.Err != nil {
		return msg + ": " + e.Err.Error()
	}
	return msg
}

// Unwrap exposes context.DeadlineExceeded and the capability's own error.
func (e *DeadlineError) Unwrap() []error {
	if e.Err == nil {
		return []error{context.DeadlineExceeded}
	}
	return []error{context.DeadlineExceeded, e.Err}
}

// Classification: RETRIABLE, kind timeout, whatever the capability's own
// error said (the deadline, not the capability, ended the attempt).
func (e *DeadlineError) Classification() Classification {
	return Classification{Severity: Retriable, Kind: KindTimeout, UserMessage: e.Error()}
}
