package runstore

import "context"

type deferrableKey struct{}

// Deferrable marks the record writes made under ctx (CreateRun, UpdateRun)
// as ones that need not commit at once — nobody waits on them (a run's end
// written after its answer was sent), or another write the caller is about
// to make will come within microseconds (a new thread's, beside its first
// run's record): a store that commits writes together may hold such a
// write for a few milliseconds, until another commit takes it along,
// instead of committing it alone (SQLite does). The call still returns
// only once the write is durable.
func Deferrable(ctx context.Context) context.Context {
	return context.WithValue(ctx, deferrableKey{}, true)
}

// IsDeferrable reports whether ctx was marked by Deferrable.
func IsDeferrable(ctx context.Context) bool {
	d, _ := ctx.Value(deferrableKey{}).(bool)
	return d
}
