package logging

// Logger is a leveled structured logger. keyvals alternate keys (strings)
// and values: logger.Info("step done", "capability", name, "attempt", 2).
// An odd trailing key is logged with the value "(MISSING)"; a non-string key
// is formatted with fmt. Implementations are safe for concurrent use.
type Logger interface {
	Debug(msg string, keyvals ...any)
	Info(msg string, keyvals ...any)
	Warn(msg string, keyvals ...any)
	Error(msg string, keyvals ...any)
	// With returns a logger that adds keyvals to every entry.
	With(keyvals ...any) Logger
}
