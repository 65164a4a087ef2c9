// Package mcp connects capgraph to the Model Context Protocol, both ways.
//
// As a client, Connect starts (stdio) or reaches (streamable HTTP) the
// configured MCP servers and turns each of their tools into a capability
// (Tool): the tool's description feeds the classifier, its input schema
// the planner, and the step's parameters are checked against that schema
// before the call. The tool's result is stored as a ToolResult (text,
// structured content, images with their media type, resources). A tool has
// side effects — and so passes the agent's execution gate: write switch,
// approval bound to its exact arguments, intent, allowed capabilities,
// audit — unless the server annotates it readOnlyHint or the configuration
// says so. Failures carry their severity: an unreachable or stopped server
// is RETRIABLE (and restarted, a bounded number of times in a row, with a
// growing wait), a result with isError is CRITICAL unless configured per
// tool, arguments that do not fit the schema are REPLANNING, a call past
// its timeout is RETRIABLE — except that a side-effecting tool that is not
// idempotent is never called again when the outcome of a call is unknown.
//
// As a server, NewHandler serves a capgraph agent over streamable HTTP to
// MCP clients (desktop assistants, IDEs) through an Asker, which the HTTP
// server implements behind its API keys and tenants (server/internal/mcphttp).
//
// This is the only package that imports the MCP Go SDK. docs/mcp.md
// describes configuration, safety and failures for users.
package mcp
