package cli_test

import (
	"strings"
	"testing"

	"github.com/capgraph/capgraph/cli"
)

// config check rejects each kind of bad configuration, naming the file,
// the line and the key; it exits non-zero on any problem.
func TestConfigCheckRejectsEachKindWithLine(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []string // "LINE: key: problem" fragments
	}{
		{"unknown key", "limits:\n  max_stepz: 3\n", []string{"2: limits.max_stepz: unknown key"}},
		{"wrong type", "limits:\n  max_node_steps: many\n", []string{"2: limits.max_node_steps: must be a whole number"}},
		{"impossible value", "logging:\n  level: info\nlimits:\n  max_planning_attempts: 0\n", []string{"4: limits.max_planning_attempts: must be at least 1"}},
		{"bad enum", "approval:\n  global_mode: sometimes\n", []string{"2: approval.global_mode: must be disabled, selective or all_capabilities"}},
		{"bad store", "store: redis://x\n", []string{"1: store: must be memory"}},
		{"retry policy of no capability", "retry:\n  capabilities:\n    channel_reed:\n      max_attempts: 2\n",
			[]string{`3: retry.capabilities.channel_reed: no capability "channel_reed" is registered`}},
		{"missing API key variable", "models:\n  default:\n    provider: openai\n    model: gpt-4o\n    api_key_env: CAPGRAPH_TEST_NO_SUCH_KEY\n",
			[]string{"5: models.default.api_key_env: environment variable CAPGRAPH_TEST_NO_SUCH_KEY is not set"}},
		{"public address without keys", "server:\n  addr: 0.0.0.0:8080\n", []string{"2: server.addr: 0.0.0.0:8080 is not a loopback address"}},
		{"every interface without host names", "server:\n  addr: 0.0.0.0:8080\n  api_keys:\n    - {name: a, key: 0123456789abcdef0}\n",
			[]string{"1: server.allowed_hosts: the server listens on 0.0.0.0:8080, beyond this machine, but answers only requests to localhost"}},
		{"any origin without keys", "server:\n  cors_origins: [\"*\"]\n", []string{`2: server.cors_origins[0]: "*" needs API keys`}},
		{"several at once, in line order", "limits:\n  max_stepz: 3\nserver:\n  api_keys:\n    - key: abc\n",
			[]string{"2: limits.max_stepz", "5: server.api_keys[0].name: every API key needs a name", "5: server.api_keys[0].key: is 3 characters"}},
		{"not YAML", "limits: [1, 2\n", []string{"bad.yaml:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := controlRoom(t)
			h.writeConfig("bad.yaml", tt.file)
			r := h.run("", "config", "check", "bad.yaml")
			if r.code != cli.ExitError {
				t.Fatalf("exit %d, want %d\n%s", r.code, cli.ExitError, r.stdout)
			}
			for _, w := range tt.want {
				mustContain(t, "config check", r.stdout, w)
			}
			if !strings.HasPrefix(r.stdout, h.dir+"/bad.yaml:") {
				t.Errorf("problems do not start with the file name: %q", r.stdout)
			}
			mustContain(t, "stderr", r.stderr, "the configuration has problems")
		})
	}
}

func TestConfigCheckAcceptsValidFiles(t *testing.T) {
	h := controlRoom(t)
	h.env["CAPGRAPH_TEST_KEY"] = "sk-test"
	h.writeConfig("capgraph.yaml", `# every section, valid
models:
  default:
    provider: openai
    model: gpt-4o-mini
    api_key_env: CAPGRAPH_TEST_KEY
fallback: offline
classifier:
  mode: per_capability
limits:
  max_planning_attempts: 3
  max_reclassifications: 0
retry:
  default:
    max_attempts: 4
  capabilities:
    channel_read:
      max_attempts: 2
approval:
  global_mode: all_capabilities
control_system:
  writes_enabled: true
store: memory
server:
  addr: 127.0.0.1:9090
  api_keys:
    - name: webui
      key: ${CAPGRAPH_TEST_KEY:-0123456789abcdef0123}
logging:
  level: warn
`)
	// capgraph.yaml in the working directory is the default file.
	r := h.run("", "config", "check")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if want := h.dir + "/capgraph.yaml: OK\n"; r.stdout != want {
		t.Errorf("stdout %q, want %q", r.stdout, want)
	}
}

func TestConfigCheckWithoutFile(t *testing.T) {
	r := controlRoom(t).run("", "config", "check")
	if r.code != cli.ExitError {
		t.Fatalf("exit %d", r.code)
	}
	mustContain(t, "stderr", r.stderr, "no configuration file to check: capgraph.yaml does not exist")
	r = controlRoom(t).run("", "config", "check", "missing.yaml")
	if r.code != cli.ExitError || !strings.Contains(r.stderr, "missing.yaml") {
		t.Fatalf("exit %d: %q", r.code, r.stderr)
	}
}

// Every other command refuses a bad file too, with each problem's line.
func TestCommandsRefuseBadConfig(t *testing.T) {
	h := controlRoom(t)
	h.writeConfig("capgraph.yaml", "limits:\n  max_stepz: 3\nretry:\n  capabilities:\n    nope: {max_attempts: 2}\n")
	r := h.run("", "--store", "memory", "run", "What is the beam current?")
	if r.code != cli.ExitInfrastructure { // run: 2, it could not run
		t.Fatalf("exit %d", r.code)
	}
	mustContain(t, "stderr", r.stderr, "line 2: limits.max_stepz: unknown key")
}

// A file with a mistake of each phase — an unknown key, a misspelled
// boolean, an unset API key variable, a retry policy for a capability the
// application does not have, a public address without keys, an MCP server
// that does not start — gets every problem in one run, in line order, each
// once (issue 15: it took four runs).
func TestConfigCheckReportsEveryPhaseAtOnce(t *testing.T) {
	h := controlRoom(t)
	h.writeConfig("capgraph.yaml", `models:
  default:
    provider: openai
    model: gpt-4o-mini
    api_key_env: CAPGRAPH_TEST_UNSET_KEY
limits:
  max_stepz: 40
control_system:
  writes_enabled: ture
retry:
  capabilities:
    channel_reed:
      max_attempts: 5
mcp_servers:
  wiki:
    command: /nonexistent/capgraph-test-mcp-server
server:
  addr: 0.0.0.0:8080
store: redis://localhost
`)
	r := h.run("", "config", "check")
	if r.code != cli.ExitError {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	want := []string{
		"capgraph.yaml:5: models.default.api_key_env: environment variable CAPGRAPH_TEST_UNSET_KEY is not set",
		"capgraph.yaml:7: limits.max_stepz: unknown key (did you mean max_node_steps?)",
		`capgraph.yaml:9: control_system.writes_enabled: must be true or false, got "ture"`,
		`capgraph.yaml:12: retry.capabilities.channel_reed: no capability "channel_reed" is registered`,
		"capgraph.yaml:15: mcp_servers.wiki",
		"capgraph.yaml:18: server.addr: 0.0.0.0:8080 is not a loopback address; refusing to listen without API keys (give keys in server.api_keys or in CAPGRAPH_API_KEYS=name=key",
		"capgraph.yaml:19: store: must be memory, sqlite:PATH or a postgres:// URL",
		"7 problem(s)",
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), r.stdout)
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d: %q, want it to contain %q", i+1, lines[i], w)
		}
	}

	// The keys of CAPGRAPH_API_KEYS count, as they do for serve; then the
	// address on every interface needs the names clients use.
	h.env["CAPGRAPH_API_KEYS"] = "ops=0123456789abcdef-ops"
	r = h.run("", "config", "check")
	if strings.Contains(r.stdout, "server.addr") || !strings.Contains(r.stdout, "17: server.allowed_hosts: the server listens on 0.0.0.0:8080") ||
		!strings.Contains(r.stdout, "7 problem(s)") {
		t.Errorf("with CAPGRAPH_API_KEYS set:\n%s", r.stdout)
	}
}

// A value both the file's rules and the conversion reject is reported once.
func TestConfigCheckReportsAProblemOnce(t *testing.T) {
	h := controlRoom(t)
	h.writeConfig("capgraph.yaml", `models:
  default:
    provider: openaj
    model: gpt-4o-mini
  classifier:
    temperature: 7
server:
  api_keys:
    - name: ops
      key: short
`)
	r := h.run("", "config", "check")
	if r.code != cli.ExitError {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, key := range []string{"models.default.provider", "models.classifier.temperature", "server.api_keys[0]"} {
		if n := strings.Count(r.stdout, ": "+key); n != 1 {
			t.Errorf("%s reported %d times:\n%s", key, n, r.stdout)
		}
	}
	mustContain(t, "config check", r.stdout, "3 problem(s)")
}
