package config_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/config"
)

// TestDocumentedExampleParses keeps docs/configuration.md honest: its
// complete example must be a valid file.
func TestDocumentedExampleParses(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "## Complete example\n\n```yaml\n")
	if !ok {
		t.Fatal("no complete example in docs/configuration.md")
	}
	example, _, _ := strings.Cut(rest, "```")
	t.Setenv("WEBUI_KEY", "0123456789abcdef-webui")
	t.Setenv("HOME", "/home/op")
	t.Setenv("LLM_BASE_URL", "")
	c, err := config.Parse([]byte(example), "docs example")
	if err != nil {
		t.Fatal(err)
	}
	if c.Store != "sqlite:/home/op/.local/share/capgraph/capgraph.db" || c.Models["default"].BaseURL != "https://api.openai.com/v1" ||
		c.Server.APIKeys[0].Tenant != "open-webui" || c.Retry.Capabilities["channel_read"].MaxAttempts != 5 ||
		c.Server.AuditLog != "/var/log/capgraph/audit.jsonl" || len(c.Server.APIKeys[1].MayRaise) != 1 || !c.Server.APIKeys[2].Admin ||
		c.Server.StatusFrames != "auto" || c.Server.APIKeys[2].StatusFrames != "off" || len(c.Server.CORSOrigins) != 1 || len(c.Server.AllowedHosts) != 1 || len(c.Server.FrameAncestors) != 1 ||
		c.MCPServers["wiki"].HeadersEnv["Authorization"] != "WIKI_MCP_TOKEN" || c.MCPServers["files"].Tools["write_file"].IsErrorSeverity != "replanning" ||
		c.MCPServers["files"].Args[2] != "/srv/shift-notes" || !c.MCPServers["files"].Optional ||
		c.Limits.MaxArtifactBytes != 2_000_000 || time.Duration(c.Deadlines.Capabilities["channel_read"]) != 20*time.Second ||
		time.Duration(c.Models["default"].IdleTimeout) != 30*time.Second || c.Schedules["morning_beam"].Timezone != "Europe/Berlin" ||
		c.Triggers["beam_alarm"].SecretEnv != "BEAM_ALARM_SECRET" || c.Server.PublicURL != "https://capgraph.example.org" || time.Duration(c.Server.ArtifactURLTTL) != 72*time.Hour {
		t.Errorf("example parsed to %+v", c)
	}
}
