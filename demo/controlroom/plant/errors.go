package plant

import (
	"errors"
	"fmt"
)

// Sentinel kinds of the simulator's errors (errors.Is).
var (
	// ErrUnknownChannel: no channel has that name.
	ErrUnknownChannel = errors.New("unknown channel")
	// ErrNotWritable: the channel is read-only.
	ErrNotWritable = errors.New("channel is read-only")
	// ErrLimitViolation: a setpoint outside the channel's limits.
	ErrLimitViolation = errors.New("value outside the channel's limits")
	// ErrTimeout: the (simulated) IOC or archiver did not answer in time; transient.
	ErrTimeout = errors.New("timeout")
	// ErrDisconnected: the archiver is unreachable; not transient.
	ErrDisconnected = errors.New("archiver disconnected")
	// ErrNoData: the requested time range has no archived samples.
	ErrNoData = errors.New("no archived data in the requested range")
	// ErrNoMatch: channel finding found no channel for the query.
	ErrNoMatch = errors.New("no matching channel")
	// ErrAmbiguousWrite: a write request does not say clearly which value
	// goes to which channel.
	ErrAmbiguousWrite = errors.New("ambiguous write request")
	// ErrVerification: a readback after a write does not match the setpoint.
	ErrVerification = errors.New("readback does not match the setpoint")
)

// ChannelError is a failed operation on one channel.
type ChannelError struct {
	Op      string // "read", "write", "archive"
	Channel string
	Err     error
}

func (e *ChannelError) Error() string { return fmt.Sprintf("%s %s: %v", e.Op, e.Channel, e.Err) }
func (e *ChannelError) Unwrap() error { return e.Err }

// LimitError is a setpoint outside a channel's limits.
type LimitError struct {
	Channel   string
	Value     float64
	Low, High float64
	Units     string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: %g %s is outside the limits %g to %g %s", e.Channel, e.Value, e.Units, e.Low, e.High, e.Units)
}
func (e *LimitError) Unwrap() error { return ErrLimitViolation }
