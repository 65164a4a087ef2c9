package wiring_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/server"
	"github.com/capgraph/capgraph/wiring"
)

// One source for each default: a configuration that sets nothing yields
// exactly what a program configuring the libraries in Go with zero values
// gets — the agent's, the router's, the nodes', the server's and the
// models' own defaults, none restated by the configuration — but for the
// one setting whose application default is not the engine's: checkpoint
// durability (wiring.DefaultDurability).
func TestEmptyConfigYieldsTheLibraryDefaults(t *testing.T) {
	for _, text := range []string{"", "limits:\nserver:\n  limits:\napproval:\n"} {
		cfg := parse(t, text)
		reg := registry(t, "beam")
		store := memory.New()

		// The agent: its config is the zero config over registry, store and models.
		ac, err := wiring.AgentConfig(cfg, reg, store, llm.None)
		if err != nil {
			t.Fatal(err)
		}
		if want := (agent.Config{Registry: reg, Store: store, Models: llm.None, Durability: wiring.DefaultDurability}); !reflect.DeepEqual(ac, want) {
			t.Errorf("%q: agent config %+v\nwant the zero config %+v", text, ac, want)
		}
		// Through the runtime, the same plus the application's name.
		rt, err := wiring.New(cfg, wiring.App{Capabilities: func(*config.Config) ([]capabilities.Capability, error) { return reg.All(), nil }}, wiring.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rac, err := rt.AgentConfig(context.Background(), store)
		if err != nil {
			t.Fatal(err)
		}
		rac.Registry = reg // rebuilt by the runtime from the same capabilities
		if want := (agent.Config{Application: wiring.DefaultAppName, Registry: reg, Store: store, Models: llm.None, Durability: wiring.DefaultDurability}); !reflect.DeepEqual(rac, want) {
			t.Errorf("%q: runtime's agent config %+v", text, rac)
		}
		// The compiled agent routes with the router's defaults.
		a, err := agent.New(ac)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := a.RouterConfig(), (router.Config{Capabilities: []string{"beam"}}).WithDefaults(); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: router config %+v, want %+v", text, got, want)
		}
		if got := a.RouterConfig().Limits; got.MaxNodeSteps != router.DefaultMaxNodeSteps || got.MaxPlanningAttempts != router.DefaultMaxPlanningAttempts ||
			got.MaxReclassifications != router.DefaultMaxReclassifications || got.MaxExecutionTime != router.DefaultMaxExecutionTime || got.MaxTokensPerTurn != 0 {
			t.Errorf("%q: limits %+v", text, got)
		}

		// The server: the zero config over the runner (and its thread lister).
		sc, err := wiring.ServerConfig(cfg, a, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := (server.Config{Runner: a}); !reflect.DeepEqual(sc, want) {
			t.Errorf("%q: server config %+v\nwant the zero config %+v", text, sc, want)
		}

		// The models: no roles (offline), no fallback of the file's own.
		if lc := wiring.LLMConfig(cfg); !reflect.DeepEqual(lc, llm.Config{}) {
			t.Errorf("%q: llm config %+v", text, lc)
		}
		// The logger: the adapter's defaults (info, text).
		if cfg.Logging != (config.Logging{}) {
			t.Errorf("%q: logging %+v", text, cfg.Logging)
		}
	}
}

// The settings where 0 means something of its own are told apart from a
// key left out: max_reclassifications: 0 forbids reclassifying,
// expires_after: 0 means approvals never expire.
func TestZeroIsNotTheDefault(t *testing.T) {
	reg := registry(t, "beam")
	zero, err := wiring.AgentConfig(parse(t, "limits:\n  max_reclassifications: 0\napproval:\n  expires_after: 0\n"), reg, memory.New(), llm.None)
	if err != nil {
		t.Fatal(err)
	}
	if zero.Limits.MaxReclassifications >= 0 || zero.ApprovalExpiry >= 0 {
		t.Errorf("0 must mean none/never (negative for the agent): %d %v", zero.Limits.MaxReclassifications, zero.ApprovalExpiry)
	}
	a, err := agent.New(zero)
	if err != nil {
		t.Fatal(err)
	}
	if a.RouterConfig().ReclassificationBudget() != 0 {
		t.Errorf("reclassification budget %d, want 0", a.RouterConfig().ReclassificationBudget())
	}
	sc, err := wiring.ServerConfig(parse(t, "approval:\n  expires_after: 0\n"), a, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc.ApprovalTTL < 50*365*24*60*60*1e9 {
		t.Errorf("approval tokens expire after %v though approvals never do", sc.ApprovalTTL)
	}
	unset, err := wiring.AgentConfig(parse(t, ""), reg, memory.New(), llm.None)
	if err != nil {
		t.Fatal(err)
	}
	if unset.Limits.MaxReclassifications != 0 || unset.ApprovalExpiry != 0 {
		t.Errorf("left out must stay zero (the agent's default): %d %v", unset.Limits.MaxReclassifications, unset.ApprovalExpiry)
	}
}

// One vocabulary: every limit of router.Limits is the key of the same name
// under limits: in the file (its JSON name, and the name the error report
// gives), so the file, the Go API and the report agree.
func TestLimitKeysAreTheRoutersNames(t *testing.T) {
	keys := map[string]bool{}
	ct := reflect.TypeOf(config.Limits{})
	for i := range ct.NumField() {
		keys[strings.Split(ct.Field(i).Tag.Get("yaml"), ",")[0]] = true
	}
	rt := reflect.TypeOf(router.Limits{})
	for i := range rt.NumField() {
		name := strings.Split(rt.Field(i).Tag.Get("json"), ",")[0]
		if !keys[name] {
			t.Errorf("router.Limits.%s is %q, which is no key under limits: in the file", rt.Field(i).Name, name)
		}
	}
	for _, name := range []string{router.LimitExecutionTime, router.LimitNodeSteps, router.LimitTokens, router.LimitPlanning, router.LimitReclassification} {
		if !keys[name] {
			t.Errorf("the limit %q the error report names is no key under limits: in the file", name)
		}
	}
}
