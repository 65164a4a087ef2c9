package logging

// Nop returns a Logger that discards everything: the default wherever no
// logger is configured, so callers never need a nil check.
func Nop() Logger { return nop{} }

type nop struct{}

func (nop) Debug(string, ...any) {}
func (nop) Info(string, ...any)  {}
func (nop) Warn(string, ...any)  {}
func (nop) Error(string, ...any) {}
func (n nop) With(...any) Logger { return n }
