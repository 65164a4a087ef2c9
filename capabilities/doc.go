// Package capabilities is what an application implements: Capability (Go code
// that reads a control system, queries an archive, writes a setpoint), the
// Registry that holds them, the typed context store through which steps pass
// data, the artifacts a step shows people (time series, tables, figures,
// links), and the failure vocabulary — Severity, Classification, RetryPolicy —
// that decides how the agent recovers when a capability fails.
//
// A read capability is capabilities.New over a struct of parameters and a
// typed context key (Key); Define takes plain fields; a type implementing
// Capability and the optional interfaces does the rest. Every error type
// and sentinel of this package (and the others) is in docs/errors.md, with
// the severity the default classifier gives it.
//
// It imports only the standard library, so an application's capability
// package pulls in nothing heavy.
package capabilities
