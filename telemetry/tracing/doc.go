// Package tracing turns the agent's runs into OpenTelemetry spans: one per
// run (or resume), per node, per capability attempt and per LLM call, with
// the attributes docs/observability.md lists. It needs only the
// OpenTelemetry API and a TracerProvider; exporting the spans (OTLP) is
// telemetry/otlp's, so an application that traces in-process or with its
// own exporter links in no gRPC.
//
// Spans are made from the agent's events, after the fact, with the times
// the events carry: nothing is added to a node's own path.
package tracing
