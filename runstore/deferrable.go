package runstore

import "context"

type deferrableKey struct{}

// Deferrable marks the record writes made under ctx (CreateRun, UpdateRun)
// as ones nobody is waiting on — a run's end written after its answer was
// sent: a store that commits writes together may hold such a write for a
// few milliseconds, until another commit takes it along, instead of
// committing it alone (SQLite does). The call still returns only once the
// write is durable.
func Deferrable(ctx context.Context) context.Context {
	return context.WithValue(ctx, deferrableKey{}, true)
}

// IsDeferrable reports whether ctx was marked by Deferrable.
func IsDeferrable(ctx context.Context) bool {
	d, _ := ctx.Value(deferrableKey{}).(bool)
	return d
}
