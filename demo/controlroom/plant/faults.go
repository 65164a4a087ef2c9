package plant

// Faults injects transient failures so the agent's retries and error
// handling can be exercised. Counts are consumed one per failed call, in
// order: ReadTimeouts: 2 makes the next two reads time out and the third
// succeed.
type Faults struct {
	// ReadTimeouts: the next N channel reads fail with ErrTimeout.
	ReadTimeouts int `json:"read_timeouts,omitempty"`
	// WriteTimeouts: the next N writes fail with ErrTimeout (nothing written).
	WriteTimeouts int `json:"write_timeouts,omitempty"`
	// ArchiveTimeouts: the next N archive queries fail with ErrTimeout.
	ArchiveTimeouts int `json:"archive_timeouts,omitempty"`
	// ArchiverDown makes every archive query fail with ErrDisconnected.
	ArchiverDown bool `json:"archiver_down,omitempty"`
	// StuckWrites: writes are accepted but the readback keeps the old value
	// (verification fails).
	StuckWrites bool `json:"stuck_writes,omitempty"`
}

// take consumes one fault from *n, reporting whether there was one.
func take(n *int) bool {
	if *n > 0 {
		*n--
		return true
	}
	return false
}
