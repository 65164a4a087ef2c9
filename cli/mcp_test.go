package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/mcp/mcptest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpConfig is a file with server-everything over stdio. The server runs
// under a shell that leaves a grandchild (sleep) behind it, and carries a
// marker in its environment, so the tests can see every process it
// started — and that none outlives the command.
func mcpConfig(t *testing.T, h *harness, extra string) (marker string) {
	t.Helper()
	node, args := mcptest.Everything(t)
	marker = mcptest.Marker(t)
	h.writeConfig("capgraph.yaml", `store: memory
mcp_servers:
  everything:
    command: sh
    args: ["-c", 'sleep 600 & exec "$1" "$2" stdio', sh, "`+node+`", "`+args[0]+`"]
    env:
      `+mcptest.MarkerVar+`: `+marker+`
    read_only_tools: [gzip-file-as-resource]
`+extra)
	return marker
}

func noOrphans(t *testing.T, marker string) {
	t.Helper()
	if left := mcptest.Gone(marker, 5*time.Second); len(left) > 0 {
		t.Fatalf("processes left running after the command: %v", left)
	}
}

func TestMCPToolsInCommands(t *testing.T) {
	h := controlRoom(t)
	marker := mcpConfig(t, h, "")

	r := h.run("", "capabilities")
	if r.code != cli.ExitOK {
		t.Fatalf("capabilities: %d %s", r.code, r.stderr)
	}
	mustContain(t, "capabilities", r.stdout, "channel_read", "everything_get_sum", "EVERYTHING_GET_SUM_RESULT",
		"MCP servers:", "everything (stdio: sh -c", "everything_toggle_simulated_logging ← toggle-simulated-logging [side effects]")
	if strings.Contains(r.stdout, "everything_gzip_file_as_resource ← gzip-file-as-resource [side effects]") {
		t.Errorf("read_only_tools ignored:\n%s", r.stdout)
	}
	noOrphans(t, marker)

	r = h.run("", "config", "check")
	if r.code != cli.ExitOK {
		t.Fatalf("config check: %d %s %s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "config check", r.stdout, "13 tools", "everything_echo ← echo", "capgraph.yaml: OK")
	noOrphans(t, marker)

	// An offline turn calls a tool that needs no arguments and answers
	// from its result.
	r = h.run("", "run", "Show me the tiny image")
	if r.code != cli.ExitOK {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	mustContain(t, "answer", r.stdout, "The image above is the MCP logo.", "The tool returned an image (image/png")
	noOrphans(t, marker)

	// The control room still answers its own questions beside the tools.
	r = h.run("", "run", "What is the beam current?")
	mustContain(t, "answer", r.stdout, "SR:DCCT:CURRENT")
	noOrphans(t, marker)
}

// A misspelt tool name and a server that cannot start are configuration
// errors naming the line; an optional server that cannot start is left out.
func TestMCPStartFailures(t *testing.T) {
	h := controlRoom(t)
	node, args := mcptest.Everything(t)
	h.writeConfig("capgraph.yaml", `store: memory
mcp_servers:
  everything:
    command: "`+node+`"
    args: ["`+args[0]+`", stdio]
    tools:
      gzip-file-as-resourse: {side_effects: true}
`)
	r := h.run("", "config", "check")
	if r.code == cli.ExitOK {
		t.Fatalf("config check accepted a misspelt tool: %s", r.stdout)
	}
	mustContain(t, "config check", r.stdout, `capgraph.yaml:7: mcp_servers.everything.tools.gzip-file-as-resourse: MCP server "everything" has no tool "gzip-file-as-resourse"`)
	r = h.run("", "run", "What is the beam current?")
	if r.code != cli.ExitInfrastructure {
		t.Fatalf("run with a misspelt tool: %d", r.code)
	}
	mustContain(t, "stderr", r.stderr, "line 7: mcp_servers.everything.tools.gzip-file-as-resourse")

	h.writeConfig("capgraph.yaml", `store: memory
mcp_servers:
  ghost:
    command: /nonexistent/mcp-server
`)
	r = h.run("", "run", "What is the beam current?")
	if r.code != cli.ExitInfrastructure {
		t.Fatalf("run without its server: %d %s", r.code, r.stdout)
	}
	mustContain(t, "stderr", r.stderr, "line 3: mcp_servers.ghost:", "/nonexistent/mcp-server")

	h.writeConfig("capgraph.yaml", `store: memory
mcp_servers:
  ghost:
    command: /nonexistent/mcp-server
    optional: true
`)
	r = h.run("", "run", "What is the beam current?")
	if r.code != cli.ExitOK {
		t.Fatalf("run with an optional server missing: %d %s", r.code, r.stderr)
	}
	mustContain(t, "answer", r.stdout, "SR:DCCT:CURRENT")
	mustContain(t, "stderr", r.stderr, "MCP server: not started; its tools are missing", "ghost")
}

// serve starts the MCP servers, offers their tools, serves the agent at
// /mcp, and stops every server process when it stops.
func TestServeWithMCP(t *testing.T) {
	h := controlRoom(t)
	marker := mcpConfig(t, h, "")
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- h.app.Run(ctx, h.environment(strings.NewReader(""), &stdout, &stderr, []string{"serve", "--addr", "127.0.0.1:0"}))
	}()
	var base string
	deadline := time.Now().Add(60 * time.Second)
	for base == "" {
		if m := pageLine.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
			break
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s %s", code, stdout.String(), stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no banner: %q", stdout.String())
		}
	}
	mustContain(t, "banner", stdout.String(), "MCP server (streamable HTTP): "+base+"/mcp")
	if len(mcptest.Marked(marker)) == 0 {
		t.Fatal("the MCP server is not running while serve runs")
	}

	// An MCP client asks the agent, which calls the MCP tool.
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "ask", Arguments: map[string]any{"question": "Show me the tiny image"}})
	if err != nil || res.IsError {
		t.Fatalf("ask: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.Content)
	mustContain(t, "answer", string(b), "The image above is the MCP logo.")
	cs.Close()

	cancel()
	select {
	case code := <-done:
		if code != cli.ExitOK {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	noOrphans(t, marker)
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("still listening")
	}
}
