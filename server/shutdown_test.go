package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// During Config.ShutdownGrace a running run goes on and ends normally;
// new runs are refused meanwhile.
func TestShutdownGraceLetsRunsFinish(t *testing.T) {
	runner := newScriptedRunner()
	srv, url, served := serveOnPort(t, Config{Runner: runner, ShutdownGrace: 20 * time.Second})
	body, br := startSlowStream(t, url)
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Shutdown(context.Background()) }()
	// New runs are refused while the grace lasts. (Not the same request
	// again: that would be a retry, answered by the running run.)
	_ = body
	other, _ := json.Marshal(chatBody("capgraph", true, user("another question")))
	deadline := time.Now().Add(5 * time.Second)
	for {
		r2, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(string(other)))
		if err != nil {
			t.Fatal(err)
		}
		r2.Body.Close()
		if r2.StatusCode == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a new run was accepted during shutdown: %d", r2.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
	runner.Release()
	var rest strings.Builder
	_, _ = br.WriteTo(&rest)
	if !strings.Contains(rest.String(), "Done after waiting.") || strings.Contains(rest.String(), "shutting down") || !strings.Contains(rest.String(), "data: [DONE]") {
		t.Fatalf("the run did not finish normally:\n%s", rest.String())
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown waited for the whole grace after the runs ended")
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// serveOnPort serves a server made of cfg on a free local port; served
// receives Serve's result.
func serveOnPort(t *testing.T, cfg Config) (srv *Server, url string, served chan error) {
	t.Helper()
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served = make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), ln) }()
	return srv, "http://" + ln.Addr().String(), served
}

// startSlowStream posts a streaming "slow please" chat (the scripted runner
// then waits for Release) and reads until the run is under way; it returns
// the request body and the rest of the stream, closed when the test ends.
func startSlowStream(t *testing.T, url string) (body []byte, br *bufio.Reader) {
	t.Helper()
	body, _ = json.Marshal(chatBody("capgraph", true, user("slow please")))
	req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-OpenWebUI-User-Id", "u-1") // Open WebUI: status frames (the wait is one)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	br = bufio.NewReader(resp.Body)
	for { // wait until the run is under way
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, "Waiting for the archiver") {
			break
		}
	}
	return body, br
}

// serverGoroutines returns the stacks of the goroutines that the server's
// code (not its tests') started, by goroutine id.
func serverGoroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		// Started by package server or one of its own (the run manager's
		// crew in server/internal), not by the tests (a test's goroutine
		// running Serve).
		_, creator, ok := strings.Cut(g, "\ncreated by github.com/capgraph/capgraph/server")
		ok = ok && (strings.HasPrefix(creator, ".") || strings.HasPrefix(creator, "/internal/"))
		// One whose function has returned and that is only exiting
		// (runtime.goexit1 on top) is no goroutine left behind.
		if _, stack, _ := strings.Cut(g, "\n"); strings.HasPrefix(stack, "runtime.goexit1(") {
			ok = false
		}
		if ok && !strings.Contains(creator, "_test.go:") {
			id, _, _ := strings.Cut(g, " [")
			out[id] = g
		}
	}
	return out
}

// TestShutdownJoinsEveryGoroutine: once Shutdown and Serve have returned,
// no goroutine the server started is left — not a run's agent call, not
// the recovery and prune loops, not a timer's body (docs/architecture.md,
// "Who owns which goroutine"). Goroutines of servers other tests left
// behind are not counted.
func TestShutdownJoinsEveryGoroutine(t *testing.T) {
	before := serverGoroutines()
	srv, url, served := serveOnPort(t, Config{Runner: newScriptedRunner(), ShutdownGrace: -1, Cluster: Cluster{RecoverEvery: time.Hour}})
	_, br := startSlowStream(t, url)
	started := 0
	for id := range serverGoroutines() {
		if _, ok := before[id]; !ok {
			started++
		}
	}
	if started < 2 {
		t.Fatalf("%d goroutines of this server while a run goes on; want its run and its loops", started)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// The moment Shutdown returns, not a moment later.
	var left []string
	for id, g := range serverGoroutines() {
		if _, ok := before[id]; !ok {
			left = append(left, g)
		}
	}
	if len(left) > 0 {
		t.Fatalf("%d goroutines of the server outlive Shutdown:\n%s", len(left), strings.Join(left, "\n\n"))
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, br)
}
