package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
)

const (
	keyAlice = "sk-alice-0123456789"
	keyBob   = "sk-bob-0123456789"
	keyWebUI = "sk-webui-0123456789"
)

// memAudit collects audit records.
type memAudit struct {
	mu  sync.Mutex
	buf bytes.Buffer
	j   *JSONLAudit
}

func newMemAudit() *memAudit {
	m := &memAudit{}
	m.j = NewJSONLAudit(lockedWriter{m})
	return m
}

type lockedWriter struct{ m *memAudit }

func (l lockedWriter) Write(p []byte) (int, error) {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	return l.m.buf.Write(p)
}

// records returns every record the server wrote to its audit log.
func (m *memAudit) records(t *testing.T) []agent.AuditRecord {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []agent.AuditRecord
	dec := json.NewDecoder(bytes.NewReader(m.buf.Bytes()))
	for dec.More() {
		var r agent.AuditRecord
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

type testEnv struct {
	srv    *Server
	http   *httptest.Server
	runner *scriptedRunner
	audit  *memAudit
}

// newTestEnv starts a server with three principals (alice, bob, and the
// trusted frontend webui) over a scripted runner on a real loopback
// listener.
func newTestEnv(t testing.TB, mod func(*Config)) *testEnv {
	t.Helper()
	env := &testEnv{runner: newScriptedRunner(), audit: newMemAudit()}
	cfg := Config{
		Runner:    env.runner,
		Audit:     env.audit.j,
		Heartbeat: time.Hour,
		Auth: Auth{
			Principals: []Principal{
				{Name: "alice", KeySHA256: HashKey(keyAlice), Tenant: "lab"},
				{Name: "bob", KeySHA256: HashKey(keyBob), Tenant: "lab"},
				{Name: "webui", KeySHA256: HashKey(keyWebUI), Tenant: "lab", TrustedFrontend: true},
			},
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	env.srv = srv
	env.http = httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		env.http.Close()
	})
	return env
}

// do sends a request with an optional key and JSON body.
func (e *testEnv) do(t testing.TB, method, path, key string, body any, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.http.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// postUntil posts body as JSON with key in the background, as a client
// that gives up when ctx ends; the channel gets the status, or 0 when the
// request ended without a response.
func (e *testEnv) postUntil(ctx context.Context, path, key string, body any) <-chan int {
	status := make(chan int, 1)
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, "POST", e.http.URL+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			status <- 0
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	return status
}

func chatBody(model string, stream bool, msgs ...map[string]any) map[string]any {
	return map[string]any{"model": model, "stream": stream, "messages": msgs}
}

func user(text string) map[string]any { return map[string]any{"role": "user", "content": text} }
func assistant(text string) map[string]any {
	return map[string]any{"role": "assistant", "content": text}
}
