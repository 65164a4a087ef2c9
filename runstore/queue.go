package runstore

import (
	"context"
	"encoding/json"
	"time"
)

// Queue is a Store whose records several processes claim.
type Queue interface {
	Store
	// ClaimRun takes, for owner and ttl, one ready run: the oldest queued
	// record whose NotBefore has passed, or a running record whose lease
	// has expired (its owner died) or that has none (recorded before the
	// queue existed). Claimed, the record is running, owned
	// by owner, its Attempt counted, its lease ending ttl from now. id,
	// when not empty, claims that record only. ok is false when none is
	// ready. Processes never claim one record at once.
	ClaimRun(ctx context.Context, owner, id string, ttl time.Duration) (rec Record, ok bool, err error)
	// RenewRun extends owner's lease of a running record by ttl from now.
	// ErrConflict: the record is no longer running under owner (the
	// lease was lost; the run must stop). canceled reports that someone
	// asked to stop the run (RequestCancel).
	RenewRun(ctx context.Context, id, owner string, ttl time.Duration) (canceled bool, err error)
	// RequeueRun gives a running record of owner back to the queue, ready
	// at notBefore (zero: now), for any process to claim.
	RequeueRun(ctx context.Context, id, owner string, notBefore time.Time) error
	// RequestCancel marks the record so that its owner stops it (at its
	// next renewal, or at once through Signals).
	RequestCancel(ctx context.Context, id string) error
	// CountRunning counts the running records with unexpired leases whose
	// labels contain every key of labels with the same value.
	CountRunning(ctx context.Context, labels map[string]string) (int, error)
}

// Event is one event of a run, as its process numbered it (Seq from 1,
// increasing across the attempts of the run).
type Event struct {
	Seq  int             `json:"seq"`
	Data json.RawMessage `json:"data"`
}

// Events keeps the events of runs beside their records.
type Events interface {
	// AppendRunEvents stores events of the run; a Seq already stored is
	// kept as it was.
	AppendRunEvents(ctx context.Context, run string, events []Event) error
	// ListRunEvents returns the run's events with Seq > after, in order.
	ListRunEvents(ctx context.Context, run string, after int) ([]Event, error)
}

// SignalKind says what a Signal is about.
type SignalKind string

const (
	SignalQueued SignalKind = "queued" // a run is ready to be claimed
	SignalEvents SignalKind = "events" // a run has new events or a new status
	SignalCancel SignalKind = "cancel" // a run is asked to stop
	// SignalFollowed: a request on another process joined the run (an
	// SDK's retry through the load balancer), so its owner keeps it going
	// when its own clients leave. Lost, the run stops as if nobody
	// followed it, and the follower is told it was canceled.
	SignalFollowed SignalKind = "followed"
)

// Signal is a wake-up between processes; it carries no data of its own
// (the store holds that), so a lost signal delays, and loses nothing.
type Signal struct {
	Kind SignalKind
	Run  string
}

// Signals sends wake-ups to every process sharing the store.
type Signals interface {
	// Signal sends sig to every listener, this process's included.
	Signal(ctx context.Context, sig Signal) error
	// ListenRuns delivers the signals until ctx ends; the channel is
	// closed then, or when the connection is lost (listen again).
	ListenRuns(ctx context.Context) (<-chan Signal, error)
}

// RateCounter counts requests per key for every process sharing the store:
// a token bucket per key holding up to perMinute tokens and refilling at
// perMinute a minute, on the store's clock.
type RateCounter interface {
	// TakeToken takes a token from key's bucket (full at first use). ok
	// false: the bucket is empty and nothing was taken; wait says when
	// the next token is there.
	TakeToken(ctx context.Context, key string, perMinute int) (ok bool, wait time.Duration, err error)
}
