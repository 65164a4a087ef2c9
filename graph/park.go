package graph

import (
	"context"
	"time"
)

// Parking: a run whose route named a NotBefore far ahead need not hold a
// goroutine (and a replica) while it waits. Under WithParkAfter, a wait
// longer than the threshold is not waited for: the run ends at once with
// StatusWaiting, its last checkpoint holding the NotBefore (it was durable
// before the wait began), and whoever called it resumes it then (Resume
// with a nil value). A run resumed early waits, or parks again, for what
// is left. Which step runs next and when is unchanged: parking only moves
// the wait out of the run.

type parkKey struct{}

// WithParkAfter makes the runs under ctx park instead of waiting when a
// NotBefore is more than after away (see StatusWaiting). after <= 0: they
// always wait (the default).
func WithParkAfter(ctx context.Context, after time.Duration) context.Context {
	return context.WithValue(ctx, parkKey{}, after)
}

// parkAfter is the threshold of WithParkAfter (0 none).
func parkAfter(ctx context.Context) time.Duration {
	d, _ := ctx.Value(parkKey{}).(time.Duration)
	return d
}
