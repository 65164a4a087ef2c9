package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/logging"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/apikey"
	"github.com/capgraph/capgraph/state"
	"github.com/google/uuid"
)

// Defaults for the zero values of Config.
const (
	DefaultAddr               = "127.0.0.1:8080"
	DefaultModel              = "capgraph"
	DefaultMaxBodyBytes       = 4 << 20
	DefaultReadHeaderTimeout  = 10 * time.Second
	DefaultReadTimeout        = 30 * time.Second
	DefaultIdleTimeout        = 120 * time.Second
	DefaultMaxHeaderBytes     = 64 << 10
	DefaultMaxMessages        = 200
	DefaultMaxMessageBytes    = 64 << 10
	DefaultMaxConcurrentRuns  = 4
	DefaultTurnTimeout        = 5 * time.Minute
	DefaultHeartbeat          = 10 * time.Second
	DefaultEventLogSize       = 4096
	DefaultRetryAfter         = 5 * time.Second
	DefaultApprovalTTL        = 30 * time.Minute
	DefaultShutdownGrace      = 10 * time.Second
	DefaultStreamWriteTimeout = 30 * time.Second
	DefaultBodyIdleTimeout    = 5 * time.Second
	DefaultRunRetention       = 24 * time.Hour
	DefaultDuplicateWindow    = time.Minute
	DefaultDetachGrace        = 10 * time.Second
	DefaultParkAfter          = 5 * time.Second
)

// Principal is who an API key stands for. Identity never comes from a
// request body or, for untrusted keys, from headers.
type Principal struct {
	// Name identifies the principal within its tenant (required).
	Name string `json:"name" yaml:"name"`
	// KeySHA256 is the hex SHA-256 digest of the bearer key (required); the
	// key itself is never stored.
	KeySHA256 string `json:"key_sha256" yaml:"key_sha256"`
	// Tenant scopes threads; empty means "default".
	Tenant string `json:"tenant,omitempty" yaml:"tenant"`
	// TrustedFrontend lets this key forward end-user identity and chat ids
	// (X-OpenWebUI-User-Id, X-OpenWebUI-Chat-Id). Give it only to a frontend
	// you operate.
	TrustedFrontend bool `json:"trusted_frontend,omitempty" yaml:"trusted_frontend"`
	// AllowedCapabilities, when non-empty, are the only capabilities this
	// principal's turns may select, plan and run (agent.TurnRequest.
	// AllowedCapabilities; the agent enforces it and records it in the
	// thread's metadata). Empty means no restriction.
	AllowedCapabilities []string `json:"allowed_capabilities,omitempty" yaml:"allowed_capabilities"`
	// MaxConcurrentRuns bounds this principal's simultaneous runs; 0 means
	// Config.MaxConcurrentRuns.
	MaxConcurrentRuns int `json:"max_concurrent_runs,omitempty" yaml:"max_concurrent_runs"`
	// MayRaise names the safety settings (state.RaisableSettings) this
	// principal's requests may raise above the agent's configuration; by
	// default a request may only tighten them (403 otherwise). The write
	// switch cannot be raised.
	MayRaise []string `json:"may_raise,omitempty" yaml:"may_raise"`
	// Admin lets this principal read the audit log (GET /api/audit) of
	// every tenant.
	Admin bool `json:"admin,omitempty" yaml:"admin"`
	// StatusFrames overrides Config.StatusFrames for this key; empty keeps
	// the server's setting.
	StatusFrames StatusFrames `json:"status_frames,omitempty" yaml:"status_frames"`
}

// Model is one model id served under /v1/models: an agent profile.
type Model struct {
	// ID is what clients put in "model".
	ID string `json:"id"`
	// Options, when non-nil, are the options a turn of this profile asks
	// for. Like any request's, they may only tighten the agent's configured
	// options: a profile that loosens one is refused (403) for callers
	// whose key may not raise it.
	Options *agent.TurnOptions `json:"options,omitempty"`
}

// Config configures a Server. Zero values take the defaults above. The
// settings come in groups, each a struct of its own (Limits, Cluster,
// Auth, Artifacts), embedded so that a group's field reads as the
// Config's own (cfg.MaxThreads is cfg.Limits.MaxThreads).
type Config struct {
	// Runner is the agent (required): *agent.Agent, or any Agent (the
	// optional features it has are used; agent.go).
	Runner Agent
	// Runs keeps a durable record of every run the server acknowledges,
	// written before the acknowledgement (docs/reliability.md). Nil: the
	// Runner's store, when the Runner is a RunRecorder (*agent.Agent is;
	// memory, SQLite and PostgreSQL keep records); a Runner without one
	// needs it set.
	Runs runstore.Store
	// Addr is the listen address for Run.
	Addr string
	// Models are the profiles served; default one model "capgraph".
	Models []Model
	// Audit receives one record per capability step; nil discards.
	Audit AuditLog
	// Logger; nil discards.
	Logger logging.Logger
	// Metrics, when set, is served at GET /metrics to callers with an API
	// key (any key; loopback callers when there are none), like the rest
	// of the API. A deployment that scrapes without a key serves it on a
	// listener of its own instead (docs/observability.md).
	Metrics http.Handler
	// Triggers, when set, serves POST /api/triggers/{name} (package
	// trigger): callers authenticate by the trigger's HMAC signature, not
	// by API keys. New calls it once with the server's StartFunc, so a
	// trigger's run is one of the server's runs (listed, streamed,
	// stopped and joined by Shutdown like any other).
	Triggers func(start StartFunc) http.Handler
	// Evaluations, when set, lists the last evaluation runs recorded in the
	// store (capgraph eval --record) at GET /api/evaluations, for the page.
	Evaluations EvaluationLister
	// ObserveRequest, when set, is told of every answered request: its
	// route pattern ("POST /v1/chat/completions"; "" when none matched),
	// status code and duration (a stream: until it ended).
	ObserveRequest func(route string, status int, d time.Duration)

	// Auth is who may call the server, and from where.
	Auth
	// Limits bound what a request, a principal and the server may hold.
	Limits
	// Cluster is how this process shares its store with other replicas.
	Cluster
	// Artifacts is how chat answers link artifact images.
	Artifacts

	// Heartbeat is the interval of keep-alive frames on idle streams.
	Heartbeat time.Duration
	// ParkAfter: a run whose retry waits longer than this does not wait
	// in a goroutine: it parks (agent.WithParkAfter) and is resumed at its
	// not-before time — by any replica's claim from the runs queue
	// (PostgreSQL), or by a timer of this process. Its clients keep
	// following it under the same run id. Default 5 s; negative: every
	// wait is waited in place.
	ParkAfter time.Duration
	// MCPAnswersApprovals lets an MCP client answer a pending approval
	// through the ask tool. Off by default: an MCP client's model writes
	// the tool's arguments, so a "yes" there is a model's reading of the
	// person, not the person's answer; the ask result says where a human
	// answers it (the page, the native API) instead. Turn it on for
	// clients that show every tool call to the person before it is sent.
	MCPAnswersApprovals bool
	// ApprovalTTL is how long a Chat Completions approval token stays valid
	// when the approval carries no expiry of its own (the agent's approval
	// expiry wins when set). Default 30 min.
	ApprovalTTL time.Duration
	// ShutdownGrace is how long Shutdown lets running runs go on (no new
	// ones start) before it cancels them; a canceled run stops at its next
	// checkpoint, and the node it was in runs again when the run is
	// resumed. Negative: cancel at once.
	ShutdownGrace time.Duration
	// StatusFrames says when Chat Completions streams carry Open WebUI
	// status frames ({"event":...} chunks without "choices"): auto (the
	// default) only to Open WebUI, on, off. A principal may override it.
	StatusFrames StatusFrames
	// DisableTaskGuard lets Open WebUI's background task prompts (title,
	// tags, follow-ups, search queries: "### Task: … <chat_history>") reach
	// the agent. By default the server answers them itself, without running
	// the agent.
	DisableTaskGuard bool
	// DisableWebPage turns off the built-in page at GET /.
	DisableWebPage bool
	// Page is the built-in page's identity and clock (GET /page.json).
	Page Page
	// Examples are demo questions the web page offers on an empty chat
	// (served by GET /api/info).
	Examples []string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Auth is who may call the server, and from where (Config.Auth).
type Auth struct {
	// Principals are the API keys. With none, no authentication is done,
	// which New allows only on a loopback Addr.
	Principals []Principal
	// CORSOrigins are the browser origins ("https://host[:port]", or "*"
	// for any) allowed to call the API from another site (cors.go). None:
	// no CORS headers are sent, so browsers only allow the page itself.
	CORSOrigins []string
	// AllowedHosts are the names clients reach the server by, beyond
	// localhost, 127.0.0.1 and [::1] (always allowed): host names or IP
	// addresses with an optional port, "*" for any (only with Principals).
	// A request whose Host header is none of them gets 421, on every route:
	// a page whose host name an attacker points at the server (DNS
	// rebinding) reaches nothing. The host of a specific listen Addr and of
	// PublicURL are allowed too; a wildcard Addr (0.0.0.0:8080) needs an
	// entry (browser.go).
	AllowedHosts []string
	// FrameAncestors are the origins allowed to embed the built-in page in
	// a frame (CSP frame-ancestors); none means no site may ('none').
	FrameAncestors []string
}

// Limits bound what a request, a principal and the server may hold
// (Config.Limits); each has its default, and what a request beyond it
// gets is in docs/reliability.md.
type Limits struct {
	MaxBodyBytes      int64
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a request (body included). Streams are not
	// bounded by a write timeout; they end with their run.
	ReadTimeout time.Duration
	IdleTimeout time.Duration
	// BodyIdleTimeout bounds the pause between two reads of a request
	// body: a body that stops arriving (shorter than its Content-Length)
	// is answered 408 after it, within ReadTimeout. Default 5 s.
	BodyIdleTimeout time.Duration
	// StreamWriteTimeout bounds the write of each stream frame, so a client
	// that stops reading is dropped (its run goes on). Negative: none.
	StreamWriteTimeout time.Duration
	MaxHeaderBytes     int
	// MaxMessages and MaxMessageBytes bound a chat request's history.
	MaxMessages     int
	MaxMessageBytes int
	// MaxConcurrentRuns is the per-principal default.
	MaxConcurrentRuns int
	// MaxTotalRuns bounds the runs of all principals at once on this
	// server; beyond: 429 with Retry-After. 0 means no bound but the
	// per-principal ones.
	MaxTotalRuns int
	// RequestsPerMinute limits each principal's authenticated requests
	// (token bucket holding a minute's worth); beyond: 429 with
	// Retry-After. 0 means unlimited.
	RequestsPerMinute int
	// RetryAfter is sent with 429 answers.
	RetryAfter time.Duration
	// MaxThreads bounds the threads of one owner (a principal, or a user a
	// trusted frontend forwards); beyond, a new thread is refused with 403
	// quota_exceeded. Default 10000; negative: no bound.
	MaxThreads int
	// MaxMetadataKeys and MaxMetadataBytes bound a thread's client
	// metadata (POST /api/threads): keys, and bytes of keys and values
	// together. Defaults 64 and 16 KiB.
	MaxMetadataKeys  int
	MaxMetadataBytes int
	// MaxPageSize bounds ?limit= of every list (threads, runs, audit);
	// default 500. A list without ?limit= returns DefaultPageSize items.
	MaxPageSize int
	// TurnTimeout is a run's wall-clock limit.
	TurnTimeout time.Duration
	// EventLogSize bounds the events kept per run for reconnecting clients.
	EventLogSize int
	// RunRetention is how long the record of a finished run is kept (run
	// lookups, idempotent replays); default 24 h.
	RunRetention time.Duration
	// ThreadRetention, when positive, is how long a thread is kept after
	// its last update: older threads are deleted as DELETE
	// /api/threads/{id} deletes one (checkpoints, run records), so that
	// their owners' MaxThreads counts make room. Default 0: kept until
	// deleted.
	ThreadRetention time.Duration
	// DuplicateWindow is how long after a Chat Completions run ended a
	// repeated identical request (the same conversation from the same
	// caller, as SDKs retry) gets that run's answer instead of starting a
	// new run; while the run goes on, a repeat always joins it. Default
	// 1 min; negative: off. An Idempotency-Key header is honoured as long
	// as the run's record is kept (RunRetention).
	DuplicateWindow time.Duration
	// DetachGrace is how long a Chat Completions, Responses, AG-UI or MCP
	// run goes on after its client went away (a timeout, a dropped
	// connection) before it is canceled, when the request can be
	// repeated (an Idempotency-Key, an SDK's X-Stainless-Retry-Count, an
	// MCP call's request_id), so
	// that the client's retry joins it instead of finding it canceled.
	// Any other client leaving (a stop button) cancels its run at once.
	// Default 10 s; negative: cancel at once.
	DetachGrace time.Duration
}

// Cluster is how this process shares its store with other replicas
// (Config.Cluster; docs/deployment.md).
type Cluster struct {
	// Instance names this server process in run records (their owner);
	// default a random name.
	Instance string
	// RecoverGrace: RecoverRuns leaves alone the runs another process
	// recorded less than this long ago (it may be starting them). 0, for
	// one process owning its store (SQLite): every unfinished run is
	// recovered at once. capgraph serve sets the lease TTL on PostgreSQL.
	RecoverGrace time.Duration
	// RecoverEvery, when positive, makes Serve call RecoverRuns this often
	// while it serves, so that with several replicas on one store a live
	// replica takes over the cut runs of one that died once their leases
	// expire (set it to the agent's lease TTL). 0: off; negative is an
	// error.
	RecoverEvery time.Duration
}

// Artifacts is how chat answers link artifact images (Config.Artifacts).
type Artifacts struct {
	// PublicURL is the address browsers reach this server at
	// ("https://capgraph.example.org"); artifact images in chat answers
	// link there. Empty: the request's own scheme and Host.
	PublicURL string
	// ArtifactSecret signs the artifact image URLs of chat answers (at
	// least 16 bytes; the same on every replica). Empty: a key derived
	// from the API keys' digests, so URLs survive restarts but anyone who
	// can read the digests could sign one.
	ArtifactSecret []byte
	// ArtifactURLTTL is how long a signed artifact URL works. Default
	// DefaultArtifactURLTTL (7 days).
	ArtifactURLTTL time.Duration
}

// HashKey returns the hex SHA-256 digest of an API key, the form
// Principal.KeySHA256 stores.
func HashKey(key string) string { return apikey.Hash(key) }

// ParseAPIKeys parses CAPGRAPH_API_KEYS: comma-separated entries, each
// either a bare key or "name=key". Bare keys get the names key1, key2, ….
// Every key must meet apikey.Check, the rule of the YAML file's keys too.
// Every principal gets tenant "default" and no trusted-frontend flag; use
// Config.Principals for more. Empty input gives no principals.
func ParseAPIKeys(s string) ([]Principal, error) {
	var out []Principal
	seen := map[string]bool{}
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, key, ok := strings.Cut(part, "=")
		if !ok {
			name, key = fmt.Sprintf("key%d", i+1), part
		}
		name, key = strings.TrimSpace(name), strings.TrimSpace(key)
		if name == "" || key == "" {
			return nil, &ConfigError{Field: "CAPGRAPH_API_KEYS", Reason: fmt.Sprintf("entry %d: empty name or key", i+1)}
		}
		if err := apikey.Check(key); err != nil {
			return nil, &ConfigError{Field: "CAPGRAPH_API_KEYS", Reason: fmt.Sprintf("entry %d (%s): the key %v", i+1, name, err)}
		}
		if seen[name] {
			return nil, &ConfigError{Field: "CAPGRAPH_API_KEYS", Reason: fmt.Sprintf("entry %d: duplicate name %q", i+1, name)}
		}
		seen[name] = true
		out = append(out, Principal{Name: name, KeySHA256: HashKey(key), Tenant: "default"})
	}
	return out, nil
}

// withDefaults validates cfg and fills zero values, group by group. It
// fills and normalises copies of the slices it changes (a principal's
// tenant, the origins in lower case): the caller's Config stays as it was
// given.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Runner == nil {
		return cfg, &ConfigError{Field: "Runner", Reason: "required"}
	}
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if len(cfg.Principals) == 0 && !isLoopback(cfg.Addr) {
		return cfg, &ConfigError{Field: "Addr", Reason: fmt.Sprintf("%s is not a loopback address; refusing to listen without API keys", cfg.Addr)}
	}
	cfg.Principals = slices.Clone(cfg.Principals)
	cfg.CORSOrigins = slices.Clone(cfg.CORSOrigins)
	cfg.FrameAncestors = slices.Clone(cfg.FrameAncestors)
	cfg.AllowedHosts = slices.Clone(cfg.AllowedHosts)
	if err := cfg.Auth.checkPrincipals(); err != nil {
		return cfg, err
	}
	if err := checkStatusFrames("StatusFrames", cfg.StatusFrames); err != nil {
		return cfg, err
	}
	if err := checkOrigins(&cfg); err != nil {
		return cfg, err
	}
	if err := cfg.artifactDefaults(); err != nil {
		return cfg, err
	}
	if err := cfg.Cluster.withDefaults(); err != nil {
		return cfg, err
	}
	if err := cfg.Limits.withDefaults(); err != nil {
		return cfg, err
	}
	if len(cfg.Models) == 0 {
		cfg.Models = []Model{{ID: DefaultModel}}
	}
	for i, m := range cfg.Models {
		if m.ID == "" {
			return cfg, &ConfigError{Field: fmt.Sprintf("Models[%d].ID", i), Reason: "required"}
		}
	}
	defaultDuration(&cfg.Heartbeat, DefaultHeartbeat)
	defaultDuration(&cfg.ApprovalTTL, DefaultApprovalTTL)
	defaultDuration(&cfg.ShutdownGrace, DefaultShutdownGrace)
	defaultDuration(&cfg.ParkAfter, DefaultParkAfter)
	if cfg.Audit == nil {
		cfg.Audit = nopAudit{}
	}
	if cfg.Logger == nil {
		cfg.Logger = logging.Nop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if len(cfg.Page.Logo) > 0 && !slices.Contains(LogoTypes, cfg.Page.LogoType) {
		return cfg, &ConfigError{Field: "Page.LogoType", Reason: fmt.Sprintf("%q is not an image type the page shows (%s)", cfg.Page.LogoType, strings.Join(LogoTypes, ", "))}
	}
	return cfg, nil
}

// LogoTypes are the media types of a page logo (Page.LogoType).
var LogoTypes = []string{"image/svg+xml", "image/png", "image/jpeg", "image/webp", "image/gif"}

// checkPrincipals checks the principals (a's own copy) and fills their
// default tenant.
func (a *Auth) checkPrincipals() error {
	seenName, seenKey := map[string]bool{}, map[string]bool{}
	for i, p := range a.Principals {
		if p.Name == "" {
			return &ConfigError{Field: fmt.Sprintf("Principals[%d].Name", i), Reason: "required"}
		}
		d, err := hex.DecodeString(p.KeySHA256)
		if err != nil || len(d) != sha256.Size {
			return &ConfigError{Field: fmt.Sprintf("Principals[%d].KeySHA256", i), Reason: "must be 64 hex digits (use HashKey)"}
		}
		if p.Tenant == "" {
			a.Principals[i].Tenant = "default"
		}
		id := a.Principals[i].Tenant + "/" + p.Name
		if seenName[id] {
			return &ConfigError{Field: fmt.Sprintf("Principals[%d].Name", i), Reason: fmt.Sprintf("duplicate principal %q", id)}
		}
		if seenKey[strings.ToLower(p.KeySHA256)] {
			return &ConfigError{Field: fmt.Sprintf("Principals[%d].KeySHA256", i), Reason: "the same key is given twice"}
		}
		seenName[id], seenKey[strings.ToLower(p.KeySHA256)] = true, true
		if p.MaxConcurrentRuns < 0 {
			return &ConfigError{Field: fmt.Sprintf("Principals[%d].MaxConcurrentRuns", i), Reason: "negative"}
		}
		for j, set := range p.MayRaise {
			if !slices.Contains(state.RaisableSettings(), set) {
				return &ConfigError{Field: fmt.Sprintf("Principals[%d].MayRaise[%d]", i, j),
					Reason: fmt.Sprintf("%q cannot be raised (raisable: %s)", set, strings.Join(state.RaisableSettings(), ", "))}
			}
		}
		if err := checkStatusFrames(fmt.Sprintf("Principals[%d].StatusFrames", i), p.StatusFrames); err != nil {
			return err
		}
	}
	return nil
}

// withDefaults checks the cluster settings and names the instance.
func (c *Cluster) withDefaults() error {
	if c.RecoverEvery < 0 {
		return &ConfigError{Field: "RecoverEvery", Reason: fmt.Sprintf("%s is negative", c.RecoverEvery)}
	}
	if c.RecoverGrace < 0 {
		return &ConfigError{Field: "limits", Reason: "negative limit"}
	}
	if c.Instance == "" {
		c.Instance = "server-" + uuid.NewString()[:8]
	}
	return nil
}

// withDefaults fills the limits left zero and refuses a negative one
// where negative means nothing.
func (l *Limits) withDefaults() error {
	defaultDuration(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	defaultDuration(&l.ReadTimeout, DefaultReadTimeout)
	defaultDuration(&l.IdleTimeout, DefaultIdleTimeout)
	defaultDuration(&l.TurnTimeout, DefaultTurnTimeout)
	defaultDuration(&l.RetryAfter, DefaultRetryAfter)
	defaultDuration(&l.StreamWriteTimeout, DefaultStreamWriteTimeout)
	defaultDuration(&l.BodyIdleTimeout, DefaultBodyIdleTimeout)
	defaultDuration(&l.RunRetention, DefaultRunRetention)
	defaultDuration(&l.DuplicateWindow, DefaultDuplicateWindow)
	defaultDuration(&l.DetachGrace, DefaultDetachGrace)
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	defaultInt(&l.MaxHeaderBytes, DefaultMaxHeaderBytes)
	defaultInt(&l.MaxMessages, DefaultMaxMessages)
	defaultInt(&l.MaxMessageBytes, DefaultMaxMessageBytes)
	defaultInt(&l.MaxConcurrentRuns, DefaultMaxConcurrentRuns)
	defaultInt(&l.EventLogSize, DefaultEventLogSize)
	defaultInt(&l.MaxThreads, DefaultMaxThreads)
	defaultInt(&l.MaxMetadataKeys, DefaultMaxMetadataKeys)
	defaultInt(&l.MaxMetadataBytes, DefaultMaxMetadataBytes)
	defaultInt(&l.MaxPageSize, DefaultMaxPageSize)
	if l.MaxBodyBytes < 0 || l.MaxMessages < 0 || l.MaxMessageBytes < 0 || l.MaxConcurrentRuns < 0 || l.EventLogSize < 0 || l.RequestsPerMinute < 0 || l.MaxTotalRuns < 0 ||
		l.MaxMetadataKeys < 0 || l.MaxMetadataBytes < 0 || l.MaxPageSize < 0 || l.BodyIdleTimeout < 0 || l.ThreadRetention < 0 {
		return &ConfigError{Field: "limits", Reason: "negative limit"}
	}
	return nil
}

// defaultDuration and defaultInt set *p to its default while it is zero.
func defaultDuration(p *time.Duration, v time.Duration) {
	if *p == 0 {
		*p = v
	}
}

func defaultInt(p *int, v int) {
	if *p == 0 {
		*p = v
	}
}

// isLoopback reports whether addr ("host:port") only listens on loopback.
// An empty host (":8080") means every interface.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
