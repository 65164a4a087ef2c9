package mcp

import (
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

// Transport is how capgraph talks to an MCP server.
type Transport string

const (
	// TransportStdio runs the server as a child process and speaks
	// newline-delimited JSON-RPC over its stdin and stdout.
	TransportStdio Transport = "stdio"
	// TransportHTTP speaks the streamable HTTP transport to a URL.
	TransportHTTP Transport = "http"
)

// Defaults of ServerConfig and ToolConfig fields left zero.
const (
	// DefaultTimeout bounds one tool call.
	DefaultTimeout = 60 * time.Second
	// DefaultConnectTimeout bounds starting a server (or reaching it) and
	// the MCP handshake.
	DefaultConnectTimeout = 30 * time.Second
	// DefaultMaxRestarts is how many times in a row a server that stopped
	// (or could not be reached) is started again before its tools fail
	// CRITICAL; a successful call resets the count.
	DefaultMaxRestarts = 5
	// DefaultRestartBackoff is the wait before the second restart in a row;
	// it doubles with each further one, up to MaxRestartBackoff. The first
	// restart is immediate.
	DefaultRestartBackoff = time.Second
	// MaxRestartBackoff caps the wait between restarts; a server whose
	// restarts are exhausted is tried again once per this interval.
	MaxRestartBackoff = 30 * time.Second
	// DefaultIsErrorSeverity is the severity of a tool result with isError.
	DefaultIsErrorSeverity = capabilities.Critical
)

// InheritedEnv lists the variables of capgraph's own environment a stdio
// server gets (when set), beside its configured Env: enough to find
// programs and a home directory, and none of capgraph's secrets (model API
// keys, database passwords). The MCP reference clients do the same.
var InheritedEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ",
	// Windows needs these to start most programs.
	"APPDATA", "LOCALAPPDATA", "PATHEXT", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERPROFILE", "COMSPEC"}

// ServerConfig configures one MCP server whose tools become capabilities.
type ServerConfig struct {
	// Name identifies the server in errors, logs and error reports (the key
	// under mcp_servers in the configuration file).
	Name string
	// Transport: TransportStdio or TransportHTTP; empty means stdio when
	// Command is set and http when URL is.
	Transport Transport

	// Command, Args, Env and Dir start a stdio server. Env is added to the
	// InheritedEnv variables of capgraph's environment.
	Command string
	Args    []string
	Env     map[string]string
	Dir     string

	// URL is the streamable HTTP endpoint of an http server.
	URL string
	// HeadersEnv maps an HTTP header to the environment variable holding
	// its value ({"Authorization": "WIKI_MCP_TOKEN"}), read at every
	// connection, so secrets stay out of the configuration file.
	HeadersEnv map[string]string

	// Prefix starts every capability name of this server ("wiki" →
	// "wiki_search"); empty means the server's name, made lower_snake_case.
	Prefix string
	// Optional lets start-up go on without this server when it cannot be
	// started (its tools are then missing); otherwise that fails start-up.
	Optional bool
	// Timeout bounds one tool call (default DefaultTimeout); a tool's own
	// ToolConfig.Timeout wins.
	Timeout time.Duration
	// ConnectTimeout bounds a start or reconnection with its handshake
	// (default DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// MaxRestarts bounds restarts in a row (default DefaultMaxRestarts).
	MaxRestarts int

	// ReadOnlyTools are tools declared free of side effects, whatever the
	// server's annotations say.
	ReadOnlyTools []string
	// IncludeTools, when set, lists the only tools that become
	// capabilities; ExcludeTools lists tools that do not.
	IncludeTools []string
	ExcludeTools []string
	// Tools configures single tools, by the server's tool name.
	Tools map[string]ToolConfig
}

// ToolConfig overrides what the server says about one tool.
type ToolConfig struct {
	// SideEffects, when set, declares whether the tool acts on the outside
	// world; unset, a tool has side effects unless the server annotates it
	// readOnlyHint or it is in ReadOnlyTools.
	SideEffects *bool
	// Idempotent, when set, says whether repeating a call with the same
	// arguments has no further effect; unset, the server's idempotentHint
	// decides. A side-effecting tool that is not idempotent is never called
	// again when a call's outcome is unknown (a timeout, a lost connection).
	Idempotent *bool
	// IsErrorSeverity is how a result with isError is recovered (default
	// DefaultIsErrorSeverity).
	IsErrorSeverity capabilities.Severity
	// Timeout bounds one call of this tool (default: the server's).
	Timeout time.Duration
	// Description replaces the server's description of the tool in the
	// prompts and the offline classifier.
	Description string
}

func (c ServerConfig) transport() Transport {
	switch {
	case c.Transport != "":
		return c.Transport
	case c.URL != "" && c.Command == "":
		return TransportHTTP
	}
	return TransportStdio
}

func (c ServerConfig) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c ServerConfig) connectTimeout() time.Duration {
	if c.ConnectTimeout > 0 {
		return c.ConnectTimeout
	}
	return DefaultConnectTimeout
}

func (c ServerConfig) maxRestarts() int {
	if c.MaxRestarts > 0 {
		return c.MaxRestarts
	}
	return DefaultMaxRestarts
}
