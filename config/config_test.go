package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/config"
)

const full = `# every section once
models:
  default:
    provider: openai
    model: gpt-4o-mini
    base_url: http://localhost:11434/v1
    api_key_env: OPENAI_API_KEY
    temperature: 0.2
    max_tokens: 2048
    timeout: 60s
  classifier:
    model: small-model
    temperature: 0
    legacy_max_tokens: true
fallback: offline
classifier:
  mode: per_capability
limits:
  max_planning_attempts: 3
  max_reclassifications: 0
  max_execution_time: 10m
  max_node_steps: 50
  max_tokens_per_turn: 100_000
  max_concurrent_classifications: 8
  step_concurrency: 2
retry:
  default:
    max_attempts: 4
    initial_interval: 500ms
    backoff_coefficient: 1.5
    max_interval: 10s
  capabilities:
    channel_write:
      max_attempts: 1
      non_retryable: [limit_violation, writes_disabled]
approval:
  global_mode: all_capabilities
  plan_approval: true
  expires_after: 2h
control_system:
  writes_enabled: true
store: sqlite:/tmp/capgraph.db
server:
  addr: ":9090"
  max_body_bytes: 2048
  api_keys:
    - name: webui
      key: ${CAPGRAPH_TEST_KEY:-0123456789abcdef0123}
      trusted_frontend: true
      allowed_capabilities: [channel_read]
      max_concurrent_runs: 2
    - name: ops
      key_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
      tenant: operations
  limits:
    max_concurrent_runs: 32
    requests_per_minute: 60
    run_timeout: 3m
logging:
  level: debug
  format: json
`

func TestParseFull(t *testing.T) {
	c, err := config.Parse([]byte(full), "capgraph.yaml")
	if err != nil {
		t.Fatal(err)
	}
	temp := 0.2
	zero := 0.0
	zeroInt := 0
	twoHours := config.Duration(2 * time.Hour)
	checks := []struct {
		name      string
		got, want any
	}{
		{"default model", c.Models["default"], config.Model{Provider: "openai", Model: "gpt-4o-mini", BaseURL: "http://localhost:11434/v1", APIKeyEnv: "OPENAI_API_KEY", Temperature: &temp, MaxTokens: 2048, Timeout: config.Duration(time.Minute)}},
		{"fallback", c.Fallback, "offline"},
		{"classifier", c.Classifier.Mode, "per_capability"},
		{"limits", c.Limits, config.Limits{MaxPlanningAttempts: 3, MaxReclassifications: &zeroInt, MaxExecutionTime: config.Duration(10 * time.Minute), MaxNodeSteps: 50, MaxTokensPerTurn: 100000, MaxConcurrentClassifications: 8, StepConcurrency: 2}},
		{"retry default", c.Retry.Default, capabilities.RetryPolicy{MaxAttempts: 4, InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 1.5, MaxInterval: 10 * time.Second}},
		{"retry write", c.Retry.Capabilities["channel_write"], capabilities.RetryPolicy{MaxAttempts: 1, NonRetryable: []string{"limit_violation", "writes_disabled"}}},
		{"approval", c.Approval, config.Approval{GlobalMode: "all_capabilities", PlanApproval: true, ExpiresAfter: &twoHours}},
		{"writes", c.ControlSystem.WritesEnabled, true},
		{"store", c.Store, "sqlite:/tmp/capgraph.db"},
		{"addr", c.Server.Addr, ":9090"},
		{"body", c.Server.MaxBodyBytes, int64(2048)},
		{"key0", c.Server.APIKeys[0], config.APIKey{Name: "webui", Key: "0123456789abcdef0123", Tenant: "webui", TrustedFrontend: true, AllowedCapabilities: []string{"channel_read"}, MaxConcurrentRuns: 2}},
		{"key1 tenant", c.Server.APIKeys[1].Tenant, "operations"},
		{"server limits", c.Server.Limits, config.ServerLimits{MaxConcurrentRuns: 32, RequestsPerMinute: 60, RunTimeout: config.Duration(3 * time.Minute)}},
		{"logging", c.Logging, config.Logging{Level: "debug", Format: "json"}},
		{"line of max_node_steps", c.Line("limits.max_node_steps"), 22},
		{"line of key", c.Line("server.api_keys[0].key"), 48},
		{"line unset", c.Line("limits.nothing"), 0},
		{"source", c.Source(), "capgraph.yaml"},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %#v, want %#v", ch.name, ch.got, ch.want)
		}
	}
	// The classifier role inherits what it leaves empty from default.
	m, ok := c.ModelFor("classifier")
	if !ok || m.Provider != "openai" || m.Model != "small-model" || *m.Temperature != zero || m.MaxTokens != 2048 || !m.LegacyMaxTokens {
		t.Errorf("ModelFor(classifier) = %+v, %v", m, ok)
	}
	if m, ok := c.ModelFor("response"); !ok || m.Model != "gpt-4o-mini" || m.LegacyMaxTokens {
		t.Errorf("ModelFor(response) = %+v, %v; want the default role", m, ok)
	}
	p, ok := c.RetryPolicyFor("channel_write")
	if !ok || p.MaxAttempts != 1 || p.InitialInterval != 500*time.Millisecond || p.BackoffCoefficient != 1.5 {
		t.Errorf("RetryPolicyFor(channel_write) = %+v, %v", p, ok)
	}
	if p, ok := c.RetryPolicyFor("channel_read"); ok || p.MaxAttempts != 4 || p.Jitter != capabilities.JitterFull {
		t.Errorf("RetryPolicyFor(channel_read) = %+v, %v; want the default with defaults filled", p, ok)
	}
}

func TestKeepIntermediate(t *testing.T) {
	for in, want := range map[string]*config.Retention{
		"":                             nil,
		"keep_intermediate: false":     {},
		"keep_intermediate: FALSE":     {},
		"keep_intermediate: true":      {Forever: true},
		"keep_intermediate: 0":         {},
		"keep_intermediate: 24h":       {For: config.Duration(24 * time.Hour)},
		"keep_intermediate: 90":        {For: config.Duration(90 * time.Second)},
		"keep_intermediate: 1h30m":     {For: config.Duration(90 * time.Minute)},
		"keep_intermediate: ${KEEP_X}": {For: config.Duration(36 * time.Hour)},
	} {
		t.Setenv("KEEP_X", "36h")
		c, err := config.Parse([]byte("checkpoints:\n  "+in+"\n"), "k.yaml")
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		got := c.Checkpoints.KeepIntermediate
		if (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Errorf("%q parsed to %+v, want %+v", in, got, want)
		}
	}
}

func TestEmptyFileIsDefault(t *testing.T) {
	for _, in := range []string{"", "# only a comment\n", "---\n"} {
		c, err := config.Parse([]byte(in), "x.yaml")
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		d := config.Default()
		if c.Limits != d.Limits || c.Approval != d.Approval || c.Server.Addr != d.Server.Addr || c.Fallback != "" {
			t.Errorf("%q: not the default config: %+v", in, c)
		}
		if _, ok := c.ModelFor("classifier"); ok {
			t.Errorf("%q: a model is configured by default; want offline", in)
		}
	}
}

// Default leaves every setting the library has a default for at zero, so
// the library's default applies (wiring's tests check what an empty file
// yields); only what is no library setting has a value here.
func TestDefaults(t *testing.T) {
	d := config.Default()
	if d.Limits != (config.Limits{}) || d.Approval != (config.Approval{}) || d.Classifier != (config.Classifier{}) || d.Fallback != "" ||
		d.ControlSystem.WritesEnabled || d.Logging != (config.Logging{}) || d.Store != "" ||
		d.Server.Addr != "" || d.Server.MaxBodyBytes != 0 || d.Server.Limits != (config.ServerLimits{}) || d.Server.LeaseTTL != 0 {
		t.Errorf("a default is set in config, not left to the library: %+v", d)
	}
	if len(d.Models) != 0 {
		t.Errorf("models by default: %v; want offline", d.Models)
	}
}

// A key a former version read gets an error naming its new name.
func TestRenamedKeyNamesTheNewOne(t *testing.T) {
	_, err := config.Parse([]byte("limits:\n  max_steps: 40\n"), "capgraph.yaml")
	var ce *config.Error
	if !errors.As(err, &ce) || len(ce.Problems) != 1 {
		t.Fatalf("got %v", err)
	}
	if p := ce.Problems[0]; p.Line != 2 || p.Key != "limits.max_steps" || !strings.Contains(p.Problem, "renamed") || !strings.Contains(p.Problem, "limits.max_node_steps") {
		t.Errorf("problem %+v", p)
	}
}

func TestEnvExpansion(t *testing.T) {
	t.Setenv("CG_STEPS", "42")
	t.Setenv("CG_EMPTY", "")
	t.Setenv("CG_MODEL", "llama3")
	in := `limits:
  max_node_steps: ${CG_STEPS}
  step_concurrency: ${CG_UNSET_XYZ:-3}
models:
  default:
    provider: ollama
    model: ${CG_MODEL}-${CG_EMPTY:-latest}
server:
  addr: "$${literal}:80"
`
	c, err := config.Parse([]byte(in), "env.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits.MaxNodeSteps != 42 || c.Limits.StepConcurrency != 3 || c.Models["default"].Model != "llama3-latest" || c.Server.Addr != "${literal}:80" {
		t.Errorf("expansion wrong: steps=%d conc=%d model=%q addr=%q", c.Limits.MaxNodeSteps, c.Limits.StepConcurrency, c.Models["default"].Model, c.Server.Addr)
	}
}

// TestBadConfig is the table of every kind of bad configuration: each must
// name its key and its line.
func TestBadConfig(t *testing.T) {
	tests := []struct {
		name string
		in   string
		line int
		key  string
		text string
	}{
		{"unknown top-level key", "limts:\n  max_node_steps: 3\n", 1, "limts", "did you mean limits?"},
		{"unknown nested key", "limits:\n  max_step: 3\n", 2, "limits.max_step", "did you mean max_node_steps?"},
		{"unknown key far from any", "server:\n  zzzzzzzz: 1\n", 2, "server.zzzzzzzz", "known keys: addr"},
		{"wrong type int", "limits:\n  max_node_steps: ten\n", 2, "limits.max_node_steps", "whole number"},
		{"float for int", "limits:\n  max_node_steps: 1.5\n", 2, "limits.max_node_steps", "whole number"},
		{"wrong type bool", "control_system:\n  writes_enabled: yes\n", 2, "control_system.writes_enabled", "true or false"},
		{"mapping for scalar", "store:\n  path: x\n", 2, "store", "single value"},
		{"scalar for mapping", "limits: 5\n", 1, "limits", "mapping"},
		{"scalar for list", "server:\n  api_keys: abc\n", 2, "server.api_keys", "list"},
		{"bad duration", "limits:\n  max_execution_time: soon\n", 2, "limits.max_execution_time", "duration"},
		{"negative duration", "approval:\n  expires_after: -5s\n", 2, "approval.expires_after", "negative"},
		{"null scalar", "fallback:\n", 1, "fallback", "no value"},
		{"bad park_after", "server:\n  lease_ttl: 30s\n  limits:\n    park_after: later\n", 4, "server.limits.park_after", `0 (the default) or "never", got "later"`},
		{"park_after typo never", "server:\n  limits:\n    park_after: nevr\n", 3, "server.limits.park_after", "never"},
		{"park_after list", "server:\n  limits:\n    park_after: [5s]\n", 3, "server.limits.park_after", "single value"},
		{"duplicate key", "fallback: none\nfallback: offline\n", 2, "fallback", "set twice (first on line 1)"},
		{"bad enum fallback", "fallback: sometimes\n", 1, "fallback", "none or offline"},
		{"bad classifier mode", "classifier:\n  mode: fast\n", 2, "classifier.mode", "batched or per_capability"},
		{"bad task extraction", "model_calls:\n  task_extraction: sometimes\n", 2, "model_calls.task_extraction", "needed or always"},
		{"zero max_node_steps", "limits:\n  max_node_steps: 0\n", 2, "limits.max_node_steps", "at least 1"},
		{"negative reclass", "limits:\n  max_reclassifications: -1\n", 2, "limits.max_reclassifications", "at least 0"},
		{"zero planning", "limits:\n  max_planning_attempts: 0\n", 2, "limits.max_planning_attempts", "at least 1"},
		{"zero exec time", "limits:\n  max_execution_time: 0s\n", 2, "limits.max_execution_time", "longer than 0"},
		{"zero concurrency", "limits:\n  step_concurrency: 0\n", 2, "limits.step_concurrency", "at least 1"},
		{"zero error node grace", "limits:\n  error_node_grace: 0s\n", 2, "limits.error_node_grace", "longer than 0"},
		{"zero explanation timeout", "limits:\n  error_explanation_timeout: 0\n", 2, "limits.error_explanation_timeout", "longer than 0"},
		{"negative error node grace", "limits:\n  error_node_grace: -1s\n", 2, "limits.error_node_grace", "negative"},
		{"retry zero attempts", "retry:\n  default:\n    max_attempts: 0\n", 3, "retry.default.max_attempts", "at least 1"},
		{"retry coefficient", "retry:\n  capabilities:\n    channel_read:\n      backoff_coefficient: 0.5\n", 4, "retry.capabilities.channel_read.backoff_coefficient", "at least 1"},
		{"retry intervals", "retry:\n  default:\n    initial_interval: 1m\n    max_interval: 1s\n", 3, "retry.default.initial_interval", "longer than max_interval"},
		{"retry jitter", "retry:\n  default:\n    jitter: lots\n", 3, "retry.default.jitter", "full, equal or none"},
		{"retry unknown field", "retry:\n  default:\n    attempts: 2\n", 3, "retry.default.attempts", "did you mean"},
		{"retry bad capability name", "retry:\n  capabilities:\n    ChannelRead: {}\n", 3, "retry.capabilities.ChannelRead", "lower_snake_case"},
		{"schedule cron", "schedules:\n  morning:\n    cron: 0 7 * *\n    input: report\n", 3, "schedules.morning.cron", "not a cron expression"},
		{"schedule zone", "schedules:\n  morning:\n    cron: 0 7 * * *\n    timezone: Mars/Olympus\n    input: report\n", 4, "schedules.morning.timezone", "unknown time zone"},
		{"schedule input", "schedules:\n  morning:\n    cron: 0 7 * * *\n", 2, "schedules.morning.input", "is required"},
		{"schedule thread", "schedules:\n  morning:\n    cron: 0 7 * * *\n    input: report\n    thread: old\n", 5, "schedules.morning.thread", "new or keep"},
		{"schedule webhook", "schedules:\n  morning:\n    cron: 0 7 * * *\n    input: report\n    webhook_url: ftp://x\n", 5, "schedules.morning.webhook_url", "http(s) URL"},
		{"schedule name", "schedules:\n  Morning:\n    cron: 0 7 * * *\n    input: report\n", 2, "schedules.Morning", "lower_snake_case"},
		{"trigger secret env", "triggers:\n  alarm:\n    input: x\n", 2, "triggers.alarm.secret_env", "is required"},
		{"trigger template", "triggers:\n  alarm:\n    secret_env: ALARM_SECRET\n    input: \"{{.alarm\"\n", 4, "triggers.alarm.input", "not a template"},
		{"trigger rate", "triggers:\n  alarm:\n    secret_env: ALARM_SECRET\n    input: x\n    rate_per_minute: -1\n", 5, "triggers.alarm.rate_per_minute", "negative"},
		{"deadline zero", "deadlines:\n  default: 0s\n", 2, "deadlines.default", "longer than 0"},
		{"deadline negative", "deadlines:\n  capabilities:\n    channel_read: -5s\n", 3, "deadlines.capabilities.channel_read", "negative"},
		{"deadline capability zero", "deadlines:\n  capabilities:\n    channel_read: 0\n", 3, "deadlines.capabilities.channel_read", "longer than 0"},
		{"deadline bad capability name", "deadlines:\n  capabilities:\n    ChannelRead: 5s\n", 3, "deadlines.capabilities.ChannelRead", "lower_snake_case"},
		{"approval mode", "approval:\n  global_mode: some\n", 2, "approval.global_mode", "disabled, selective or all_capabilities"},
		{"keep_intermediate word", "checkpoints:\n  keep_intermediate: yes\n", 2, "checkpoints.keep_intermediate", `must be true, false or a duration such as "24h", got "yes"`},
		{"bad durability", "checkpoints:\n  durability: exit\n", 2, "checkpoints.durability", `must be sync or async, got "exit"`},
		{"negative gc_percent", "server:\n  gc_percent: -1\n", 2, "server.gc_percent", "must be positive (0: the default, 400), got -1"},
		{"keep_intermediate negative", "checkpoints:\n  keep_intermediate: -1h\n", 2, "checkpoints.keep_intermediate", "true, false or a duration"},
		{"keep_intermediate list", "checkpoints:\n  keep_intermediate: [1h]\n", 2, "checkpoints.keep_intermediate", "single value"},
		{"checkpoints typo", "checkpoints:\n  keep_intermediates: true\n", 2, "checkpoints.keep_intermediates", "did you mean keep_intermediate?"},
		{"store scheme", "store: mysql://x\n", 1, "store", "memory, sqlite:PATH"},
		{"store sqlite no path", "store: \"sqlite:\"\n", 1, "store", "file path"},
		{"store postgres no host", "store: postgres://\n", 1, "store", "postgres:// URL"},
		{"unknown role", "models:\n  planner:\n    provider: openai\n    model: x\n", 2, "models.planner", "unknown model role"},
		{"unknown provider", "models:\n  default:\n    provider: acme\n    model: x\n", 3, "models.default.provider", "unknown provider"},
		{"no provider", "models:\n  default:\n    model: x\n", 2, "models.default", "no provider"},
		{"no model", "models:\n  response:\n    provider: openai\n", 2, "models.response", "no model"},
		{"temperature", "models:\n  default:\n    provider: openai\n    model: x\n    temperature: 3\n", 5, "models.default.temperature", "between 0 and 2"},
		{"base url", "models:\n  default:\n    provider: openai\n    model: x\n    base_url: localhost:8000\n", 5, "models.default.base_url", "http://"},
		{"api key in env field", "models:\n  default:\n    provider: openai\n    model: x\n    api_key_env: sk-abc123!\n", 5, "models.default.api_key_env", "environment variable"},
		{"negative max_tokens", "models:\n  default:\n    provider: openai\n    model: x\n    max_tokens: -1\n", 5, "models.default.max_tokens", "negative"},
		{"server addr", "server:\n  addr: localhost\n", 2, "server.addr", "host:port"},
		{"server port too large", "server:\n  addr: 127.0.0.1:99999\n", 2, "server.addr", `the port must be a number from 0 to 65535 (0: any free port), got "99999"`},
		{"server port not a number", "server:\n  addr: \"127.0.0.1:http\"\n", 2, "server.addr", "the port must be a number"},
		{"server port empty", "server:\n  addr: \"127.0.0.1:\"\n", 2, "server.addr", "the port must be a number"},
		{"server body", "server:\n  max_body_bytes: 0\n", 2, "server.max_body_bytes", "at least 1"},
		{"server limits", "server:\n  limits:\n    max_concurrent_runs: 0\n", 3, "server.limits.max_concurrent_runs", "at least 1"},
		{"lease ttl short", "server:\n  lease_ttl: 10ms\n", 2, "server.lease_ttl", "at least 1s"},
		{"lease ttl negative", "server:\n  lease_ttl: -5s\n", 2, "server.lease_ttl", "negative"},
		{"lease owner blank", "server:\n  lease_owner: \"  \"\n", 2, "server.lease_owner", "non-empty name"},
		{"api key no name", "server:\n  api_keys:\n    - key: 0123456789abcdef0\n", 3, "server.api_keys[0].name", "needs a name"},
		{"api key duplicate name", "server:\n  api_keys:\n    - {name: a, key: 0123456789abcdef0}\n    - {name: a, key: 0123456789abcdef1}\n", 4, "server.api_keys[1].name", "already the name"},
		{"api key no key", "server:\n  api_keys:\n    - name: a\n", 3, "server.api_keys[0]", "needs key or key_sha256"},
		{"api key both", "server:\n  api_keys:\n    - name: a\n      key: 0123456789abcdef0\n      key_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n", 3, "server.api_keys[0]", "both"},
		{"api key short", "server:\n  api_keys:\n    - name: a\n      key: secret\n", 4, "server.api_keys[0].key", "at least 16"},
		{"api key sha", "server:\n  api_keys:\n    - name: a\n      key_sha256: abc\n", 4, "server.api_keys[0].key_sha256", "64 hex"},
		{"may raise writes", "server:\n  api_keys:\n    - name: a\n      key: 0123456789abcdef0\n      may_raise: [approval_mode, writes_enabled]\n", 5, "server.api_keys[0].may_raise[1]", "writes_enabled cannot be raised"},
		{"may raise unknown", "server:\n  api_keys:\n    - name: a\n      key: 0123456789abcdef0\n      may_raise:\n        - approvals\n", 6, "server.api_keys[0].may_raise[0]", "known: approval_mode, plan_approval"},
		{"admin not bool", "server:\n  api_keys:\n    - name: a\n      key: 0123456789abcdef0\n      admin: yes\n", 5, "server.api_keys[0].admin", "true or false"},
		{"audit log empty", "server:\n  audit_log: \"\"\n", 2, "server.audit_log", "file path"},
		{"status frames", "server:\n  status_frames: sometimes\n", 2, "server.status_frames", "auto, on or off"},
		{"page time zone", "server:\n  page:\n    time_zone: Mars/Olympus\n", 3, "server.page.time_zone", "not a time zone"},
		{"page logo not an image", "server:\n  page:\n    name: Control room\n    logo: logo.pdf\n", 4, "server.page.logo", "not an image file"},
		{"key status frames", "server:\n  api_keys:\n    - name: a\n      key: 0123456789abcdef0\n      status_frames: always\n", 5, "server.api_keys[0].status_frames", "auto, on or off"},
		{"cors origin with path", "server:\n  cors_origins: [\"https://portal.example.org/chat\"]\n", 2, "server.cors_origins[0]", "not an origin"},
		{"cors origin without scheme", "server:\n  cors_origins:\n    - https://ok.example.org\n    - portal.example.org\n", 4, "server.cors_origins[1]", "not an origin"},
		{"allowed host as URL", "server:\n  allowed_hosts: [\"https://capgraph.example.org\"]\n", 2, "server.allowed_hosts[0]", "not a host"},
		{"allowed host with path", "server:\n  allowed_hosts:\n    - capgraph.example.org\n    - capgraph.example.org/chat\n", 4, "server.allowed_hosts[1]", "not a host"},
		{"allowed host bad port", "server:\n  allowed_hosts: [\"capgraph.example.org:0\"]\n", 2, "server.allowed_hosts[0]", "no valid port"},
		{"allowed host IPv6 without brackets", "server:\n  allowed_hosts: [\"fd00::5\"]\n", 2, "server.allowed_hosts[0]", "not a host"},
		{"frame ancestor star", "server:\n  frame_ancestors: [\"*\"]\n", 2, "server.frame_ancestors[0]", "not an origin"},
		{"public url without scheme", "server:\n  public_url: capgraph.example.org\n", 2, "server.public_url", "absolute http(s) address"},
		{"public url with query", "server:\n  public_url: https://cg.example.org/?a=1\n", 2, "server.public_url", "without query"},
		{"artifact secret short", "server:\n  artifact_secret: s3cret\n", 2, "server.artifact_secret", "at least 16 characters"},
		{"artifact url ttl", "server:\n  artifact_url_ttl: -1h\n", 2, "server.artifact_url_ttl", "negative"},
		{"max artifact bytes", "limits:\n  max_artifact_bytes: 0\n", 2, "limits.max_artifact_bytes", "at least 1"},
		{"old audit key", "server:\n  audit_logs: a.jsonl\n", 2, "server.audit_logs", "did you mean audit_log?"},
		{"agent control typo", "agent_control:\n  skip_classifier: true\n", 2, "agent_control.skip_classifier", "known keys: skip_task_extraction, skip_classification"},
		{"api key capability", "server:\n  api_keys:\n    - name: a\n      key: 0123456789abcdef0\n      allowed_capabilities: [Read]\n", 5, "server.api_keys[0].allowed_capabilities[0]", "capability name"},
		{"log level", "logging:\n  level: loud\n", 2, "logging.level", "debug, info"},
		{"log format", "logging:\n  format: xml\n", 2, "logging.format", "text or json"},
		{"trace exporter", "telemetry:\n  traces:\n    exporter: jaeger\n", 3, "telemetry.traces.exporter", "none or otlp"},
		{"trace protocol", "telemetry:\n  traces:\n    exporter: otlp\n    protocol: http/json\n", 4, "telemetry.traces.protocol", "grpc or http/protobuf"},
		{"trace endpoint", "telemetry:\n  traces:\n    endpoint: collector\n", 3, "telemetry.traces.endpoint", "host:port or an http(s) URL"},
		{"trace endpoint scheme", "telemetry:\n  traces:\n    endpoint: grpc://collector:4317\n", 3, "telemetry.traces.endpoint", "host:port or an http(s) URL"},
		{"sample ratio", "telemetry:\n  traces:\n    sample_ratio: 1.5\n", 3, "telemetry.traces.sample_ratio", "between 0 and 1"},
		{"metrics listen", "telemetry:\n  metrics:\n    enabled: true\n    listen: 9464\n", 4, "telemetry.metrics.listen", "host:port"},
		{"telemetry typo", "telemetry:\n  metric:\n    enabled: true\n", 2, "telemetry.metric", "did you mean metrics?"},
		{"mcp no command or url", "mcp_servers:\n  wiki: {}\n", 2, "mcp_servers.wiki", "needs a command"},
		{"mcp both command and url", "mcp_servers:\n  wiki:\n    command: wiki-mcp\n    url: https://wiki/mcp\n", 2, "mcp_servers.wiki", "both command"},
		{"mcp bad transport", "mcp_servers:\n  wiki:\n    transport: sse\n    url: https://wiki/mcp\n", 3, "mcp_servers.wiki.transport", "stdio or http"},
		{"mcp stdio without command", "mcp_servers:\n  wiki:\n    transport: stdio\n    args: [x]\n", 2, "mcp_servers.wiki.command", "needs the command"},
		{"mcp http bad url", "mcp_servers:\n  wiki:\n    transport: http\n    url: wiki:8080/mcp\n", 4, "mcp_servers.wiki.url", "http:// or https://"},
		{"mcp http with env", "mcp_servers:\n  wiki:\n    url: https://wiki/mcp\n    env: {A: b}\n", 4, "mcp_servers.wiki.env", "for stdio servers"},
		{"mcp stdio with headers", "mcp_servers:\n  fs:\n    command: fs-mcp\n    headers_env: {Authorization: TOKEN}\n", 4, "mcp_servers.fs.headers_env", "for http servers"},
		{"mcp header secret", "mcp_servers:\n  wiki:\n    url: https://wiki/mcp\n    headers_env:\n      Authorization: Bearer abc123\n", 5, "mcp_servers.wiki.headers_env.Authorization", "environment variable"},
		{"mcp header name", "mcp_servers:\n  wiki:\n    url: https://wiki/mcp\n    headers_env:\n      \"X Token\": TOKEN\n", 5, "mcp_servers.wiki.headers_env.X Token", "HTTP header name"},
		{"mcp prefix", "mcp_servers:\n  wiki:\n    command: wiki-mcp\n    prefix: Wiki-Tools\n", 4, "mcp_servers.wiki.prefix", "lower_snake_case"},
		{"mcp server name", "mcp_servers:\n  \"2 wiki\":\n    command: wiki-mcp\n", 2, "mcp_servers.2 wiki", "starts with a letter"},
		{"mcp env name", "mcp_servers:\n  fs:\n    command: fs-mcp\n    env:\n      \"ROOT DIR\": /data\n", 5, "mcp_servers.fs.env.ROOT DIR", "environment variable name"},
		{"mcp severity", "mcp_servers:\n  fs:\n    command: fs-mcp\n    tools:\n      write_file:\n        is_error_severity: fatalish\n", 6, "mcp_servers.fs.tools.write_file.is_error_severity", "retriable, replanning"},
		{"mcp side effects not bool", "mcp_servers:\n  fs:\n    command: fs-mcp\n    tools:\n      write_file:\n        side_effects: maybe\n", 6, "mcp_servers.fs.tools.write_file.side_effects", "true or false"},
		{"mcp read-only conflict", "mcp_servers:\n  fs:\n    command: fs-mcp\n    read_only_tools: [write_file]\n    tools:\n      write_file: {side_effects: true}\n", 6, "mcp_servers.fs.tools.write_file.side_effects", "read_only_tools lists"},
		{"mcp include and exclude", "mcp_servers:\n  fs:\n    command: fs-mcp\n    include_tools: [read_file]\n    exclude_tools: [read_file]\n", 4, "mcp_servers.fs.include_tools[0]", "also in exclude_tools"},
		{"mcp duplicate tool", "mcp_servers:\n  fs:\n    command: fs-mcp\n    read_only_tools:\n      - read_file\n      - read_file\n", 6, "mcp_servers.fs.read_only_tools[1]", "listed twice"},
		{"mcp zero timeout", "mcp_servers:\n  fs:\n    command: fs-mcp\n    timeout: 0s\n", 4, "mcp_servers.fs.timeout", "longer than 0"},
		{"mcp negative restarts", "mcp_servers:\n  fs:\n    command: fs-mcp\n    max_restarts: -1\n", 4, "mcp_servers.fs.max_restarts", "negative"},
		{"mcp unknown key", "mcp_servers:\n  fs:\n    command: fs-mcp\n    read_only: [x]\n", 4, "mcp_servers.fs.read_only", "did you mean read_only_tools?"},
		{"mcp tool unknown key", "mcp_servers:\n  fs:\n    command: fs-mcp\n    tools:\n      read_file: {sideeffects: false}\n", 5, "mcp_servers.fs.tools.read_file.sideeffects", "did you mean side_effects?"},
		{"env unset", "store: ${CG_SURELY_UNSET_VAR}\n", 1, "store", "CG_SURELY_UNSET_VAR is not set"},
		{"env unterminated", "store: ${CG_X\n", 1, "store", "unterminated"},
		{"env bad name", "store: ${1X}\n", 1, "store", "invalid environment variable name"},
		{"syntax error", "limits:\n  max_node_steps: 3\n bad: [\n", 2, "", "YAML syntax"},
		{"tab indentation", "limits:\n\tmax_node_steps: 3\n", 2, "", "YAML syntax"},
		{"not a mapping", "- a\n- b\n", 1, "", "must be a mapping"},
		{"two documents", "fallback: none\n---\nfallback: offline\n", 2, "", "second YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tt.in), "bad.yaml")
			var ce *config.Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *config.Error", err)
			}
			if !errors.Is(err, config.ErrInvalid) {
				t.Errorf("errors.Is(err, ErrInvalid) is false")
			}
			for _, p := range ce.Problems {
				if p.Line == tt.line && p.Key == tt.key && strings.Contains(p.Problem, tt.text) {
					return
				}
			}
			t.Errorf("no problem {line %d, key %q, %q} in:\n%v", tt.line, tt.key, tt.text, err)
		})
	}
}

func TestAllProblemsCollected(t *testing.T) {
	in := "fallback: maybe\nlimits:\n  max_node_steps: 0\n  bogus: 1\nlogging:\n  level: loud\n"
	_, err := config.Parse([]byte(in), "many.yaml")
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v", err)
	}
	var lines []int
	for _, p := range ce.Problems {
		lines = append(lines, p.Line)
	}
	if !reflect.DeepEqual(lines, []int{1, 3, 4, 6}) {
		t.Errorf("problem lines = %v, want [1 3 4 6] (sorted, all collected)\n%v", lines, err)
	}
	if !strings.HasPrefix(err.Error(), "many.yaml: 4 problems:\n  line 1: fallback:") {
		t.Errorf("message = %q", err.Error())
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "capgraph.yaml")
	if err := os.WriteFile(p, []byte("store: memory\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(p)
	if err != nil || c.Store != "memory" || c.Source() != p {
		t.Fatalf("Load = %+v, %v", c, err)
	}
	_, err = config.Load(filepath.Join(dir, "missing.yaml"))
	var ce *config.Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "missing.yaml: cannot read the file: no such file or directory") {
		t.Errorf("Load(missing) = %v", err)
	}
}

func ExampleParse() {
	_, err := config.Parse([]byte("limits:\n  max_node_steps: 0\n  max_planing_attempts: 3\n"), "capgraph.yaml")
	fmt.Println(err)
	// Output:
	// capgraph.yaml: 2 problems:
	//   line 2: limits.max_node_steps: must be at least 1, got 0
	//   line 3: limits.max_planing_attempts: unknown key (did you mean max_planning_attempts?)
}

// A retry policy's intervals (time.Duration fields) read as duration
// strings or numbers of seconds, as they always have; a bad one is a
// problem naming its key.
func TestRetryPolicyDurationsInYAML(t *testing.T) {
	c, err := config.Parse([]byte("retry:\n  default:\n    initial_interval: 1.5\n    max_interval: 1m30s\n    max_elapsed: 10m\n"), "capgraph.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Retry.Default; p.InitialInterval != 1500*time.Millisecond || p.MaxInterval != 90*time.Second || p.MaxElapsed != 10*time.Minute {
		t.Fatalf("retry.default = %+v", p)
	}
	_, err = config.Parse([]byte("retry:\n  default:\n    initial_interval: soon\n"), "capgraph.yaml")
	if err == nil || !strings.Contains(err.Error(), "retry.default.initial_interval") {
		t.Fatalf("a bad interval: %v", err)
	}
}
