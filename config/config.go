package config

import (
	"github.com/capgraph/capgraph/capabilities"
)

// Duration is a length of time written as a Go duration string ("90s",
// "5m", "1h30m") or a number of seconds. It is capabilities.Duration so a
// retry policy's intervals need no conversion.
type Duration = capabilities.Duration

// Config is the whole configuration file. Parse and Load start from Default,
// so every key the file leaves out keeps its documented default. A setting
// the library (the agent, the server, the models) has a default for is left
// zero here, and the library's default applies: one source for each default
// (package wiring converts a Config into the libraries' configs).
type Config struct {
	// Models configures a model per role ("default", "task_extraction",
	// "classifier", "orchestrator", "response", "approval", "error"). A role
	// not listed uses "default"; fields a role leaves empty come from "default"
	// (see ModelFor). No models at all means offline mode.
	Models map[string]Model `yaml:"models"`
	// Fallback is what a node does when its model is unreachable: "none"
	// (the default: the failure is classified and recovered like any
	// other) or "offline" (the node's offline strategy answers instead).
	Fallback string `yaml:"fallback"`
	// Classifier configures capability selection.
	Classifier Classifier `yaml:"classifier"`
	// ModelCalls says which model calls a turn leaves out when it does not
	// need them.
	ModelCalls ModelCalls `yaml:"model_calls"`
	// Limits bound one turn.
	Limits Limits `yaml:"limits"`
	// Retry holds retry policies.
	Retry Retry `yaml:"retry"`
	// Deadlines bound one attempt of a capability.
	Deadlines Deadlines `yaml:"deadlines"`
	// Approval configures human approval.
	Approval Approval `yaml:"approval"`
	// ControlSystem holds the control-system safety switches.
	ControlSystem ControlSystem `yaml:"control_system"`
	// AgentControl holds the per-turn bypasses of infrastructure steps.
	AgentControl AgentControl `yaml:"agent_control"`
	// Store is where threads are checkpointed: "memory", "sqlite:PATH" or a
	// "postgres://…" URL. Empty means the application's default: SQLite in
	// its own data directory (wiring.DefaultStorePath).
	Store string `yaml:"store"`
	// Checkpoints says what the store keeps of finished turns.
	Checkpoints Checkpoints `yaml:"checkpoints"`
	// Server configures `capgraph serve`.
	Server Server `yaml:"server"`
	// Logging configures the log output.
	Logging Logging `yaml:"logging"`
	// Telemetry configures traces and metrics (docs/observability.md).
	Telemetry Telemetry `yaml:"telemetry"`
	// Schedules are runs `capgraph serve` starts at their due times, by
	// name (docs/schedules.md).
	Schedules map[string]Schedule `yaml:"schedules"`
	// Triggers are webhooks that start runs, POST /api/triggers/{name}, by
	// name (docs/triggers.md).
	Triggers map[string]Trigger `yaml:"triggers"`
	// MCPServers are MCP servers whose tools become capabilities, by name
	// (the name starts their capability names unless Prefix says otherwise).
	MCPServers map[string]MCPServer `yaml:"mcp_servers"`

	// source is the file name; lines maps a dotted key to the line it was
	// set on, so converters can name the line of a problem they find later.
	source string
	lines  map[string]int
	// warnings are things that are allowed but probably wrong.
	warnings []Problem
	// problems are what LoadPartial found wrong (always empty after Load).
	problems []Problem
}

// Problems lists what LoadPartial found wrong with the file, in line
// order; a Config from Load or Parse has none (they return an *Error).
func (c *Config) Problems() []Problem { return c.problems }

// Warnings lists what the file allows but probably did not mean (a
// base_url an OpenAI-compatible server does not answer on), in line order.
// `capgraph config check` prints them; they do not make the file invalid.
func (c *Config) Warnings() []Problem { return c.warnings }

// Model configures the LLM of one role.
type Model struct {
	// Provider: openai (also any OpenAI-compatible server via BaseURL),
	// anthropic, googleai or ollama.
	Provider string `yaml:"provider"`
	// Model is the provider's model name.
	Model string `yaml:"model"`
	// BaseURL overrides the provider's endpoint (vLLM, LiteLLM, a gateway).
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the environment variable holding the API key; the key
	// itself never appears in the file. Empty means the provider's usual
	// variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, GOOGLE_API_KEY).
	APIKeyEnv string `yaml:"api_key_env"`
	// Temperature in [0, 2]; nil means 0 (langchaingo always sends one).
	Temperature *float64 `yaml:"temperature"`
	// MaxTokens caps a reply; 0 means the provider's default.
	MaxTokens int `yaml:"max_tokens"`
	// Timeout bounds one call; 0 means no timeout beyond the turn's.
	Timeout Duration `yaml:"timeout"`
	// IdleTimeout bounds a pause in a streamed reply: no token for this
	// long and the call is cancelled and retried (default: the llm
	// package's, 60s).
	IdleTimeout Duration `yaml:"idle_timeout"`
	// LegacyMaxTokens sends max_tokens instead of max_completion_tokens
	// (openai provider; for servers that only accept the old field).
	LegacyMaxTokens bool `yaml:"legacy_max_tokens"`
	// JSONMode says how JSON replies are asked for (openai and ollama):
	// auto (empty: JSON schema, falling back when the server rejects it),
	// json_schema, json_object or off.
	JSONMode string `yaml:"json_mode"`
	// StreamUsage sends stream_options.include_usage on streamed calls
	// (openai). Unset: sent, and left out once the server rejects it.
	StreamUsage *bool `yaml:"stream_usage"`
	// PromptCache marks the system prompt for the provider's prompt cache
	// (anthropic). Unset: on.
	PromptCache *bool `yaml:"prompt_cache"`
}

// Checkpoints says what the store keeps of finished turns.
type Checkpoints struct {
	// KeepIntermediate is how long a finished turn keeps the checkpoint of
	// each of its steps: false (the agent's default: pruned when the turn
	// ends, keeping the one it ended with), true (kept until the thread is
	// deleted) or a duration ("24h": kept that long after the turn ended).
	// Nil when the file leaves it out.
	KeepIntermediate *Retention `yaml:"keep_intermediate"`
	// Durability is when a step's checkpoint is durable: "sync" (before
	// the next step starts) or "async" (while the next step runs, waited
	// for before a side effect, an approval and the turn's end; the
	// default when empty, wiring.DefaultDurability). docs/reliability.md
	// says what each keeps over a crash.
	Durability string `yaml:"durability"`
}

// Retention is a keep_intermediate value: true (Forever), or false or a
// duration (For; false and 0 are the same).
type Retention struct {
	Forever bool
	For     Duration
}

// Threshold is a duration a key may also turn off: "never" (or a negative
// duration) sets Never; 0 or absent leaves the library's default.
type Threshold struct {
	Never bool
	After Duration
}

// Classifier configures capability selection.
type Classifier struct {
	// Mode: "batched" (one call selects the set; the default) or
	// "per_capability" (one yes/no call per capability).
	Mode string `yaml:"mode"`
}

// ModelCalls says which model calls a turn leaves out when it does not need
// them (docs/models.md, "Fewer model calls"). A key left out takes the
// library's default (package nodes).
type ModelCalls struct {
	// TaskExtraction: "needed" (the default: the task extraction model is
	// asked only when the rules find the message needs the earlier turns)
	// or "always".
	TaskExtraction string `yaml:"task_extraction"`
	// SelectAllWithinTokens: the classifier makes every capability it could
	// choose active without a model call while the planner's prompt with
	// all their guides takes at most this many tokens (0 or absent: the
	// library's default, 4000); a negative number: it always asks.
	SelectAllWithinTokens int `yaml:"select_all_within_tokens"`
	// TaskWithSelection: where both the task and the selection need a
	// model, one call asks for both (nil: the default, true); false asks
	// in two calls.
	TaskWithSelection *bool `yaml:"task_with_selection"`
}

// Limits bound one turn. Exceeding one ends the turn in the error node. The
// keys are the limit names the error report gives (router.Limit*); a zero
// field (a key left out) takes the library's default.
type Limits struct {
	// MaxPlanningAttempts counts plans per turn, the first included
	// (default: the router's, 2).
	MaxPlanningAttempts int `yaml:"max_planning_attempts"`
	// MaxReclassifications per turn (default: the router's, 1). Nil when the
	// file leaves it out; 0 forbids reclassification.
	MaxReclassifications *int `yaml:"max_reclassifications"`
	// MaxExecutionTime is the turn's wall-clock limit (default: the router's, 5m).
	MaxExecutionTime Duration `yaml:"max_execution_time"`
	// MaxNodeSteps counts node executions per turn (default: the router's,
	// 100). The key was max_steps before.
	MaxNodeSteps int `yaml:"max_node_steps"`
	// MaxTokensPerTurn is the LLM token budget of a turn; 0 means unlimited
	// (the default).
	MaxTokensPerTurn int `yaml:"max_tokens_per_turn"`
	// MaxConcurrentClassifications bounds per_capability classifier calls
	// (default: the nodes', 5).
	MaxConcurrentClassifications int `yaml:"max_concurrent_classifications"`
	// StepConcurrency bounds independent plan steps run together (default:
	// the agent's, 8).
	StepConcurrency int `yaml:"step_concurrency"`
	// ErrorNodeGrace is how long the error node may take to write its report,
	// also once max_execution_time has passed (default: the agent's, 30s).
	ErrorNodeGrace Duration `yaml:"error_node_grace"`
	// ErrorExplanationTimeout bounds the error model's explanation within
	// that grace (default: the error node's, 30s); past it, the
	// deterministic explanation is used.
	ErrorExplanationTimeout Duration `yaml:"error_explanation_timeout"`
	// MaxArtifactBytes caps one artifact a step returns, JSON encoded
	// (default: the agent's, 1 MiB); a larger one is left out with a note
	// saying so, and the step still succeeds.
	MaxArtifactBytes int `yaml:"max_artifact_bytes"`
}

// Retry holds the global default retry policy and per-capability policies.
// A capability's own RetryPolicy method wins over both. Zero fields take
// capabilities' defaults (3 attempts, 1s, ×2, 30s cap, full jitter).
type Retry struct {
	Default      capabilities.RetryPolicy            `yaml:"default"`
	Capabilities map[string]capabilities.RetryPolicy `yaml:"capabilities"`
}

// Deadlines bound one attempt of a capability: past it the attempt is
// cancelled and fails RETRIABLE, kind timeout (docs/operations.md).
type Deadlines struct {
	// Default bounds an attempt of every capability that states no deadline
	// of its own (default: the library's, capabilities.DefaultDeadline, 60s).
	Default Duration `yaml:"default"`
	// Capabilities sets the deadline of single capabilities, by name; it
	// wins over a capability's own deadline.
	Capabilities map[string]Duration `yaml:"capabilities"`
}

// Approval configures human approval.
type Approval struct {
	// GlobalMode: "disabled", "selective" (the default: capabilities that
	// ask for approval get it) or "all_capabilities".
	GlobalMode string `yaml:"global_mode"`
	// PlanApproval asks a human to approve every plan before steps run.
	PlanApproval bool `yaml:"plan_approval"`
	// ExpiresAfter: a pending approval older than this ends as expired,
	// with nothing done (default: the agent's, 1h). Nil when the file
	// leaves it out; 0 means approvals never expire.
	ExpiresAfter *Duration `yaml:"expires_after"`
	// MCPAnswers lets an MCP client answer an approval through capgraph
	// serve's ask tool, whose words the client's model writes (default
	// false: a person answers on the page or through the API).
	MCPAnswers bool `yaml:"mcp_answers"`
}

// ControlSystem holds the control-system safety switches.
type ControlSystem struct {
	// WritesEnabled is the master switch for capabilities that write to the
	// control system (default false: they refuse).
	WritesEnabled bool `yaml:"writes_enabled"`
	// Targets are the named target systems writes act on (the demo's live
	// machine and its simulator) and each one's posture; Target is the
	// default of a turn that names none (required with targets). Empty:
	// no targets, WritesEnabled alone decides. docs/time-travel.md.
	Targets map[string]Target `yaml:"targets"`
	Target  string            `yaml:"target"`
}

// Target is the posture of one target system (agent.TargetPolicy).
type Target struct {
	// WritesEnabled is the target's write switch; a write needs it and
	// control_system.writes_enabled.
	WritesEnabled bool `yaml:"writes_enabled"`
	// Simulated marks a target that is not the real machine: replays and
	// forks write to it unless a human chooses another.
	Simulated bool `yaml:"simulated"`
	// Approval is always (default) or none (only with simulated: true).
	Approval string `yaml:"approval"`
	// MaxWritesPerTurn caps the writes one turn makes on it (0: no cap).
	MaxWritesPerTurn int `yaml:"max_writes_per_turn"`
}

// AgentControl holds the per-turn bypasses of infrastructure steps. They
// widen what a turn runs, so a request (a chat slash command, an API
// option) may turn one on only when the configuration does, or when its
// API key may raise it (server.api_keys[].may_raise).
type AgentControl struct {
	// SkipTaskExtraction makes the user's message the task (no model call).
	SkipTaskExtraction bool `yaml:"skip_task_extraction"`
	// SkipClassification makes every capability active (no selection).
	SkipClassification bool `yaml:"skip_classification"`
}

// Server configures the HTTP server.
type Server struct {
	// Addr is the listen address (default: the server's, 127.0.0.1:8080).
	Addr string `yaml:"addr"`
	// APIKeys lists the accepted bearer keys; empty means no authentication
	// (only sensible on a loopback address).
	APIKeys []APIKey `yaml:"api_keys"`
	// MaxBodyBytes caps a request body (default: the server's, 4 MiB).
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// GCPercent is the Go collector's target (GOGC) of a serving process:
	// 0 means wiring.DefaultGCPercent (400) within wiring.DefaultGCHeadroom
	// of the live heap; the environment's GOGC, when set, wins.
	// docs/deployment.md, "Memory and the collector".
	GCPercent int `yaml:"gc_percent"`
	// Limits are server-wide limits.
	Limits ServerLimits `yaml:"limits"`
	// LeaseTTL is how long this replica's lease on a thread lasts without
	// renewal (renewed every third of it while a run lasts); 0 means the
	// agent's default (30s). With a PostgreSQL store it is also how often
	// `capgraph serve` looks for cut runs to take over, so the runs of a
	// replica that died continue after about one to two TTLs.
	LeaseTTL Duration `yaml:"lease_ttl"`
	// LeaseOwner names this replica in thread leases (and in the busy
	// errors other replicas report); empty means host name, process id and
	// a random suffix. It must differ between replicas.
	LeaseOwner string `yaml:"lease_owner"`
	// AuditLog, when set, is a file `capgraph serve` appends the audit log
	// to as JSON lines: every capability step ("record":"step") and every
	// record of a side-effecting step ("record":"action"). The durable
	// audit records of side-effecting steps are kept in the store whether
	// or not it is set (`capgraph audit`, GET /api/audit).
	AuditLog string `yaml:"audit_log"`
	// StatusFrames says when Chat Completions streams carry Open WebUI's
	// status frames (chunks without "choices" that strict clients such as
	// the Vercel AI SDK report as errors): auto (default: only to requests
	// from Open WebUI), on or off. A key's status_frames overrides it.
	StatusFrames string `yaml:"status_frames"`
	// CORSOrigins are the browser origins (https://host[:port], or "*" for
	// any) whose pages may call the API; empty: none (the built-in page
	// needs none). Credentials are never allowed: keys are bearer tokens.
	CORSOrigins []string `yaml:"cors_origins"`
	// AllowedHosts are the names clients reach the server by (the Host
	// header they send), beyond localhost, 127.0.0.1 and [::1]: host names
	// or IP addresses with an optional port, "*" for any (only with API
	// keys). Other Hosts get 421 on every route (a guard against DNS
	// rebinding). A reverse proxy's name goes here; a server listening on
	// a wildcard address (0.0.0.0:8080) needs at least one entry.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// FrameAncestors are the origins that may embed the built-in page in a
	// frame; empty: none (frame-ancestors 'none').
	FrameAncestors []string `yaml:"frame_ancestors"`
	// PublicURL is the address browsers reach the server at
	// (https://capgraph.example.org); the artifact images of chat answers
	// link there. Empty: the address each request came to.
	PublicURL string `yaml:"public_url"`
	// ArtifactSecret signs the artifact image URLs of chat answers (at
	// least 16 characters, the same on every replica; use
	// ${CAPGRAPH_ARTIFACT_SECRET}). Empty: derived from the API keys.
	ArtifactSecret string `yaml:"artifact_secret"`
	// ArtifactURLTTL is how long such a URL works (default: the server's,
	// 7 days).
	ArtifactURLTTL Duration `yaml:"artifact_url_ttl"`
	// Page is the built-in page's identity and clock.
	Page Page `yaml:"page"`
}

// Page configures what the built-in page shows of the application.
type Page struct {
	// Name is the page's title and heading (default: the application's
	// name, capgraph for capgraph itself).
	Name string `yaml:"name"`
	// Logo is an image file (.svg, .png, .jpg, .jpeg, .webp, .gif) shown
	// beside the name; empty: capgraph's.
	Logo string `yaml:"logo"`
	// TimeZone is the IANA zone the page's times are in, on a 24-hour
	// clock (default UTC), e.g. Europe/Berlin.
	TimeZone string `yaml:"time_zone"`
}

// LogoTypes maps a page logo's file extension to its media type.
var LogoTypes = map[string]string{".svg": "image/svg+xml", ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp", ".gif": "image/gif"}

// APIKey is one accepted bearer key. Exactly one of Key and KeySHA256 is set.
type APIKey struct {
	// Name identifies the key in logs.
	Name string `yaml:"name"`
	// Key is the key itself (use ${VAR} to keep it out of the file).
	Key string `yaml:"key"`
	// KeySHA256 is the hex SHA-256 of the key, so the file holds no secret.
	KeySHA256 string `yaml:"key_sha256"`
	// Tenant scopes threads: a key sees only its tenant's threads (default: Name).
	Tenant string `yaml:"tenant"`
	// TrustedFrontend lets the caller name the end user (a frontend such as
	// Open WebUI that authenticates users itself).
	TrustedFrontend bool `yaml:"trusted_frontend"`
	// AllowedCapabilities restricts the capabilities this key may use; empty
	// means all.
	AllowedCapabilities []string `yaml:"allowed_capabilities"`
	// MaxConcurrentRuns bounds this key's simultaneous runs; 0 means only the
	// server-wide limit applies.
	MaxConcurrentRuns int `yaml:"max_concurrent_runs"`
	// MayRaise lists the safety settings this key's requests may raise above
	// the configuration (approval_mode, plan_approval, skip_classification,
	// skip_task_extraction); by default a request may only tighten them.
	// writes_enabled cannot be raised.
	MayRaise []string `yaml:"may_raise"`
	// Admin lets this key read the audit log (GET /api/audit) of every tenant.
	Admin bool `yaml:"admin"`
	// StatusFrames overrides server.status_frames for this key (auto, on
	// or off); empty keeps the server's.
	StatusFrames string `yaml:"status_frames"`
}

// ServerLimits are server-wide limits.
type ServerLimits struct {
	// MaxConcurrentRuns bounds simultaneous runs on this replica; a key
	// without a max_concurrent_runs of its own is bound by it alone. Unset:
	// the server's defaults, no bound for the replica and each key at most
	// server.DefaultMaxConcurrentRuns (4) runs at once.
	MaxConcurrentRuns int `yaml:"max_concurrent_runs"`
	// RequestsPerMinute per API key; 0 means unlimited.
	RequestsPerMinute int `yaml:"requests_per_minute"`
	// RunTimeout bounds one run; 0 means limits.max_execution_time (when the
	// file sets it; else the server's default, equal to the agent's 5m).
	RunTimeout Duration `yaml:"run_timeout"`
	// MaxThreads bounds the threads of one API key (or user a trusted
	// frontend forwards); 0 means the server's default (10000), -1 none.
	MaxThreads int `yaml:"max_threads"`
	// MaxMetadataKeys and MaxMetadataBytes bound a thread's metadata; 0
	// means the server's defaults (64 keys, 16 KiB).
	MaxMetadataKeys  int `yaml:"max_metadata_keys"`
	MaxMetadataBytes int `yaml:"max_metadata_bytes"`
	// MaxPageSize bounds ?limit= of every list; 0 means the default (500).
	MaxPageSize int `yaml:"max_page_size"`
	// BodyIdleTimeout bounds a pause in a request body (408 beyond); 0
	// means the default (5s).
	BodyIdleTimeout Duration `yaml:"body_idle_timeout"`
	// DuplicateWindow: a repeated identical chat request within it after
	// the first run ended gets that run's answer; 0 means the default
	// (1m), "never" (or a negative duration) turns it off.
	DuplicateWindow Threshold `yaml:"duplicate_window"`
	// DetachGrace: how long a run goes on after its client left, when
	// the client repeats requests (an Idempotency-Key, an SDK's retry
	// header), for the retry to join it (any other client leaving stops
	// its run at once); 0 means the default (10s), "never" (or a
	// negative duration) cancels the run as soon as its client has gone.
	DetachGrace Threshold `yaml:"detach_grace"`
	// ParkAfter: a retry wait longer than this goes back to the runs
	// queue (any replica resumes the run when it is due) instead of
	// holding a goroutine; 0 means the server's default (5s), "never"
	// (or a negative duration) waits every retry in place.
	ParkAfter Threshold `yaml:"park_after"`
	// RunRetention: how long finished runs' records are kept; 0 means
	// the default (24h).
	RunRetention Duration `yaml:"run_retention"`
	// ThreadRetention: a thread not updated for this long is deleted
	// (its checkpoints and run records), making room in its owner's
	// max_threads; 0 (the default) keeps threads until they are deleted.
	ThreadRetention Duration `yaml:"thread_retention"`
}

// Logging configures the log output.
type Logging struct {
	// Level: debug, info (the default), warn or error.
	Level string `yaml:"level"`
	// Format: text (the default) or json.
	Format string `yaml:"format"`
}

// Telemetry configures traces and metrics; both are off by default.
type Telemetry struct {
	Traces  Traces  `yaml:"traces"`
	Metrics Metrics `yaml:"metrics"`
}

// Traces configures the export of OpenTelemetry traces. The standard
// OTEL_* variables apply to what the file leaves empty
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER, …).
type Traces struct {
	// Exporter: none or otlp; empty means OTEL_TRACES_EXPORTER when it is
	// otlp, else none.
	Exporter string `yaml:"exporter"`
	// Protocol: grpc or http/protobuf; empty means
	// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, OTEL_EXPORTER_OTLP_PROTOCOL, else
	// the otlp package's default (grpc).
	Protocol string `yaml:"protocol"`
	// Endpoint is the collector: host:port or a URL; empty means the
	// OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT variables, else localhost.
	Endpoint string `yaml:"endpoint"`
	// Insecure sends without TLS (a collector on the same host or network).
	Insecure bool `yaml:"insecure"`
	// ServiceName names the service in the traces; empty means
	// OTEL_SERVICE_NAME, else the application's name.
	ServiceName string `yaml:"service_name"`
	// SampleRatio samples that share of new traces (a request's sampled
	// flag is followed); nil means OTEL_TRACES_SAMPLER, else every trace.
	SampleRatio *float64 `yaml:"sample_ratio"`
}

// Metrics configures the Prometheus metrics.
type Metrics struct {
	// Enabled serves the metrics.
	Enabled bool `yaml:"enabled"`
	// Listen, when set, serves /metrics on a listener of its own
	// (host:port), without API keys; empty means at /metrics on the
	// server's address, behind its API keys.
	Listen string `yaml:"listen"`
}

// MCPServer configures one MCP server (docs/mcp.md). Zero fields take the
// mcp package's defaults.
type MCPServer struct {
	// Transport: stdio (a child process) or http (streamable HTTP); empty
	// means stdio with a command and http with a url.
	Transport string `yaml:"transport"`
	// Command, Args, Env and Dir start a stdio server. The server gets Env
	// and only harmless variables of capgraph's environment (PATH, HOME, …).
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	Dir     string            `yaml:"dir"`
	// URL is an http server's endpoint.
	URL string `yaml:"url"`
	// HeadersEnv maps an HTTP header to the environment variable holding
	// its value (Authorization: WIKI_TOKEN); the secret stays out of the file.
	HeadersEnv map[string]string `yaml:"headers_env"`
	// Prefix starts the server's capability names (default: its name).
	Prefix string `yaml:"prefix"`
	// Optional lets capgraph start without the server when it cannot start.
	Optional bool `yaml:"optional"`
	// Timeout bounds one tool call (default 60s); ConnectTimeout a start or
	// reconnection with its handshake (default 30s).
	Timeout        Duration `yaml:"timeout"`
	ConnectTimeout Duration `yaml:"connect_timeout"`
	// MaxRestarts bounds restarts (reconnections) in a row (default 5).
	MaxRestarts int `yaml:"max_restarts"`
	// ReadOnlyTools are declared free of side effects.
	ReadOnlyTools []string `yaml:"read_only_tools"`
	// IncludeTools, when set, are the only tools used; ExcludeTools are not used.
	IncludeTools []string `yaml:"include_tools"`
	ExcludeTools []string `yaml:"exclude_tools"`
	// Tools configures single tools by their name on the server.
	Tools map[string]MCPTool `yaml:"tools"`
}

// MCPTool overrides what an MCP server says about one of its tools.
type MCPTool struct {
	// SideEffects declares whether the tool acts on the outside world
	// (unset: unless the server annotates it readOnlyHint).
	SideEffects *bool `yaml:"side_effects"`
	// Idempotent declares whether repeating a call changes nothing more
	// (unset: the server's idempotentHint).
	Idempotent *bool `yaml:"idempotent"`
	// IsErrorSeverity is the severity of a result with isError (default critical).
	IsErrorSeverity string `yaml:"is_error_severity"`
	// Timeout bounds one call of the tool (default: the server's timeout).
	Timeout Duration `yaml:"timeout"`
	// Description replaces the server's description in prompts.
	Description string `yaml:"description"`
}

// Schedule is one scheduled run (docs/schedules.md).
type Schedule struct {
	// Cron is when it runs: minute hour day-of-month month day-of-week
	// ("0 7 * * 1-5"), or @hourly, @daily, …
	Cron string `yaml:"cron"`
	// Timezone the expression is read in: a zone name (default UTC).
	Timezone string `yaml:"timezone"`
	// Input is the message the run starts with.
	Input string `yaml:"input"`
	// Thread: "new" (the default: a thread per due time) or "keep" (one
	// thread, each run a turn of it).
	Thread string `yaml:"thread"`
	// AllowedCapabilities are the only capabilities the run may use;
	// empty means all.
	AllowedCapabilities []string `yaml:"allowed_capabilities"`
	// Writes lets the run's side-effecting steps go ahead under the
	// configuration's write switch and approval policy (a write then waits
	// for a human's approval); false (the default) turns writes off.
	Writes bool `yaml:"writes"`
	// WebhookURL, when set, receives the run's outcome as a JSON POST.
	WebhookURL string `yaml:"webhook_url"`
	// Principal names the API key (server.api_keys or CAPGRAPH_API_KEYS)
	// the runs belong to under capgraph serve: its holder lists their
	// threads, follows them and answers their approvals. Empty: the
	// keyless caller of a server without keys, else nobody's.
	Principal string `yaml:"principal"`
	// Tenant is the tenant of Principal; empty: "default".
	Tenant string `yaml:"tenant"`
}

// Trigger is one webhook trigger (docs/triggers.md).
type Trigger struct {
	// SecretEnv names the environment variable holding the HMAC secret
	// (at least 16 bytes); the secret never appears in the file.
	SecretEnv string `yaml:"secret_env"`
	// Input is the run's message, a Go text/template over the JSON
	// payload: "Alarm {{.alarm}} on {{.device}}".
	Input string `yaml:"input"`
	// AllowedCapabilities are the only capabilities the run may use;
	// empty means all.
	AllowedCapabilities []string `yaml:"allowed_capabilities"`
	// Writes: as a schedule's.
	Writes bool `yaml:"writes"`
	// RatePerMinute bounds accepted calls (default: the trigger
	// package's, 10).
	RatePerMinute int `yaml:"rate_per_minute"`
	// Principal names the API key (server.api_keys or CAPGRAPH_API_KEYS)
	// the runs belong to: its holder lists their threads, streams them
	// and answers their approvals. Empty: the keyless caller of a server
	// without keys, else nobody's (docs/triggers.md).
	Principal string `yaml:"principal"`
	// Tenant is the tenant of Principal; empty: "default".
	Tenant string `yaml:"tenant"`
}

// Values of a schedule's thread.
const (
	ScheduleThreadNew  = "new"
	ScheduleThreadKeep = "keep"
)

// MCP transports.
const (
	MCPStdio = "stdio"
	MCPHTTP  = "http"
)

// The store values besides sqlite:PATH and postgres:// URLs.
const StoreMemory = "memory"

// Values of server.status_frames (and an API key's status_frames).
const (
	StatusFramesAuto = "auto"
	StatusFramesOn   = "on"
	StatusFramesOff  = "off"
)

// Default returns the configuration used when no file exists: offline,
// writes disabled, the command's default store, and every setting the
// library has a default for left zero (the library's default applies).
func Default() *Config {
	return &Config{
		Models: map[string]Model{},
		Retry:  Retry{Capabilities: map[string]capabilities.RetryPolicy{}},
		lines:  map[string]int{},
	}
}

// Source is the file name the config was read from ("" for Default).
func (c *Config) Source() string { return c.source }

// Line returns the line a dotted key was set on ("limits.max_steps",
// "server.api_keys[0].key", "retry.capabilities.channel_read"), or 0 when the
// file does not set it. Converters use it to name the line of a problem
// they detect.
func (c *Config) Line(key string) int { return c.lines[key] }

// ModelFor returns the model configuration of a role: the role's fields,
// with empty ones taken from the default role. ok is false when neither is
// configured (the role runs offline).
func (c *Config) ModelFor(role string) (m Model, ok bool) {
	def, hasDef := c.Models["default"]
	r, hasRole := c.Models[role]
	if !hasRole {
		return def, hasDef
	}
	if !hasDef {
		return r, true
	}
	if r.Provider == "" {
		r.Provider = def.Provider
	}
	if r.Model == "" {
		r.Model = def.Model
	}
	if r.BaseURL == "" {
		r.BaseURL = def.BaseURL
	}
	if r.APIKeyEnv == "" {
		r.APIKeyEnv = def.APIKeyEnv
	}
	if r.Temperature == nil {
		r.Temperature = def.Temperature
	}
	if r.MaxTokens == 0 {
		r.MaxTokens = def.MaxTokens
	}
	if r.Timeout == 0 {
		r.Timeout = def.Timeout
	}
	if r.IdleTimeout == 0 {
		r.IdleTimeout = def.IdleTimeout
	}
	if !r.LegacyMaxTokens {
		r.LegacyMaxTokens = def.LegacyMaxTokens
	}
	if r.JSONMode == "" {
		r.JSONMode = def.JSONMode
	}
	if r.PromptCache == nil {
		r.PromptCache = def.PromptCache
	}
	if r.StreamUsage == nil {
		r.StreamUsage = def.StreamUsage
	}
	return r, true
}

// RetryPolicyFor returns the configured policy of a capability merged field
// by field over the global default (capabilities.MergeRetryPolicies), and
// whether the file configures one for it. A capability's own policy still
// wins over both; the agent resolves that with capabilities.ResolveRetryPolicy.
func (c *Config) RetryPolicyFor(capability string) (capabilities.RetryPolicy, bool) {
	p, ok := c.Retry.Capabilities[capability]
	if !ok {
		return capabilities.MergeRetryPolicies(c.Retry.Default), false
	}
	return capabilities.MergeRetryPolicies(p, c.Retry.Default), true
}
