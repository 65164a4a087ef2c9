// Package otlp exports the agent's traces to an OpenTelemetry collector over
// OTLP (gRPC or HTTP). It is the one telemetry package that pulls in gRPC
// and protocol buffers: an application links it in only by importing it
// (package wiring does, for capgraph's own commands), and the exporter is
// started only when the configuration asks for it.
package otlp
