// Package capabilities is what an application implements: Capability (Go code
// that reads a control system, queries an archive, writes a setpoint), the
// Registry that holds them, the typed context store through which steps pass
// data, the artifacts a step shows people (time series, tables, figures,
// links), and the failure vocabulary — Severity, Classification, RetryPolicy —
// that decides how the agent recovers when a capability fails.
//
// It imports only the standard library, so an application's capability
// package pulls in nothing heavy.
package capabilities
