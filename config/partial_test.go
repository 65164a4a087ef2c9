package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/capgraph/capgraph/config"
)

// LoadPartial keeps what a file with problems says correctly, drops or
// resets what has a problem, and lists the problems in line order; Load
// refuses the same file.
func TestLoadPartial(t *testing.T) {
	path := filepath.Join(t.TempDir(), "capgraph.yaml")
	file := `models:
  default:
    provider: openai
    model: gpt-4o-mini
  classifier:
    temperature: 9
limits:
  max_node_steps: 40
  max_planning_attempts: 0
control_system:
  writes_enabled: ture
retry:
  capabilities:
    channel_read: {max_attempts: 0}
    archiver_retrieval: {max_attempts: 4}
mcp_servers:
  wiki: {transport: carrier-pigeon, url: "http://127.0.0.1:1/mcp"}
server:
  addr: 127.0.0.1:9090
  api_keys:
    - name: ops
      key: short
`
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(path); !errors.Is(err, config.ErrInvalid) {
		t.Fatalf("Load: %v, want the file refused", err)
	}
	cfg, err := config.LoadPartial(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, p := range cfg.Problems() {
		lines = append(lines, p.Line)
	}
	if want := []int{6, 9, 11, 14, 17, 22}; !equalInts(lines, want) {
		t.Errorf("problem lines %v, want %v: %v", lines, want, cfg.Problems())
	}
	switch {
	case cfg.Models["default"].Model != "gpt-4o-mini":
		t.Error("a valid role was dropped")
	case len(cfg.Models) != 1:
		t.Errorf("the role with a problem was kept: %v", cfg.Models)
	case cfg.Limits.MaxNodeSteps != 40 || cfg.Limits.MaxPlanningAttempts != 0:
		t.Errorf("limits %+v: want the valid key kept and the bad one back at its default", cfg.Limits)
	case cfg.ControlSystem.WritesEnabled:
		t.Error("writes_enabled is not its default")
	case len(cfg.Retry.Capabilities) != 1 || cfg.Retry.Capabilities["archiver_retrieval"].MaxAttempts != 4:
		t.Errorf("retry policies %v", cfg.Retry.Capabilities)
	case len(cfg.MCPServers) != 0:
		t.Errorf("an MCP server with a problem was kept: %v", cfg.MCPServers)
	case cfg.Server.Addr != "127.0.0.1:9090" || len(cfg.Server.APIKeys) != 1:
		t.Errorf("server %+v", cfg.Server)
	}

	// A problem under models.default drops every role (they inherit from it).
	if err := os.WriteFile(path, []byte("models:\n  default: {provider: openaj, model: m}\n  response: {model: n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err = config.LoadPartial(path); err != nil || len(cfg.Models) != 0 || len(cfg.Problems()) == 0 {
		t.Errorf("models %v, problems %v, err %v", cfg.Models, cfg.Problems(), err)
	}

	// Only a file that is not YAML (or cannot be read) is an error.
	if err := os.WriteFile(path, []byte("limits: [1, 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.LoadPartial(path); !errors.Is(err, config.ErrInvalid) {
		t.Errorf("syntax error: %v", err)
	}
	if _, err := config.LoadPartial(filepath.Join(t.TempDir(), "none.yaml")); !errors.Is(err, config.ErrInvalid) {
		t.Errorf("missing file: %v", err)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
