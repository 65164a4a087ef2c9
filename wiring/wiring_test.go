package wiring_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/logging"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/server"
	"github.com/capgraph/capgraph/wiring"
)

func parse(t *testing.T, text string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(text), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func registry(t *testing.T, names ...string) *capabilities.Registry {
	t.Helper()
	reg := capabilities.NewRegistry()
	for _, n := range names {
		c := capabilities.Define(capabilities.Definition{Name: n, Description: n, Provides: []string{strings.ToUpper(n) + "_OUT"},
			Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
				return capabilities.Output{}, nil
			}})
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func TestAgentConfigFromFile(t *testing.T) {
	cfg := parse(t, `classifier:
  mode: per_capability
model_calls:
  task_extraction: always
  select_all_within_tokens: -1
  task_with_selection: false
limits:
  max_planning_attempts: 3
  max_reclassifications: 0
  max_execution_time: 90s
  max_node_steps: 40
  max_tokens_per_turn: 5000
  max_concurrent_classifications: 2
  step_concurrency: 3
  error_node_grace: 5s
  error_explanation_timeout: 2s
retry:
  default:
    max_attempts: 4
  capabilities:
    beam:
      initial_interval: 2s
approval:
  global_mode: all_capabilities
  plan_approval: true
  expires_after: 0
control_system:
  writes_enabled: true
server:
  lease_ttl: 9s
  lease_owner: replica-1
`)
	ac, err := wiring.AgentConfig(cfg, registry(t, "beam"), memory.New(), llm.None)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"classifier mode", string(ac.Nodes.ClassifierMode), "per_capability"},
		{"concurrent classifications", ac.Nodes.MaxConcurrentClassifications, 2},
		{"task extraction", ac.Nodes.TaskExtraction, nodes.TaskAlways},
		{"select all within", ac.Nodes.SelectAllWithinTokens, -1},
		{"task and selection apart", ac.Nodes.SeparateTaskAndSelection, true},
		{"planning attempts", ac.Limits.MaxPlanningAttempts, 3},
		{"reclassifications 0 means none (negative for the agent)", ac.Limits.MaxReclassifications, -1},
		{"execution time", ac.Limits.MaxExecutionTime, 90 * time.Second},
		{"node steps", ac.Limits.MaxNodeSteps, 40},
		{"tokens", ac.Limits.MaxTokensPerTurn, 5000},
		{"step concurrency", ac.MaxConcurrency, 3},
		{"error node grace", ac.ErrorNodeGrace, 5 * time.Second},
		{"error explanation timeout", ac.ErrorExplanationTimeout, 2 * time.Second},
		{"global retry", ac.RetryPolicy.MaxAttempts, 4},
		{"capability retry merged over the global one", ac.CapabilityRetry["beam"].MaxAttempts, 4},
		{"capability retry interval", time.Duration(ac.CapabilityRetry["beam"].InitialInterval), 2 * time.Second},
		{"approval mode", ac.Options.ApprovalMode, "all_capabilities"},
		{"plan approval", ac.Options.PlanApproval, true},
		{"writes", ac.Options.WritesEnabled, true},
		{"expires_after 0 means never (negative for the agent)", ac.ApprovalExpiry < 0, true},
		{"lease ttl", ac.Leases.TTL, 9 * time.Second},
		{"lease owner", ac.Leases.Owner, "replica-1"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestAgentConfigNamesUnknownCapabilityLine(t *testing.T) {
	cfg := parse(t, "retry:\n  capabilities:\n    beam: {max_attempts: 2}\n    bogus: {max_attempts: 2}\n")
	_, err := wiring.AgentConfig(cfg, registry(t, "beam"), memory.New(), llm.None)
	var ce *config.Error
	if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Line != 4 || ce.Problems[0].Key != "retry.capabilities.bogus" {
		t.Fatalf("%v", err)
	}
	if !errors.Is(err, config.ErrInvalid) {
		t.Error("not config.ErrInvalid")
	}
}

// deadlines: the default and the per-capability overrides reach the
// agent; an unregistered capability is named with its line; a file
// without the key leaves the agent's default (zero here).
func TestAgentConfigDeadlines(t *testing.T) {
	cfg := parse(t, "deadlines:\n  default: 45s\n  capabilities:\n    beam: 2m\n")
	ac, err := wiring.AgentConfig(cfg, registry(t, "beam"), memory.New(), llm.None)
	if err != nil {
		t.Fatal(err)
	}
	if ac.StepDeadline != 45*time.Second || ac.CapabilityDeadlines["beam"] != 2*time.Minute {
		t.Fatalf("StepDeadline %v, CapabilityDeadlines %v", ac.StepDeadline, ac.CapabilityDeadlines)
	}
	ac, err = wiring.AgentConfig(parse(t, "store: memory\n"), registry(t, "beam"), memory.New(), llm.None)
	if err != nil || ac.StepDeadline != 0 || ac.CapabilityDeadlines != nil {
		t.Fatalf("no deadlines key: %v, %v, %v; want the agent's default", err, ac.StepDeadline, ac.CapabilityDeadlines)
	}
	_, err = wiring.AgentConfig(parse(t, "deadlines:\n  capabilities:\n    bogus: 5s\n"), registry(t, "beam"), memory.New(), llm.None)
	var ce *config.Error
	if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Line != 3 || ce.Problems[0].Key != "deadlines.capabilities.bogus" {
		t.Fatalf("%v", err)
	}
}

func TestLLMConfigMergesRolesOverDefault(t *testing.T) {
	cfg := parse(t, `models:
  default:
    provider: openai
    model: gpt-4o-mini
    api_key_env: MY_KEY
    max_tokens: 500
    idle_timeout: 45s
  orchestrator:
    model: gpt-4o
fallback: offline
`)
	lc := wiring.LLMConfig(cfg)
	if lc.Fallback != "offline" || len(lc.Roles) != 2 {
		t.Fatalf("%+v", lc)
	}
	o := lc.Roles[llm.RoleOrchestrator]
	if o.Provider != "openai" || o.Model != "gpt-4o" || o.APIKeyEnv != "MY_KEY" || o.MaxTokens != 500 || o.IdleTimeout.D() != 45*time.Second {
		t.Errorf("orchestrator %+v", o)
	}
	if len(wiring.LLMConfig(config.Default()).Roles) != 0 {
		t.Error("no models must mean no roles (offline)")
	}
	models, err := wiring.Models(cfg, func(k string) (string, bool) { return map[string]string{"MY_KEY": "sk-x"}[k], k == "MY_KEY" })
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := models.For(llm.RoleResponse); !ok {
		t.Error("response role has no model (default should serve it)")
	}
}

func TestServerConfigFromFile(t *testing.T) {
	cfg := parse(t, `server:
  addr: 127.0.0.1:9999
  max_body_bytes: 2048
  api_keys:
    - name: ops
      key: 0123456789abcdef0123
      tenant: acc
      trusted_frontend: true
      allowed_capabilities: [beam]
      max_concurrent_runs: 2
      status_frames: on
  status_frames: off
  cors_origins: [https://portal.example.org]
  frame_ancestors: [https://portal.example.org]
  limits:
    max_concurrent_runs: 7
    requests_per_minute: 30
    run_timeout: 45s
approval:
  expires_after: 2h
  mcp_answers: true
`)
	sc, err := wiring.ServerConfig(cfg, nil, "ci=fedcba9876543210fedc", logging.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if sc.Addr != "127.0.0.1:9999" || sc.MaxBodyBytes != 2048 || sc.MaxConcurrentRuns != 7 || sc.MaxTotalRuns != 7 || sc.TurnTimeout != 45*time.Second || sc.ApprovalTTL != 2*time.Hour ||
		!sc.MCPAnswersApprovals ||
		sc.RequestsPerMinute != 30 || sc.StatusFrames != server.StatusFramesOff ||
		len(sc.CORSOrigins) != 1 || len(sc.FrameAncestors) != 1 {
		t.Errorf("%+v", sc)
	}
	// A runner that lists threads (the agent) is the server's agent: the
	// server lists threads through it (a server.ThreadStore).
	lr := listingRunner{}
	if sc, err := wiring.ServerConfig(cfg, lr, "", logging.Nop()); err != nil || sc.Runner != server.Agent(lr) {
		t.Errorf("the server's agent %v %v", sc.Runner, err)
	}
	if len(sc.Principals) != 2 {
		t.Fatalf("principals %+v", sc.Principals)
	}
	p := sc.Principals[0]
	if p.Name != "ops" || p.KeySHA256 != server.HashKey("0123456789abcdef0123") || p.Tenant != "acc" || !p.TrustedFrontend || p.MaxConcurrentRuns != 2 || len(p.AllowedCapabilities) != 1 || p.StatusFrames != server.StatusFramesOn {
		t.Errorf("from file: %+v", p)
	}
	if q := sc.Principals[1]; q.Name != "ci" || q.KeySHA256 != server.HashKey("fedcba9876543210fedc") {
		t.Errorf("from CAPGRAPH_API_KEYS: %+v", q)
	}
	// Without run_timeout the turn's wall-clock limit bounds a run.
	sc, _ = wiring.ServerConfig(parse(t, "limits:\n  max_execution_time: 7m\n"), nil, "", nil)
	if sc.TurnTimeout != 7*time.Minute {
		t.Errorf("turn timeout %v", sc.TurnTimeout)
	}
}

// server.limits.park_after, duplicate_window and detach_grace: a duration,
// 0 (the server's default), "never" or a negative duration (negative in
// server.Config: never park, no replayed answers, cancel at once).
func TestThresholdsFromFile(t *testing.T) {
	for _, key := range []string{"park_after", "duplicate_window", "detach_grace"} {
		for _, tc := range []struct {
			value string
			want  time.Duration
		}{
			{"", 0}, // the server's default
			{"0", 0},
			{"45s", 45 * time.Second},
			{"2.5", 2500 * time.Millisecond},
			{"never", -1},
			{"Never", -1},
			{"-1s", -1},
			{"-3", -1},
		} {
			yaml := "server:\n  limits:\n    " + key + ": " + tc.value + "\n"
			if tc.value == "" {
				yaml = "server:\n  limits: {}\n"
			}
			sc, err := wiring.ServerConfig(parse(t, yaml), listingRunner{}, "", logging.Nop())
			if err != nil {
				t.Fatalf("%s: %q: %v", key, tc.value, err)
			}
			got := map[string]time.Duration{"park_after": sc.ParkAfter, "duplicate_window": sc.DuplicateWindow, "detach_grace": sc.DetachGrace}[key]
			if got != tc.want {
				t.Errorf("%s: %q: %v, want %v", key, tc.value, got, tc.want)
			}
		}
	}
}

// listingRunner is a Runner that also lists threads, like *agent.Agent.
type listingRunner struct{ agent.Runner }

func (listingRunner) Threads(context.Context, checkpoint.ThreadFilter) ([]checkpoint.ThreadInfo, error) {
	return nil, nil
}

func TestServerConfigChecksAllowedCapabilities(t *testing.T) {
	beam := capabilities.Define(capabilities.Definition{Name: "beam", Description: "read the beam",
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Output{}, nil
		}})
	reg := capabilities.NewRegistry()
	if err := reg.Register(beam); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		allowed string
		bad     string // "" = accepted
	}{
		{"[beam]", ""},
		{"[beam, respond]", ""},
		{"[beam, beam_write]", "beam_write"},
	}
	for _, tc := range tests {
		t.Run(tc.allowed, func(t *testing.T) {
			cfg := parse(t, "server:\n  api_keys:\n    - name: ops\n      key: 0123456789abcdef0123\n      allowed_capabilities: "+tc.allowed+"\n")
			_, err := wiring.ServerConfig(cfg, a, "", logging.Nop())
			var ce *config.Error
			switch {
			case tc.bad == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.bad != "" && (!errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Line != 5 || !strings.Contains(err.Error(), tc.bad)):
				t.Fatalf("error %v, want a config problem at line 5 naming %s", err, tc.bad)
			}
		})
	}
}

// checkpoints.keep_intermediate: false and 0 are the agent's default
// (pruned when the turn ends), true keeps for good (negative for the
// agent), a duration keeps that long; left out stays the default.
func TestKeepIntermediateConverts(t *testing.T) {
	reg := registry(t, "beam")
	for in, want := range map[string]time.Duration{
		"": 0,
		"checkpoints:\n  keep_intermediate: false\n": 0,
		"checkpoints:\n  keep_intermediate: 0\n":     0,
		"checkpoints:\n  keep_intermediate: true\n":  -1,
		"checkpoints:\n  keep_intermediate: 24h\n":   24 * time.Hour,
	} {
		ac, err := wiring.AgentConfig(parse(t, in), reg, memory.New(), llm.None)
		if err != nil {
			t.Fatal(err)
		}
		if ac.KeepIntermediate != want {
			t.Errorf("%q: KeepIntermediate %v, want %v", in, ac.KeepIntermediate, want)
		}
	}
}

// checkpoints.durability reaches the agent as the graph's mode; left out,
// the application's default, async — not the engine's (sync).
func TestDurabilityConverts(t *testing.T) {
	reg := registry(t, "beam")
	for in, want := range map[string]graph.Durability{
		"": graph.DurabilityAsync,
		"checkpoints:\n  keep_intermediate: true\n": graph.DurabilityAsync,
		"checkpoints:\n  durability: sync\n":        graph.DurabilitySync,
		"checkpoints:\n  durability: async\n":       graph.DurabilityAsync,
	} {
		ac, err := wiring.AgentConfig(parse(t, in), reg, memory.New(), llm.None)
		if err != nil {
			t.Fatal(err)
		}
		if ac.Durability != want {
			t.Errorf("%q: Durability %q, want %q", in, ac.Durability, want)
		}
	}
}

// Options.Models replaces the file's models: a whole application runs its
// turns with a scripted model, the file's model roles left unbuilt.
func TestOptionsModelsReplaceTheFiles(t *testing.T) {
	reg := registry(t, "beam")
	cfg := parse(t, "models:\n  default:\n    provider: openai\n    model: gpt-4o\n    api_key_env: NO_SUCH_KEY_SET\n")
	m := llmtest.New()
	rt, err := wiring.New(cfg, wiring.App{Capabilities: func(*config.Config) ([]capabilities.Capability, error) { return reg.All(), nil }},
		wiring.Options{Store: "memory", Models: m, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	got, err := rt.Models()
	if err != nil || got != llm.Models(m) {
		t.Fatalf("Models() = %v, %v; want the scripted model (the file's role would fail: no API key)", got, err)
	}
	if _, err := rt.Agent(context.Background()); err != nil {
		t.Fatalf("Agent over the scripted model: %v", err)
	}
}
