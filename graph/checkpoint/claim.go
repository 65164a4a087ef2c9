package checkpoint

import (
	"context"
	"time"
)

// Claimer is an optional interface of a Leaser that picks work itself: it
// finds threads whose latest checkpoint can be resumed without a human —
// something is next, and no interrupt or error write is pending (a run cut
// between steps) — whose lease nobody holds, and leases them to owner in the
// same step. Replicas claiming at once get disjoint threads and never wait
// for each other (PostgreSQL: FOR UPDATE SKIP LOCKED). Without a Claimer, a
// caller lists threads and tries AcquireLease on each.
type Claimer interface {
	ClaimResumable(ctx context.Context, owner string, ttl time.Duration, opts ClaimOptions) ([]Lease, error)
}

// ClaimOptions narrows Claimer.ClaimResumable.
type ClaimOptions struct {
	// Limit caps the threads claimed; 0 means 1. Claim few at a time: every
	// claimed lease must be renewed (or released) until its run is done.
	Limit int
	// Skip lists threads not to claim (those the caller handled already).
	Skip []string
	// Metadata, when set, keeps threads whose latest checkpoint's metadata
	// has every key with the same value (as ThreadFilter.Metadata): an
	// application claims only its own threads in a store it shares.
	Metadata map[string]string
}
