package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/mcp/mcptest"
)

// Tests against @modelcontextprotocol/server-everything, a real MCP server
// nobody here wrote, over stdio and streamable HTTP.

func everything(t *testing.T, mod ...func(*ServerConfig)) ServerConfig {
	t.Helper()
	cmd, args := mcptest.Everything(t)
	c := ServerConfig{Name: "everything", Command: cmd, Args: args}
	for _, m := range mod {
		m(&c)
	}
	return c
}

func connect(t *testing.T, opts Options, cfgs ...ServerConfig) *Set {
	t.Helper()
	set, err := Connect(context.Background(), cfgs, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	return set
}

func tool(t *testing.T, set *Set, name string) *Tool {
	t.Helper()
	for _, tl := range set.Tools() {
		if tl.Name() == name {
			return tl
		}
	}
	var names []string
	for _, tl := range set.Tools() {
		names = append(names, tl.Name())
	}
	t.Fatalf("no capability %s (have %v)", name, names)
	return nil
}

func call(t *testing.T, tl *Tool, params map[string]any) (ToolResult, error) {
	t.Helper()
	r, _, err := callOutput(t, tl, params)
	return r, err
}

// callOutput is call with the step's artifacts.
func callOutput(t *testing.T, tl *Tool, params map[string]any) (ToolResult, []capabilities.Artifact, error) {
	t.Helper()
	out, err := tl.Execute(context.Background(), capabilities.Step{PlannedStep: capabilities.PlannedStep{ContextKey: "r", Capability: tl.Name(), Parameters: params}})
	if err != nil {
		return ToolResult{}, nil, err
	}
	if len(out.Values) != 1 || out.Values[0].Type != tl.ContextType() {
		t.Fatalf("output %+v", out)
	}
	return out.Values[0].Value.(ToolResult), out.Artifacts, nil
}

// classification returns the classification the agent would make of err.
func classification(tl *Tool, err error) capabilities.Classification {
	return capabilities.Classify(tl, err, capabilities.ErrorContext{Capability: tl.Name()})
}

func TestEverythingToolsAreCapabilities(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) ServerConfig
	}{
		{"stdio", func(t *testing.T) ServerConfig { return everything(t) }},
		{"http", func(t *testing.T) ServerConfig {
			return ServerConfig{Name: "everything", Transport: TransportHTTP, URL: mcptest.EverythingHTTP(t).URL}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := connect(t, Options{}, tc.cfg(t))
			reg := capabilities.NewRegistry()
			if err := reg.Register(set.Capabilities()...); err != nil {
				t.Fatal(err)
			}
			if err := reg.Validate(); err != nil {
				t.Fatal(err)
			}
			for _, want := range []struct {
				name    string
				effects bool
			}{
				{"everything_echo", false}, {"everything_get_sum", false}, {"everything_get_tiny_image", false},
				{"everything_get_structured_content", false},
				// Not annotated readOnlyHint: side effects.
				{"everything_gzip_file_as_resource", true}, {"everything_toggle_simulated_logging", true},
			} {
				tl := tool(t, set, want.name)
				if capabilities.HasSideEffects(tl) != want.effects {
					t.Errorf("%s: side effects %v, want %v", want.name, !want.effects, want.effects)
				}
				if tl.Description() == "" || tl.Provides()[0] != strings.ToUpper(want.name)+"_RESULT" {
					t.Errorf("%s: description %q provides %v", want.name, tl.Description(), tl.Provides())
				}
			}
			sum := tool(t, set, "everything_get_sum")
			g := sum.OrchestratorGuide().Instructions
			for _, want := range []string{`"get-sum"`, "required: a, b", `"a":{"description":"First number","type":"number"}`, "EVERYTHING_GET_SUM_RESULT"} {
				if !strings.Contains(g, want) {
					t.Errorf("orchestrator guide lacks %q:\n%s", want, g)
				}
			}
			if strings.Contains(g, "$schema") {
				t.Errorf("the guide shows the $schema line:\n%s", g)
			}
			r, err := call(t, sum, map[string]any{"a": 2, "b": 3.5})
			if err != nil || r.Text != "The sum of 2 and 3.5 is 5.5." {
				t.Fatalf("get-sum: %+v, %v", r, err)
			}
		})
	}
}

func TestEverythingResults(t *testing.T) {
	set := connect(t, Options{}, everything(t))
	r, err := call(t, tool(t, set, "everything_get_structured_content"), map[string]any{"location": "Chicago"})
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := r.Structured.(map[string]any); !ok || st["conditions"] != "Light rain / drizzle" || st["temperature"] != 36.0 {
		t.Fatalf("structured %#v", r.Structured)
	}
	// The image becomes a figure artifact; the context data keeps its
	// type and size (later turns carry the context store).
	r, figs, err := callOutput(t, tool(t, set, "everything_get_tiny_image"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Images) != 1 || r.Images[0].MediaType != "image/png" || r.Images[0].Bytes == 0 || !r.Images[0].Figure || r.Images[0].Data != nil {
		t.Fatalf("images %+v", r.Images)
	}
	if len(figs) != 1 || figs[0].Kind != capabilities.ArtifactFigure || figs[0].Figure.MediaType != "image/png" ||
		len(figs[0].Figure.Data) != r.Images[0].Bytes || string(figs[0].Figure.Data[1:4]) != "PNG" || figs[0].Validate() != nil {
		t.Fatalf("figure artifacts %+v", figs)
	}
	if s := r.Summary(); !strings.Contains(s, "The image above is the MCP logo.") || !strings.Contains(s, "returned an image (image/png") ||
		!strings.Contains(s, "shown to the user as a figure") {
		t.Fatalf("summary %q", s)
	}
	// The stored value survives the context store's JSON.
	b, _ := json.Marshal(r)
	var back ToolResult
	if err := json.Unmarshal(b, &back); err != nil || !back.Images[0].Figure || back.Images[0].Bytes != r.Images[0].Bytes {
		t.Fatalf("round trip: %v", err)
	}
	// An embedded resource (gzip of a data: URL, no network).
	r, err = call(t, tool(t, set, "everything_gzip_file_as_resource"), map[string]any{"data": "data:text/plain,hello", "outputType": "resource"})
	if err != nil || len(r.Resources) != 1 || r.Resources[0].MediaType != "application/gzip" || r.Resources[0].Bytes == 0 {
		t.Fatalf("resource %+v, %v", r, err)
	}
}

// Arguments are checked against the schema before the call: a mismatch is
// REPLANNING with the schema error for the planner, whatever the planner
// wrote (a model's types, a missing field, an unknown enum value).
func TestInvalidArgumentsAreReplanning(t *testing.T) {
	set := connect(t, Options{}, everything(t))
	for _, tc := range []struct {
		tool   string
		params map[string]any
		want   string
	}{
		{"everything_echo", nil, `missing properties: ["message"]`},
		{"everything_echo", map[string]any{"message": 42}, `want "string"`},
		{"everything_get_sum", map[string]any{"a": "2", "b": 3}, `want "number"`},
		{"everything_get_structured_content", map[string]any{"location": "Paris"}, "enum"},
	} {
		tl := tool(t, set, tc.tool)
		_, err := call(t, tl, tc.params)
		cl := classification(tl, err)
		if cl.Severity != capabilities.Replanning || cl.Kind != capabilities.KindInvalidInput {
			t.Errorf("%s %v: %v → %+v", tc.tool, tc.params, err, cl)
			continue
		}
		reason, _ := cl.Metadata[capabilities.MetaReplanningReason].(string)
		if !strings.Contains(reason, tc.want) || !strings.Contains(cl.FormatForLLM(), `"properties"`) {
			t.Errorf("%s: the planner sees %q\n%s", tc.tool, reason, cl.FormatForLLM())
		}
		// The action is not described either: nobody is asked to approve it.
		if _, err := tl.DescribeAction(capabilities.Step{PlannedStep: capabilities.PlannedStep{Parameters: tc.params}}); err == nil {
			t.Errorf("%s: DescribeAction accepted %v", tc.tool, tc.params)
		}
	}
}

// A result with isError is CRITICAL by default, or what the tool's
// configuration says.
func TestToolErrorSeverity(t *testing.T) {
	bad := map[string]any{"data": "ftp://example.com/file.txt"}
	set := connect(t, Options{}, everything(t))
	tl := tool(t, set, "everything_gzip_file_as_resource")
	_, err := call(t, tl, bad)
	cl := classification(tl, err)
	if cl.Severity != capabilities.Critical || cl.Kind != KindToolError || !strings.Contains(cl.UserMessage, "Unsupported URL protocol") ||
		cl.Metadata[MetaServer] != "everything" || cl.Metadata[MetaTool] != "gzip-file-as-resource" {
		t.Fatalf("%+v", cl)
	}
	set = connect(t, Options{}, everything(t, func(c *ServerConfig) {
		c.Tools = map[string]ToolConfig{"gzip-file-as-resource": {IsErrorSeverity: capabilities.Replanning}}
	}))
	tl = tool(t, set, "everything_gzip_file_as_resource")
	_, err = call(t, tl, bad)
	if cl := classification(tl, err); cl.Severity != capabilities.Replanning || cl.Kind != KindToolError {
		t.Fatalf("configured replanning: %+v", cl)
	}
}

// A call past its tool's timeout is RETRIABLE for a read-only tool; the
// server goes on answering.
func TestToolTimeout(t *testing.T) {
	set := connect(t, Options{}, everything(t, func(c *ServerConfig) {
		c.Tools = map[string]ToolConfig{"trigger-long-running-operation": {Timeout: 300 * time.Millisecond}}
	}))
	tl := tool(t, set, "everything_trigger_long_running_operation")
	start := time.Now()
	_, err := call(t, tl, map[string]any{"duration": 5, "steps": 5})
	if cl := classification(tl, err); cl.Severity != capabilities.Retriable || cl.Kind != capabilities.KindTimeout || !strings.Contains(cl.UserMessage, "300ms") {
		t.Fatalf("%v → %+v", err, cl)
	}
	if time.Since(start) > 4*time.Second {
		t.Fatalf("the call was not cut at its timeout")
	}
	if r, err := call(t, tool(t, set, "everything_echo"), map[string]any{"message": "still there"}); err != nil || r.Text != "Echo: still there" {
		t.Fatalf("after a timeout: %+v %v", r, err)
	}
}

// A side-effecting tool that is not idempotent is never called again when
// a call's outcome is unknown.
func TestUnknownOutcomeOfSideEffectIsCritical(t *testing.T) {
	yes := true
	no := false
	set := connect(t, Options{}, everything(t, func(c *ServerConfig) {
		c.Tools = map[string]ToolConfig{"trigger-long-running-operation": {Timeout: 200 * time.Millisecond, SideEffects: &yes, Idempotent: &no}}
	}))
	tl := tool(t, set, "everything_trigger_long_running_operation")
	_, err := call(t, tl, map[string]any{"duration": 3, "steps": 3})
	if cl := classification(tl, err); cl.Severity != capabilities.Critical || cl.Kind != KindOutcomeUnknown {
		t.Fatalf("%+v", cl)
	}
}

func pid(t *testing.T, set *Set) int {
	t.Helper()
	for _, s := range set.Servers() {
		if s.PID > 0 {
			return s.PID
		}
	}
	t.Fatal("no running stdio server")
	return 0
}

// A stdio server killed during a call: the call is RETRIABLE and says the
// server is being restarted; the next call runs on a new process.
func TestKilledStdioServerIsRestarted(t *testing.T) {
	set := connect(t, Options{}, everything(t))
	first := pid(t, set)
	long := tool(t, set, "everything_trigger_long_running_operation")
	errc := make(chan error, 1)
	go func() {
		_, err := call(t, long, map[string]any{"duration": 10, "steps": 10})
		errc <- err
	}()
	time.Sleep(500 * time.Millisecond)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-errc:
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not end when its server died")
	}
	cl := classification(long, err)
	if cl.Severity != capabilities.Retriable || cl.Kind != capabilities.KindConnection ||
		!strings.Contains(cl.UserMessage, `MCP server "everything" is unavailable`) || !strings.Contains(cl.UserMessage, "restarting it") ||
		cl.Metadata["server_state"] != "restarting it" {
		t.Fatalf("%v → %+v", err, cl)
	}
	r, err := call(t, tool(t, set, "everything_echo"), map[string]any{"message": "again"})
	if err != nil || r.Text != "Echo: again" {
		t.Fatalf("after the restart: %+v %v", r, err)
	}
	if second := pid(t, set); second == first || set.Servers()[0].Restarts != 1 {
		t.Fatalf("pid %d → %d, restarts %d", first, second, set.Servers()[0].Restarts)
	}

	// Killed between calls: the next call restarts it, unnoticed.
	third := pid(t, set)
	_ = syscall.Kill(third, syscall.SIGKILL)
	deadline := time.Now().Add(5 * time.Second)
	for mcptest.Alive(third) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let the session notice
	if r, err := call(t, tool(t, set, "everything_echo"), map[string]any{"message": "later"}); err != nil || r.Text != "Echo: later" {
		t.Fatalf("after a death between calls: %+v %v", r, err)
	}
}

// clock is a settable clock for restart waits.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Restarts are bounded and spaced: a server that dies and then fails to
// start is tried after growing waits (RETRIABLE with the wait as
// Retry-After), then reported down (CRITICAL) — and picked up again once
// it starts.
func TestRestartsAreBoundedWithBackoff(t *testing.T) {
	node, args := mcptest.Everything(t)
	flag := filepath.Join(t.TempDir(), "broken")
	// Starts the real server, unless the flag file exists.
	script := `if [ -e "$1" ]; then echo "cannot start: $1 exists" >&2; exit 3; fi; exec "$2" "$3" stdio`
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	set := connect(t, Options{Now: clk.now}, ServerConfig{Name: "flaky", Command: "sh", Args: []string{"-c", script, "sh", flag, node, args[0]}, MaxRestarts: 3})
	echo := tool(t, set, "flaky_echo")
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_ = syscall.Kill(pid(t, set), syscall.SIGKILL)
	time.Sleep(300 * time.Millisecond)

	// Restarts 1 and 2 fail (RETRIABLE, after no wait and 1s); the third
	// waits 2s, fails, and the server is reported down.
	var waits []time.Duration
	for i := 0; i < 2; i++ {
		_, err := call(t, echo, map[string]any{"message": "x"})
		cl := classification(echo, err)
		if cl.Severity != capabilities.Retriable || !strings.Contains(cl.UserMessage, "cannot start") {
			t.Fatalf("restart %d: %+v", i+1, cl)
		}
		waits = append(waits, time.Duration(cl.RetryAfter))
		// Too early: refused without starting anything, with the rest of the wait.
		if w := time.Duration(cl.RetryAfter); w > 0 {
			clk.add(w / 2)
			_, err := call(t, echo, map[string]any{"message": "x"})
			if cl := classification(echo, err); cl.Severity != capabilities.Retriable || time.Duration(cl.RetryAfter) != w-w/2 {
				t.Fatalf("early call: %+v", cl)
			}
			clk.add(w - w/2)
		}
	}
	if !slices.Equal(waits, []time.Duration{time.Second, 2 * time.Second}) {
		t.Fatalf("waits %v", waits)
	}
	_, err := call(t, echo, map[string]any{"message": "x"})
	cl := classification(echo, err)
	if cl.Severity != capabilities.Critical || cl.Metadata["server_state"] != "down" || !strings.Contains(cl.UserMessage, `MCP server "flaky" is down: it stopped or failed to start 4 times in a row, and 3 restarts did not help`) {
		t.Fatalf("after the restarts: %+v", cl)
	}
	// Down: nothing is started until the probe interval has passed.
	clk.add(MaxRestartBackoff / 2)
	_, err = call(t, echo, map[string]any{"message": "x"})
	if cl := classification(echo, err); cl.Severity != capabilities.Critical || cl.Metadata["restarts_in_a_row"] != 4 {
		t.Fatalf("early probe: %+v", cl)
	}
	// It works again: the next probe picks it up.
	_ = os.Remove(flag)
	clk.add(MaxRestartBackoff / 2)
	if r, err := call(t, echo, map[string]any{"message": "back"}); err != nil || r.Text != "Echo: back" {
		t.Fatalf("after repair: %+v %v", r, err)
	}
}

// An HTTP server that goes away: RETRIABLE while it is gone; once it is
// back, the next call reconnects (a new session).
func TestHTTPServerReconnects(t *testing.T) {
	h := mcptest.EverythingHTTP(t)
	set := connect(t, Options{}, ServerConfig{Name: "remote", Transport: TransportHTTP, URL: h.URL})
	echo := tool(t, set, "remote_echo")
	if _, err := call(t, echo, map[string]any{"message": "one"}); err != nil {
		t.Fatal(err)
	}
	h.Kill()
	_, err := call(t, echo, map[string]any{"message": "two"})
	cl := classification(echo, err)
	if cl.Severity != capabilities.Retriable || cl.Kind != capabilities.KindConnection || !strings.Contains(cl.UserMessage, `MCP server "remote"`) {
		t.Fatalf("%v → %+v", err, cl)
	}
	h.Restart()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := call(t, echo, map[string]any{"message": "three"})
		if err == nil {
			if r.Text != "Echo: three" {
				t.Fatalf("%+v", r)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reconnection: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if set.Servers()[0].Restarts == 0 {
		t.Fatal("no reconnection counted")
	}
}

// A stdio server gets the configured environment and only the harmless
// variables of capgraph's own: no API keys leak to a third-party server.
func TestStdioEnvironment(t *testing.T) {
	env := map[string]string{"PATH": os.Getenv("PATH"), "HOME": "/home/op", "OPENAI_API_KEY": "sk-secret-never-passed"}
	set := connect(t, Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }},
		everything(t, func(c *ServerConfig) { c.Env = map[string]string{"FACILITY": "ALS"} }))
	r, err := call(t, tool(t, set, "everything_get_env"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(r.Text), &got); err != nil {
		t.Fatal(err)
	}
	if got["FACILITY"] != "ALS" || got["HOME"] != "/home/op" || got["OPENAI_API_KEY"] != "" {
		t.Fatalf("environment %v", got)
	}
}

// Start-up: a server that cannot start is an error naming it, unless it is
// optional; a tool name the configuration gets wrong is always an error.
func TestStartFailures(t *testing.T) {
	good := everything(t)
	bad := ServerConfig{Name: "ghost", Command: filepath.Join(t.TempDir(), "no-such-server")}
	_, err := Connect(context.Background(), []ServerConfig{good, bad}, Options{})
	var se *ServerError
	if !errors.As(err, &se) || se.Server != "ghost" || !strings.Contains(err.Error(), `MCP server "ghost"`) {
		t.Fatalf("%v", err)
	}
	bad.Optional = true
	set := connect(t, Options{}, good, bad)
	if len(set.Skipped()) != 1 || set.Skipped()[0].Server != "ghost" || len(set.Servers()) != 1 {
		t.Fatalf("skipped %v servers %v", set.Skipped(), set.Servers())
	}
	typo := everything(t, func(c *ServerConfig) { c.ReadOnlyTools = []string{"gzip-file"}; c.Optional = true })
	_, err = Connect(context.Background(), []ServerConfig{typo}, Options{})
	var tn *ToolNameError
	if !errors.As(err, &tn) || tn.Key != "read_only_tools" || tn.Tool != "gzip-file" || !slices.Contains(tn.Known, "gzip-file-as-resource") {
		t.Fatalf("%v", err)
	}
	// A handshake that never comes is bounded by the connect timeout.
	start := time.Now()
	_, err = Connect(context.Background(), []ServerConfig{{Name: "mute", Command: "sleep", Args: []string{"30"}, ConnectTimeout: 500 * time.Millisecond}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "no answer to the MCP handshake within 500ms") || time.Since(start) > 10*time.Second {
		t.Fatalf("%v after %s", err, time.Since(start))
	}
}

// Configuration decides over the server's annotations; include and
// exclude choose the tools.
func TestToolSelectionAndOverrides(t *testing.T) {
	yes := true
	set := connect(t, Options{Taken: func(n string) bool { return n == "everything_echo" }}, everything(t, func(c *ServerConfig) {
		c.IncludeTools = []string{"echo", "get-sum", "toggle-simulated-logging", "gzip-file-as-resource"}
		c.ExcludeTools = []string{"get-sum"}
		c.ReadOnlyTools = []string{"toggle-simulated-logging"}
		c.Tools = map[string]ToolConfig{"echo": {SideEffects: &yes, Description: "Repeat a message back, for testing the connection."}}
	}))
	var got []string
	for _, tl := range set.Tools() {
		got = append(got, tl.Name())
	}
	// everything_echo is the application's: the tool gets a suffix.
	if !slices.Equal(got, []string{"everything_echo_2", "everything_gzip_file_as_resource", "everything_toggle_simulated_logging"}) {
		t.Fatalf("tools %v", got)
	}
	echo := tool(t, set, "everything_echo_2")
	if !echo.SideEffects() || echo.Description() != "Repeat a message back, for testing the connection." {
		t.Fatalf("echo: side effects %v, %q", echo.SideEffects(), echo.Description())
	}
	if tool(t, set, "everything_toggle_simulated_logging").SideEffects() {
		t.Fatal("read_only_tools ignored")
	}
	a, err := echo.DescribeAction(capabilities.Step{PlannedStep: capabilities.PlannedStep{Parameters: map[string]any{"message": "a"}}})
	b, _ := echo.DescribeAction(capabilities.Step{PlannedStep: capabilities.PlannedStep{Parameters: map[string]any{"message": "b"}}})
	if err != nil || a.Digest() == b.Digest() || !strings.Contains(a.Summary, `{"message":"a"}`) || a.Changes[0].Target != "mcp:everything/echo" {
		t.Fatalf("actions %+v %+v %v", a, b, err)
	}
}

// Close ends every process a stdio server started, also those that would
// outlive it (a grandchild holding its pipes): no orphans.
func TestCloseLeavesNoProcesses(t *testing.T) {
	node, args := mcptest.Everything(t)
	// sleep is a grandchild: the shell execs node, which inherits it.
	script := `sleep 600 & exec "$1" "$2" stdio`
	set, err := Connect(context.Background(), []ServerConfig{{Name: "family", Command: "sh", Args: []string{"-c", script, "sh", node, args[0]}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	leader := pid(t, set)
	if g := mcptest.Group(leader); len(g) < 2 {
		t.Fatalf("process group %d holds %v; want node and sleep", leader, g)
	}
	start := time.Now()
	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(mcptest.Group(leader)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if g := mcptest.Group(leader); len(g) > 0 {
		t.Fatalf("left running after Close: %v", g)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("Close took %s", d)
	}
	if _, err := call(t, tool(t, set, "family_echo"), map[string]any{"message": "x"}); err == nil {
		t.Fatal("a call after Close worked")
	}
}

// An HTTP server's headers come from capgraph's environment at every
// connection: the secret is never in the configuration. A missing variable
// names itself; credentials the server refuses are CRITICAL (auth), not
// retried.
func TestHTTPHeadersFromEnvironment(t *testing.T) {
	h := mcptest.EverythingHTTP(t)
	target, _ := url.Parse(h.URL)
	var refuse atomic.Bool
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse.Load() || r.Header.Get("Authorization") != "Bearer wiki-token-1" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host}).ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	cfg := ServerConfig{Name: "wiki", URL: proxy.URL + "/mcp", HeadersEnv: map[string]string{"Authorization": "WIKI_TOKEN"}}
	env := map[string]string{}
	opts := Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}

	_, err := Connect(context.Background(), []ServerConfig{cfg}, opts)
	if err == nil || !strings.Contains(err.Error(), "the environment variable WIKI_TOKEN (header Authorization) is not set") {
		t.Fatalf("%v", err)
	}
	env["WIKI_TOKEN"] = "Bearer wrong"
	if _, err := Connect(context.Background(), []ServerConfig{cfg}, opts); err == nil || !strings.Contains(err.Error(), `MCP server "wiki": the server answered HTTP 401 Unauthorized: check the credentials`) {
		t.Fatalf("a refused key connected: %v", err)
	}
	env["WIKI_TOKEN"] = "Bearer wiki-token-1"
	set := connect(t, opts, cfg)
	echo := tool(t, set, "wiki_echo")
	if r, err := call(t, echo, map[string]any{"message": "hi"}); err != nil || r.Text != "Echo: hi" {
		t.Fatalf("%+v %v", r, err)
	}
	refuse.Store(true) // the key was revoked
	_, err = call(t, echo, map[string]any{"message": "again"})
	if cl := classification(echo, err); cl.Severity != capabilities.Critical || cl.Kind != capabilities.KindAuth || !strings.Contains(cl.UserMessage, `MCP server "wiki" refused capgraph's credentials`) {
		t.Fatalf("%v → %+v", err, cl)
	}
}
