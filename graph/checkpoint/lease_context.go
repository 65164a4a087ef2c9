package checkpoint

import "context"

type leaseKey struct{}

// WithLease returns ctx carrying l. A Store that implements Leaser refuses a
// Put or PutWrites for l.Thread under such a ctx with ErrLeaseLost unless l
// is still held (fencing): a replica whose lease was taken over cannot
// overwrite the new holder's progress. The graph engine passes its run ctx to
// the store, so a caller only has to run the graph with this ctx.
func WithLease(ctx context.Context, l Lease) context.Context {
	return context.WithValue(ctx, leaseKey{}, l)
}

// LeaseFrom returns the lease ctx carries for thread, if any. A lease for
// another thread does not count: it fences only its own thread.
func LeaseFrom(ctx context.Context, thread string) (Lease, bool) {
	l, ok := ctx.Value(leaseKey{}).(Lease)
	if !ok || l.Thread != thread {
		return Lease{}, false
	}
	return l, true
}
