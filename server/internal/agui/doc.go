// Package agui is the AG-UI protocol's wire format (docs/frontends.md):
// the request a client POSTs (Input), the events it reads (Event), and
// Mapper, which turns one run's agent events into those events, keeping
// the bookkeeping the client's verifier checks (steps and messages closed
// before RUN_FINISHED, every tool call given a result, the shared state's
// plan in step with the checkpointed one). The route's handler, which
// opens the run, is the server's (server/agui.go).
package agui
