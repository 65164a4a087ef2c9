// Package telemetry connects the agent's runs to the outside: Join combines
// observers (agent.Observer), and Logs writes one structured log line per
// significant event of a run through the logging interface. Traces are in
// telemetry/tracing (OpenTelemetry), their export in telemetry/otlp, and
// Prometheus metrics in telemetry/metrics; this package imports neither, so
// an application that only logs links in no telemetry library.
// docs/observability.md lists what is emitted.
package telemetry
