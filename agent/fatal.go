package agent

import (
	"errors"
	"fmt"

	"github.com/capgraph/capgraph/capabilities"
)

// Sentinel error kinds of the agent.
var (
	// ErrFatal: a FATAL failure aborted the turn (see *FatalError).
	ErrFatal = errors.New("agent: fatal error")
	// ErrBadRequest: a TurnRequest or Answer is invalid.
	ErrBadRequest = errors.New("agent: bad request")
	// ErrUnknownThread: the thread has no checkpoint.
	ErrUnknownThread = errors.New("agent: unknown thread")
)

// FatalError ends a turn without the error node: the failure was classified
// FATAL (the system itself is unusable, e.g. a safety interlock says stop).
// The run's last checkpoint is the state before the failing node.
type FatalError struct {
	// Node is the graph node that failed; Capability is set for a plan step.
	Node       string
	Capability string
	StepIndex  int
	// Classification is the FATAL classification.
	Classification capabilities.Classification
	// Err is the original error.
	Err error
}

func (e *FatalError) Error() string {
	msg := e.Classification.UserMessage
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("agent: fatal failure in %s: %s", e.Node, msg)
}

// Unwrap exposes ErrFatal and the original error.
func (e *FatalError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrFatal}
	}
	return []error{ErrFatal, e.Err}
}
