// Package metrics keeps Prometheus metrics of the agent's runs and the
// server's requests (github.com/prometheus/client_golang): Metrics is an
// agent.Observer and a server request observer, and Handler serves the
// text format at /metrics. Labels are bounded: node, capability, role,
// provider, severity, outcome, route pattern and status code, never a
// thread, run or user. docs/observability.md lists every metric.
package metrics
