package config

import (
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/llm/vocab"
	"github.com/capgraph/capgraph/logging"
	"github.com/capgraph/capgraph/schedule/spec"
	"github.com/capgraph/capgraph/server/allowedhost"
	"github.com/capgraph/capgraph/server/apikey"
	"github.com/capgraph/capgraph/state"
)

var (
	capabilityName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	envVarName     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// minLeaseTTL is the shortest accepted server.lease_ttl.
const minLeaseTTL = time.Second

// line returns the line of key, or of its nearest parent that has one.
func (d *decoder) line(key string) int {
	for k := key; k != ""; {
		if l, ok := d.lines[k]; ok {
			return l
		}
		i := strings.LastIndexAny(k, ".[")
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return 0
}

// set reports whether the file sets key (validation of a default value
// would name no line and blame the user for nothing).
func (d *decoder) set(key string) bool { _, ok := d.lines[key]; return ok }

func (d *decoder) bad(key, format string, args ...any) {
	d.add(d.line(key), key, format, args...)
}

func oneOf(v string, allowed ...string) bool { return slices.Contains(allowed, v) }

func (d *decoder) validate(c *Config) {
	d.validateModels(c)
	if !oneOf(c.Fallback, "", vocab.FallbackNone, vocab.FallbackOffline) {
		d.bad("fallback", "must be none or offline, got %q", c.Fallback)
	}
	if !oneOf(c.Classifier.Mode, "", vocab.ClassifierBatched, vocab.ClassifierPerCapability) {
		d.bad("classifier.mode", "must be batched or per_capability, got %q", c.Classifier.Mode)
	}
	if !oneOf(c.ModelCalls.TaskExtraction, "", vocab.TaskExtractionWhenNeeded, vocab.TaskExtractionAlways) {
		d.bad("model_calls.task_extraction", "must be needed or always, got %q", c.ModelCalls.TaskExtraction)
	}
	if !graph.Durability(c.Checkpoints.Durability).Valid() {
		d.bad("checkpoints.durability", "must be %s or %s, got %q", graph.DurabilitySync, graph.DurabilityAsync, c.Checkpoints.Durability)
	}
	d.validateLimits(c.Limits)
	d.validateRetry("retry.default", c.Retry.Default)
	for name, p := range c.Retry.Capabilities {
		key := "retry.capabilities." + name
		if !capabilityName.MatchString(name) {
			d.bad(key, "is not a capability name (lower_snake_case)")
		}
		d.validateRetry(key, p)
	}
	if d.set("deadlines.default") && c.Deadlines.Default == 0 {
		d.bad("deadlines.default", "must be longer than 0 (leave it out for the default 60s)")
	}
	for name, v := range c.Deadlines.Capabilities {
		key := "deadlines.capabilities." + name
		if !capabilityName.MatchString(name) {
			d.bad(key, "is not a capability name (lower_snake_case)")
		}
		if v == 0 {
			d.bad(key, "must be longer than 0")
		}
	}
	if !oneOf(c.Approval.GlobalMode, "", state.ApprovalModeDisabled, state.ApprovalModeSelective, state.ApprovalModeAll) {
		d.bad("approval.global_mode", "must be disabled, selective or all_capabilities, got %q", c.Approval.GlobalMode)
	}
	if err := checkStore(c.Store); err != "" {
		d.bad("store", "%s", err)
	}
	d.validateServer(c.Server)
	if _, err := logging.ParseLevel(c.Logging.Level); err != nil {
		d.bad("logging.level", "must be debug, info, warn or error, got %q", c.Logging.Level)
	}
	if !oneOf(c.Logging.Format, "", "text", "json") {
		d.bad("logging.format", "must be text or json, got %q", c.Logging.Format)
	}
	d.validateMCP(c)
	d.validateTelemetry(c.Telemetry)
	d.validateSchedules(c.Schedules)
	d.validateTriggers(c.Triggers)
	d.validateTargets(c.ControlSystem)
}

func (d *decoder) validateTriggers(triggers map[string]Trigger) {
	for name, tr := range triggers {
		key := "triggers." + name
		if !capabilityName.MatchString(name) {
			d.bad(key, "is not a trigger name (lower_snake_case)")
		}
		if !envVarName.MatchString(tr.SecretEnv) {
			d.bad(key+".secret_env", "is required: the name of the environment variable holding the HMAC secret, got %q", tr.SecretEnv)
		}
		if strings.TrimSpace(tr.Input) == "" {
			d.bad(key+".input", "is required: the run's message, a template over the payload")
		} else if _, err := template.New(name).Parse(tr.Input); err != nil {
			d.bad(key+".input", "is not a template: %v", err)
		}
		if tr.RatePerMinute < 0 {
			d.bad(key+".rate_per_minute", "must not be negative")
		}
		for i, c := range tr.AllowedCapabilities {
			if !capabilityName.MatchString(c) {
				d.bad(fmt.Sprintf("%s.allowed_capabilities[%d]", key, i), "%q is not a capability name (lower_snake_case)", c)
			}
		}
	}
}

func (d *decoder) validateSchedules(schedules map[string]Schedule) {
	for name, sc := range schedules {
		key := "schedules." + name
		if !capabilityName.MatchString(name) {
			d.bad(key, "is not a schedule name (lower_snake_case)")
		}
		if err := spec.Expr(sc.Cron); err != nil {
			d.bad(key+".cron", "%v", err)
		}
		if _, err := spec.Zone(sc.Timezone); err != nil {
			d.bad(key+".timezone", "%v", err)
		}
		if strings.TrimSpace(sc.Input) == "" {
			d.bad(key+".input", "is required: the message the run starts with")
		}
		if !oneOf(sc.Thread, "", ScheduleThreadNew, ScheduleThreadKeep) {
			d.bad(key+".thread", "must be new or keep, got %q", sc.Thread)
		}
		for i, c := range sc.AllowedCapabilities {
			if !capabilityName.MatchString(c) {
				d.bad(fmt.Sprintf("%s.allowed_capabilities[%d]", key, i), "%q is not a capability name (lower_snake_case)", c)
			}
		}
		if u := sc.WebhookURL; u != "" {
			if pu, err := url.Parse(u); err != nil || pu.Host == "" || pu.Scheme != "http" && pu.Scheme != "https" {
				d.bad(key+".webhook_url", "must be an http(s) URL, got %q", u)
			}
		}
	}
}

func (d *decoder) validateTelemetry(t Telemetry) {
	tr := t.Traces
	if !oneOf(tr.Exporter, "", "none", "otlp") {
		d.bad("telemetry.traces.exporter", "must be none or otlp, got %q", tr.Exporter)
	}
	if !oneOf(tr.Protocol, "", "grpc", "http/protobuf") {
		d.bad("telemetry.traces.protocol", "must be grpc or http/protobuf, got %q", tr.Protocol)
	}
	if e := tr.Endpoint; e != "" {
		if strings.Contains(e, "://") {
			if u, err := url.Parse(e); err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https" {
				d.bad("telemetry.traces.endpoint", "must be host:port or an http(s) URL, got %q", e)
			}
		} else if _, _, err := net.SplitHostPort(e); err != nil {
			d.bad("telemetry.traces.endpoint", "must be host:port or an http(s) URL, got %q", e)
		}
	}
	if r := tr.SampleRatio; r != nil && (*r < 0 || *r > 1 || *r != *r) {
		d.bad("telemetry.traces.sample_ratio", "must be between 0 and 1, got %v", *r)
	}
	if l := t.Metrics.Listen; l != "" {
		if _, port, err := net.SplitHostPort(l); err != nil || port == "" {
			d.bad("telemetry.metrics.listen", "must be host:port (\"127.0.0.1:9464\", \":9464\"), got %q", l)
		}
		if !t.Metrics.Enabled {
			d.warn("telemetry.metrics.listen", "is set but telemetry.metrics.enabled is not: no metrics are served")
		}
	}
}

var (
	mcpServerName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]*$`)
	headerName    = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

func (d *decoder) validateMCP(c *Config) {
	names := make([]string, 0, len(c.MCPServers))
	for name := range c.MCPServers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		s := c.MCPServers[name]
		key := "mcp_servers." + name
		if !mcpServerName.MatchString(name) {
			d.bad(key, "a server name starts with a letter and holds letters, digits, _, - and . (it starts the names of its capabilities)")
		}
		transport := s.Transport
		if transport == "" {
			switch {
			case s.Command != "" && s.URL != "":
				d.bad(key, "sets both command (stdio) and url (http); keep one, or set transport")
			case s.Command != "":
				transport = MCPStdio
			case s.URL != "":
				transport = MCPHTTP
			default:
				d.bad(key, "needs a command (a stdio server) or a url (an http server)")
			}
		}
		switch transport {
		case "":
		case MCPStdio:
			if strings.TrimSpace(s.Command) == "" {
				d.bad(key+".command", "a stdio server needs the command that starts it")
			}
			for _, k := range []string{"url", "headers_env"} {
				if d.set(key + "." + k) {
					d.bad(key+"."+k, "is for http servers; this one is stdio")
				}
			}
		case MCPHTTP:
			if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				d.bad(key+".url", "must be an http:// or https:// URL (the server's MCP endpoint), got %q", s.URL)
			}
			for _, k := range []string{"command", "args", "env", "dir"} {
				if d.set(key + "." + k) {
					d.bad(key+"."+k, "is for stdio servers; this one is http")
				}
			}
		default:
			d.bad(key+".transport", "must be stdio or http, got %q", s.Transport)
		}
		for k := range s.Env {
			if !envVarName.MatchString(k) {
				d.bad(key+".env."+k, "is not an environment variable name")
			}
		}
		for h, v := range s.HeadersEnv {
			if !headerName.MatchString(h) {
				d.bad(key+".headers_env."+h, "is not an HTTP header name")
			}
			if !envVarName.MatchString(v) {
				d.bad(key+".headers_env."+h, "must name the environment variable holding the header's value (the value itself does not belong in the file), got %q", v)
			}
		}
		if d.set(key+".prefix") && !capabilityName.MatchString(s.Prefix) {
			d.bad(key+".prefix", "must be lower_snake_case (it starts capability names), got %q", s.Prefix)
		}
		if s.MaxRestarts < 0 {
			d.bad(key+".max_restarts", "must not be negative, got %d", s.MaxRestarts)
		}
		for _, k := range []string{"timeout", "connect_timeout"} {
			v := s.Timeout
			if k == "connect_timeout" {
				v = s.ConnectTimeout
			}
			if d.set(key+"."+k) && v == 0 {
				d.bad(key+"."+k, "must be longer than 0 (leave it out for the default)")
			}
		}
		d.toolList(key+".read_only_tools", s.ReadOnlyTools)
		d.toolList(key+".include_tools", s.IncludeTools)
		d.toolList(key+".exclude_tools", s.ExcludeTools)
		for i, t := range s.IncludeTools {
			if slices.Contains(s.ExcludeTools, t) {
				d.bad(fmt.Sprintf("%s.include_tools[%d]", key, i), "%q is also in exclude_tools", t)
			}
		}
		for tname, t := range s.Tools {
			tkey := key + ".tools." + tname
			if t.IsErrorSeverity != "" {
				if _, err := capabilities.ParseSeverity(t.IsErrorSeverity); err != nil {
					d.bad(tkey+".is_error_severity", "must be retriable, replanning, reclassification, critical or fatal, got %q", t.IsErrorSeverity)
				}
			}
			if d.set(tkey+".timeout") && t.Timeout == 0 {
				d.bad(tkey+".timeout", "must be longer than 0 (leave it out for the server's)")
			}
			if t.SideEffects != nil && *t.SideEffects && slices.Contains(s.ReadOnlyTools, tname) {
				d.bad(tkey+".side_effects", "is true, but read_only_tools lists %q", tname)
			}
			if d.set(tkey+".description") && strings.TrimSpace(t.Description) == "" {
				d.bad(tkey+".description", "is empty (remove it to use the server's)")
			}
		}
	}
}

// toolList checks a list of tool names: none empty, none twice.
func (d *decoder) toolList(key string, list []string) {
	seen := map[string]bool{}
	for i, t := range list {
		k := fmt.Sprintf("%s[%d]", key, i)
		switch {
		case strings.TrimSpace(t) == "":
			d.bad(k, "is empty (list tool names as the server names them)")
		case seen[t]:
			d.bad(k, "%q is listed twice", t)
		}
		seen[t] = true
	}
}

func (d *decoder) validateModels(c *Config) {
	for role, m := range c.Models {
		key := "models." + role
		if !slices.Contains(vocab.Roles(), vocab.Role(role)) {
			d.bad(key, "unknown model role (known roles: %s)", strings.Join(roleNames(), ", "))
			continue
		}
		if m.Provider != "" && !slices.Contains(vocab.Providers(), m.Provider) {
			d.bad(key+".provider", "unknown provider %q (known: %s)", m.Provider, strings.Join(vocab.Providers(), ", "))
		}
		if m.BaseURL != "" {
			u, err := url.Parse(m.BaseURL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				d.bad(key+".base_url", "must be an http:// or https:// URL, got %q", m.BaseURL)
			}
		}
		if m.JSONMode != "" && !oneOf(m.JSONMode, vocab.JSONModes()...) {
			d.bad(key+".json_mode", "must be %s, got %q", strings.Join(vocab.JSONModes(), ", "), m.JSONMode)
		}
		if m.APIKeyEnv != "" && !envVarName.MatchString(m.APIKeyEnv) {
			d.bad(key+".api_key_env", "must name an environment variable (the key itself does not belong in the file), got %q", m.APIKeyEnv)
		}
		if m.Temperature != nil && (*m.Temperature < 0 || *m.Temperature > 2) {
			d.bad(key+".temperature", "must be between 0 and 2, got %g", *m.Temperature)
		}
		if m.MaxTokens < 0 {
			d.bad(key+".max_tokens", "must not be negative, got %d", m.MaxTokens)
		}
		// The role's effective settings must name a provider and a model.
		eff, _ := c.ModelFor(role)
		if m.BaseURL != "" {
			d.warnBaseURL(key+".base_url", eff.Provider, m.BaseURL)
		}
		if eff.Provider == "" {
			d.bad(key, "has no provider (set provider here or in models.default)")
		}
		if eff.Model == "" {
			d.bad(key, "has no model (set model here or in models.default)")
		}
	}
}

// warnBaseURL warns about a base_url the provider's client will not find
// its API under: the openai client appends only /chat/completions, so an
// OpenAI-compatible server's URL ends in /v1; Ollama's native API is at the
// server's root.
func (d *decoder) warnBaseURL(key, provider, base string) {
	u, err := url.Parse(base)
	if err != nil {
		return
	}
	path := strings.TrimRight(u.Path, "/")
	switch {
	case provider == vocab.ProviderOpenAI && !strings.HasSuffix(path, "/v1"):
		d.warn(key, "%q does not end in /v1: the openai provider appends only /chat/completions, and OpenAI-compatible servers "+
			"(vLLM, Ollama, LM Studio, llama.cpp, LiteLLM) answer at /v1/chat/completions — write e.g. http://host:8000/v1 "+
			"(keep it only if your gateway documents this path)", base)
	case provider == vocab.ProviderOllama && strings.HasSuffix(path, "/v1"):
		d.warn(key, "%q ends in /v1, but the ollama provider speaks Ollama's native API at the server's root: "+
			"write e.g. http://host:11434, or use provider openai for Ollama's OpenAI-compatible /v1", base)
	}
}

func (d *decoder) validateLimits(l Limits) {
	// A key left out is zero and takes the library's default; a key set
	// must hold a usable value.
	atLeast := func(key string, v, min int) {
		if d.set("limits."+key) && v < min {
			d.bad("limits."+key, "must be at least %d, got %d", min, v)
		}
	}
	atLeast("max_planning_attempts", l.MaxPlanningAttempts, 1)
	if l.MaxReclassifications != nil {
		atLeast("max_reclassifications", *l.MaxReclassifications, 0)
	}
	atLeast("max_node_steps", l.MaxNodeSteps, 1)
	atLeast("max_tokens_per_turn", l.MaxTokensPerTurn, 0)
	atLeast("max_concurrent_classifications", l.MaxConcurrentClassifications, 1)
	atLeast("step_concurrency", l.StepConcurrency, 1)
	atLeast("max_artifact_bytes", l.MaxArtifactBytes, 1)
	if d.set("limits.max_execution_time") && l.MaxExecutionTime == 0 {
		d.bad("limits.max_execution_time", "must be longer than 0 (a turn needs time to run)")
	}
	for _, k := range []string{"error_node_grace", "error_explanation_timeout"} {
		v := l.ErrorNodeGrace
		if k == "error_explanation_timeout" {
			v = l.ErrorExplanationTimeout
		}
		if d.set("limits."+k) && v == 0 {
			d.bad("limits."+k, "must be longer than 0 (leave it out for the default 30s)")
		}
	}
}

func (d *decoder) validateRetry(key string, p capabilities.RetryPolicy) {
	if d.set(key+".max_attempts") && p.MaxAttempts < 1 {
		d.bad(key+".max_attempts", "must be at least 1 (it counts the first try), got %d", p.MaxAttempts)
	}
	if d.set(key+".backoff_coefficient") && p.BackoffCoefficient < 1 {
		d.bad(key+".backoff_coefficient", "must be at least 1, got %g", p.BackoffCoefficient)
	}
	if p.MaxInterval != 0 && p.InitialInterval > p.MaxInterval {
		d.bad(key+".initial_interval", "%s is longer than max_interval %s", p.InitialInterval, p.MaxInterval)
	}
	if !oneOf(string(p.Jitter), "", string(capabilities.JitterFull), string(capabilities.JitterEqual), string(capabilities.JitterNone)) {
		d.bad(key+".jitter", "must be full, equal or none, got %q", p.Jitter)
	}
	for i, k := range p.NonRetryable {
		if strings.TrimSpace(k) == "" {
			d.bad(fmt.Sprintf("%s.non_retryable[%d]", key, i), "is empty (list error kinds such as limit_violation, auth)")
		}
	}
}

// checkStore returns what is wrong with a store value, or "".
func checkStore(s string) string {
	switch {
	case s == "" || s == StoreMemory:
		return ""
	case strings.HasPrefix(s, "sqlite:"):
		if strings.TrimSpace(strings.TrimPrefix(s, "sqlite:")) == "" {
			return "sqlite: needs a file path, e.g. sqlite:/var/lib/capgraph/state.db"
		}
		return ""
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return "is not a valid postgres:// URL (postgres://user:pass@host:5432/db)"
		}
		return ""
	}
	return fmt.Sprintf("must be memory, sqlite:PATH or a postgres:// URL, got %q", s)
}

// validPort: a TCP port number, 0 to 65535 (a name such as "http" is not
// one: listeners here take numbers).
func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 0 && n <= 65535 && strconv.Itoa(n) == p
}

func (d *decoder) validateServer(s Server) {
	if _, port, err := net.SplitHostPort(s.Addr); d.set("server.addr") && err != nil {
		d.bad("server.addr", "must be host:port (e.g. 127.0.0.1:8080 or :8080), got %q", s.Addr)
	} else if d.set("server.addr") && !validPort(port) {
		d.bad("server.addr", "the port must be a number from 0 to 65535 (0: any free port), got %q in %q", port, s.Addr)
	}
	if s.GCPercent < 0 {
		d.bad("server.gc_percent", "must be positive (0: the default, 400), got %d; GOGC=off in the environment turns the collector off", s.GCPercent)
	}
	if d.set("server.max_body_bytes") && s.MaxBodyBytes < 1 {
		d.bad("server.max_body_bytes", "must be at least 1, got %d", s.MaxBodyBytes)
	}
	if d.set("server.limits.max_concurrent_runs") && s.Limits.MaxConcurrentRuns < 1 {
		d.bad("server.limits.max_concurrent_runs", "must be at least 1, got %d", s.Limits.MaxConcurrentRuns)
	}
	if s.Limits.RequestsPerMinute < 0 {
		d.bad("server.limits.requests_per_minute", "must not be negative, got %d", s.Limits.RequestsPerMinute)
	}
	if s.Limits.MaxThreads < -1 {
		d.bad("server.limits.max_threads", "must be -1 (no bound), 0 (the default) or more, got %d", s.Limits.MaxThreads)
	}
	for key, v := range map[string]int{"max_metadata_keys": s.Limits.MaxMetadataKeys, "max_metadata_bytes": s.Limits.MaxMetadataBytes, "max_page_size": s.Limits.MaxPageSize} {
		if v < 0 {
			d.bad("server.limits."+key, "must not be negative, got %d", v)
		}
	}
	for key, v := range map[string]Duration{"body_idle_timeout": s.Limits.BodyIdleTimeout, "run_retention": s.Limits.RunRetention, "thread_retention": s.Limits.ThreadRetention} {
		if v < 0 {
			d.bad("server.limits."+key, "must not be negative, got %s", time.Duration(v))
		}
	}
	// A lease renewed every TTL/3 over a database round trip needs some
	// room; 0 keeps the agent's default.
	if ttl := time.Duration(s.LeaseTTL); ttl != 0 && ttl < minLeaseTTL {
		d.bad("server.lease_ttl", "must be 0 (the default, 30s) or at least %s, got %s", minLeaseTTL, ttl)
	}
	if d.set("server.audit_log") && strings.TrimSpace(s.AuditLog) == "" {
		d.bad("server.audit_log", "must be a file path (remove the key for no audit file)")
	}
	if d.set("server.lease_owner") && (s.LeaseOwner == "" || strings.TrimSpace(s.LeaseOwner) != s.LeaseOwner) {
		d.bad("server.lease_owner", "must be a non-empty name without surrounding spaces, got %q", s.LeaseOwner)
	}
	if !oneOf(s.StatusFrames, "", StatusFramesAuto, StatusFramesOn, StatusFramesOff) {
		d.bad("server.status_frames", "must be auto, on or off, got %q", s.StatusFrames)
	}
	for i, o := range s.CORSOrigins {
		if o != "*" && !isOrigin(o) {
			d.bad(fmt.Sprintf("server.cors_origins[%d]", i), "%q is not an origin: want scheme://host[:port] (e.g. https://portal.example.org) or \"*\"", o)
		}
	}
	for i, h := range s.AllowedHosts {
		if _, err := allowedhost.Parse(h); err != nil {
			d.bad(fmt.Sprintf("server.allowed_hosts[%d]", i), "%v", err)
		}
	}
	if d.set("server.public_url") {
		if u, err := url.Parse(s.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			d.bad("server.public_url", "%q is not an absolute http(s) address without query (e.g. https://capgraph.example.org)", s.PublicURL)
		}
	}
	if s.Page.TimeZone != "" {
		if _, err := time.LoadLocation(s.Page.TimeZone); err != nil {
			d.bad("server.page.time_zone", "%q is not a time zone this machine knows: want an IANA name such as UTC or Europe/Berlin", s.Page.TimeZone)
		}
	}
	if s.Page.Logo != "" {
		if _, ok := LogoTypes[strings.ToLower(filepath.Ext(s.Page.Logo))]; !ok {
			d.bad("server.page.logo", "%q is not an image file the page shows: want .svg, .png, .jpg, .webp or .gif", s.Page.Logo)
		}
	}
	if s.ArtifactSecret != "" && len(s.ArtifactSecret) < 16 {
		d.bad("server.artifact_secret", "must be at least 16 characters (random), got %d", len(s.ArtifactSecret))
	}
	for i, o := range s.FrameAncestors {
		if !isOrigin(o) {
			d.bad(fmt.Sprintf("server.frame_ancestors[%d]", i), "%q is not an origin: want scheme://host[:port] (e.g. https://portal.example.org)", o)
		}
	}
	names := map[string]string{}
	for i, k := range s.APIKeys {
		key := fmt.Sprintf("server.api_keys[%d]", i)
		switch {
		case strings.TrimSpace(k.Name) == "":
			d.bad(key+".name", "every API key needs a name")
		case names[k.Name] != "":
			d.bad(key+".name", "%q is already the name of %s", k.Name, names[k.Name])
		default:
			names[k.Name] = key
		}
		switch {
		case k.Key == "" && k.KeySHA256 == "":
			d.bad(key, "needs key or key_sha256")
		case k.Key != "" && k.KeySHA256 != "":
			d.bad(key, "sets both key and key_sha256; keep one")
		case k.Key != "" && apikey.Check(k.Key) != nil:
			d.bad(key+".key", "%v", apikey.Check(k.Key))
		case k.KeySHA256 != "":
			if b, err := hex.DecodeString(k.KeySHA256); err != nil || len(b) != 32 {
				d.bad(key+".key_sha256", "must be 64 hex digits (sha256sum of the key)")
			}
		}
		for j, c := range k.AllowedCapabilities {
			if !capabilityName.MatchString(c) {
				d.bad(fmt.Sprintf("%s.allowed_capabilities[%d]", key, j), "%q is not a capability name (lower_snake_case)", c)
			}
		}
		if k.MaxConcurrentRuns < 0 {
			d.bad(key+".max_concurrent_runs", "must not be negative, got %d", k.MaxConcurrentRuns)
		}
		if d.set(key+".status_frames") && !oneOf(k.StatusFrames, StatusFramesAuto, StatusFramesOn, StatusFramesOff) {
			d.bad(key+".status_frames", "must be auto, on or off, got %q", k.StatusFrames)
		}
		for j, set := range k.MayRaise {
			sub := fmt.Sprintf("%s.may_raise[%d]", key, j)
			switch {
			case set == state.SettingWritesEnabled:
				d.bad(sub, "writes_enabled cannot be raised by a key: it is this process's switch (control_system.writes_enabled), checked where every write executes")
			case !slices.Contains(state.RaisableSettings(), set):
				d.bad(sub, "%q is not a setting a key may raise (known: %s)", set, strings.Join(state.RaisableSettings(), ", "))
			}
		}
	}
}

// roleNames lists the model roles as strings, for messages.
func roleNames() []string {
	var out []string
	for _, r := range vocab.Roles() {
		out = append(out, string(r))
	}
	return out
}

// isOrigin reports whether o is a browser origin: http(s)://host[:port],
// nothing after it.
func isOrigin(o string) bool {
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil &&
		(u.Path == "" || u.Path == "/") && u.RawQuery == "" && u.Fragment == "" && !strings.ContainsAny(o, " ;,'\"")
}
