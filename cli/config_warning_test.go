package cli_test

import (
	"testing"

	"github.com/capgraph/capgraph/cli"
)

// config check prints a warning for a base_url without /v1 (the usual
// reason an OpenAI-compatible server answers 404) but still passes the file.
func TestConfigCheckWarnsAboutBaseURLWithoutV1(t *testing.T) {
	h := controlRoom(t)
	h.writeConfig("capgraph.yaml", "models:\n  default:\n    provider: openai\n    model: qwen3\n    base_url: http://gpu:8000\n")
	r := h.run("", "config", "check")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d, want OK with a warning\n%s%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "config check", r.stdout, h.dir+"/capgraph.yaml:5: models.default.base_url: warning: \"http://gpu:8000\" does not end in /v1")
	mustContain(t, "config check", r.stdout, "capgraph.yaml: OK")
}
