// Package server is capgraph's HTTP face. One Server serves, over one
// listener:
//
//   - the OpenAI Chat Completions API under /v1 (GET /v1/models,
//     GET /v1/models/{id}, POST /v1/chat/completions, streaming and not), so
//     Open WebUI, LibreChat and every OpenAI SDK can talk to the agent;
//   - the OpenAI Responses API (POST /v1/responses, GET /v1/responses/{id};
//     a conversation goes on with previous_response_id);
//   - a native JSON + SSE API under /api (threads, runs with typed events and
//     reconnection by Last-Event-ID, state, plan, approvals, cancellation);
//   - AG-UI at POST /agui for the built-in web page served at GET /;
//   - MCP at /mcp (streamable HTTP) for MCP clients: the agent's tools
//     ask and list_threads (package mcp);
//   - artifacts: a thread's artifacts under /api/threads/{thread}/artifacts,
//     and the signed image links of chat answers under /v1/artifacts
//     (Config.Artifacts);
//   - the audit log at GET /api/audit (admin keys), GET /api/info for the
//     page, GET /metrics when Config.Metrics is set, and
//     POST /api/triggers/{name} when Config.Triggers is set (package
//     trigger: HMAC-signed calls that start a run);
//   - GET /healthz, the only route that needs no key when keys are set.
//
// New checks a Config (its groups: Auth, Limits, Cluster, Artifacts) and
// returns a Server; Run listens on Config.Addr until its context ends,
// Handler serves on a listener of the caller's, Shutdown stops the runs
// and joins every goroutine the server started. RecoverRuns answers the
// runs a crash cut (docs/reliability.md).
//
// The server knows the agent through one interface, Agent, and the
// optional features beside it (agent.go), which *agent.Agent all has — the
// compiler checks it. Identity comes from
// the API key alone (each key is a Principal); thread ids a client sends are
// mapped to internal ids derived from (tenant, principal, client id), so one
// principal can never address another's thread: it simply does not exist for
// them (404).
//
// Threads live in the agent's checkpoint store: the server writes the
// owner and the client's id into each turn's metadata and lists and finds
// threads there (threadlist.go), so they survive a restart. A Chat
// Completions conversation without a chat id is recognised by a digest of
// its transcript (transcript.go). A principal's allowed capabilities are
// handed to the agent, which enforces them; requests per minute and
// concurrent runs are limited per principal, and every capability attempt
// is audited. Request options may only tighten the agent's configured
// safety settings (403 otherwise, unless the key's MayRaise names the
// setting); admin keys read the agent's audit log (GET /api/audit). Every
// handler recovers from a panic with a logged 500 (panics.go).
//
// No browser acts for the operator (browser.go), with or without keys:
// every route answers only a Host that names the server (loopback names
// and Config.AllowedHosts, rule in package allowedhost), and a request that
// may change something is refused when a browser sent it for another
// site's page, or when its body is not JSON.
//
// The parts (docs/architecture.md, "The server"): the run manager in
// server/internal/runs (admission, a run's agent call, its event log and
// followers) over the lifecycle in server/internal/run; every protocol's
// wire format in its package under server/internal (AG-UI's, MCP's, Chat
// Completions' and the Responses API's handlers too, which reach the
// server only through the turns.Turns and chatturn.Chats this package
// implements, and the native API's, through turns.Turns and the
// native.Threads, native.Runs, native.Approvals and native.TimeTravel
// native.go implements); the helpers they share (apierror, reqbody, sse,
// jsonreply, turns; for chat answers chatturn, chatanswer, approvaltoken
// and transcripts). This package keeps Server, Config, the routing, the
// chat machinery behind chatturn.Chats, the threads, the run records and
// the admin routes (audit, evaluations, info).
//
// Approvals never hold a stream or a goroutine open: the run ends
// interrupted, the client is told (an assistant message with an approval
// token over Chat Completions, an interrupt outcome over AG-UI, an
// approval_required event natively), and a later request resumes it.
package server
