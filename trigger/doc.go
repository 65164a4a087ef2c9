// Package trigger serves webhook triggers, POST /api/triggers/{name}: a
// call signed with the trigger's HMAC secret (its timestamp within a few
// minutes of the server's clock) starts a run whose input is the
// trigger's template filled from the JSON payload, limited to the
// trigger's capabilities and rate, writes off unless the trigger says so
// (then the approval policy applies: a write waits for a human). It
// answers 202 with the run id before the run ends. Handler is an
// http.Handler of its own, tested alone; the server mounts it
// (docs/triggers.md).
package trigger
