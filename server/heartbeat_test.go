package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// syncWriter is a ResponseWriter safe to read while the handler writes.
type syncWriter struct {
	mu  sync.Mutex
	h   http.Header
	buf strings.Builder
}

func (w *syncWriter) Header() http.Header { return w.h }
func (w *syncWriter) WriteHeader(int)     {}
func (w *syncWriter) Flush()              {}
func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}
func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestHeartbeatIsAnEmptyDeltaChunk runs a long step on a fake clock: every
// 10 s of silence gets an empty-delta chunk, never an SSE comment line.
func TestHeartbeatIsAnEmptyDeltaChunk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		runner := newScriptedRunner()
		srv, err := New(Config{Runner: runner})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(chatBody("capgraph", true, user("slow please")))
		req := httptest.NewRequest("POST", "http://localhost/v1/chat/completions", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		w := &syncWriter{h: http.Header{}}
		done := make(chan struct{})
		go func() {
			srv.Handler().ServeHTTP(w, req)
			close(done)
		}()
		synctest.Wait()
		before := strings.Count(w.String(), `"delta":{}`)
		time.Sleep(35 * time.Second)
		synctest.Wait()
		beats := strings.Count(w.String(), `"delta":{}`) - before
		if beats != 3 {
			t.Fatalf("%d heartbeats in 35 s, want 3:\n%s", beats, w.String())
		}
		runner.Release()
		<-done
		out := w.String()
		for _, line := range strings.Split(out, "\n") {
			if line != "" && !strings.HasPrefix(line, "data: ") {
				t.Fatalf("non-data line %q", line)
			}
		}
		if !strings.HasSuffix(out, "data: [DONE]\n\n") || !strings.Contains(out, "Done after waiting.") {
			t.Fatalf("stream end:\n%s", out)
		}
	})
}

// TestShutdownEndsStreamsWithAFinalFrame: a running stream is told the
// server stops, and gets its [DONE]; new runs are refused.
func TestShutdownEndsStreamsWithAFinalFrame(t *testing.T) {
	srv, url, served := serveOnPort(t, Config{Runner: newScriptedRunner(), ShutdownGrace: -1})
	_, br := startSlowStream(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	var rest strings.Builder
	for {
		line, err := br.ReadString('\n')
		rest.WriteString(line)
		if err != nil {
			break
		}
	}
	if !strings.Contains(rest.String(), "shutting down") || !strings.Contains(rest.String(), "data: [DONE]") {
		t.Fatalf("after shutdown:\n%s", rest.String())
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if _, err := startFn(srv, caller{Principal: anonymous}, "x", "x", nil); err == nil {
		t.Fatal("a run started after shutdown")
	}
}

// TestLongRunOutlivesReadTimeout: net/http cancels a request's context when
// ReadTimeout fires during its background read; a run longer than
// ReadTimeout must still answer, streaming or not.
func TestLongRunOutlivesReadTimeout(t *testing.T) {
	for _, stream := range []bool{false, true} {
		runner := newScriptedRunner()
		srv, err := New(Config{Runner: runner, Limits: Limits{ReadTimeout: 100 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ctx, ln) }()
		time.AfterFunc(400*time.Millisecond, runner.Release)
		body, _ := json.Marshal(chatBody("capgraph", stream, user("slow please")))
		resp, err := http.Post("http://"+ln.Addr().String()+"/v1/chat/completions", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&out)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(out.String(), "Done after waiting.") {
			t.Fatalf("stream=%v: %d %s", stream, resp.StatusCode, out.String())
		}
		cancel()
		if err := <-served; err != nil {
			t.Fatal(err)
		}
	}
}

// TestClientGoneCancelsRun: a non-streaming client that disconnects cancels
// its run (the body is read to EOF, so net/http watches the connection):
// at once, as it sends neither an Idempotency-Key nor an SDK's retry
// header (stop_test.go: the grace for those that do).
func TestClientGoneCancelsRun(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.DetachGrace = 50 * time.Millisecond })
	defer env.runner.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	body, _ := json.Marshal(chatBody("capgraph", false, user("slow please")))
	req, _ := http.NewRequestWithContext(ctx, "POST", env.http.URL+"/v1/chat/completions", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	req.Header.Set("Content-Type", "application/json")
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("the slow request answered")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		runs := env.runner.runs()
		if len(runs) == 1 {
			if _, st, err := env.runner.State(context.Background(), runs[0].Thread); err == nil && st == "canceled" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the run was not canceled")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
