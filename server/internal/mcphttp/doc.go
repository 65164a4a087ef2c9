// Package mcphttp is the agent as an MCP server at /mcp (streamable HTTP,
// stateless): the mcp package's handler over the server's threads and
// runs, reached through turns.Turns, with every error a JSON-RPC error
// object.
package mcphttp
