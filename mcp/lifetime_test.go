package mcp

import (
	"context"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/capgraph/capgraph/mcp/mcptest"
)

// Set.Close stops and joins every goroutine its connections started: the
// watcher of each session, the closing of a connection dropped after its
// server died, the wait for a broken connection to end, and the HTTP
// client's connections. After Close, none is left.
func TestCloseJoinsTheConnectionsGoroutines(t *testing.T) {
	h := mcptest.EverythingHTTP(t) // the test server's own goroutines are not the Set's
	before := goleak.IgnoreCurrent()
	set, err := Connect(context.Background(), []ServerConfig{everything(t), {Name: "remote", Transport: TransportHTTP, URL: h.URL}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, tool(t, set, "remote_echo"), map[string]any{"message": "one"}); err != nil {
		t.Fatal(err)
	}
	// A stdio server killed during a call: the call waits for the broken
	// connection to end and drops it (its closing runs in the background).
	long := tool(t, set, "everything_trigger_long_running_operation")
	errc := make(chan error, 1)
	go func() {
		_, err := call(t, long, map[string]any{"duration": 10, "steps": 10})
		errc <- err
	}()
	time.Sleep(500 * time.Millisecond)
	if err := syscall.Kill(pid(t, set), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("a call whose server was killed succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not end when its server died")
	}
	// The next call restarts it: a new session and its watcher.
	if r, err := call(t, tool(t, set, "everything_echo"), map[string]any{"message": "again"}); err != nil || r.Text != "Echo: again" {
		t.Fatalf("after the restart: %+v %v", r, err)
	}
	if g := goroutinesIn("github.com/capgraph/capgraph/mcp."); len(g) < 2 {
		t.Fatalf("%d goroutines of package mcp before Close; want a watcher per session at least", len(g))
	}
	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	// Joined: not one of them is still running the moment Close returns.
	if g := goroutinesIn("github.com/capgraph/capgraph/mcp."); len(g) > 0 {
		t.Fatalf("%d goroutines of package mcp still run after Close:\n%s", len(g), strings.Join(g, "\n\n"))
	}
	// And nothing they started (the SDK's readers, the HTTP client's
	// connections) is left once those have wound down.
	goleak.VerifyNone(t, before)
}

// goroutinesIn returns the stacks of the other goroutines running a
// function whose name starts with prefix.
func goroutinesIn(prefix string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i > 0 && strings.Contains(g, "\n"+prefix) { // the first is this goroutine's
			out = append(out, g)
		}
	}
	return out
}
