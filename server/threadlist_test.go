package server

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
)

// sqliteAgentEnv serves a real (offline) agent over the SQLite store at
// path; the store is closed when the test ends.
func sqliteAgentEnv(t *testing.T, path string) *testEnv {
	t.Helper()
	return agentEnvOver(t, openSQLite(t, path))
}

// openSQLite opens a SQLite store at path, closed when the test ends.
func openSQLite(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	store, err := sqlite.New(sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// agentEnvOver serves a real agent over store with one capability,
// read_beam_current (401.5 mA).
func agentEnvOver(t *testing.T, store checkpoint.Store) *testEnv {
	t.Helper()
	read := capabilities.Define(capabilities.Definition{
		Name: "read_beam_current", Description: "Read the beam current of the storage ring",
		Provides: []string{"BEAM_CURRENT"},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("BEAM_CURRENT", 401.5, "beam current is 401.5 mA"), nil
		},
	})
	reg := newRegistry(t, read)
	a, err := agent.New(agent.Config{Registry: reg, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	return newTestEnv(t, func(c *Config) { c.Runner = a })
}

func threadIDs(t *testing.T, body []byte) map[string]apiThread {
	t.Helper()
	var out struct{ Threads []apiThread }
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	m := map[string]apiThread{}
	for _, th := range out.Threads {
		m[th.ID] = th
	}
	return m
}

// Threads are listed from the checkpoint store: a second server on the
// same SQLite file (a restart) lists and serves them without the client
// registering them again, and another principal's threads stay 404.
func TestThreadsSurviveRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "threads.db")
	first := sqliteAgentEnv(t, path)
	first.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "beam", "metadata": map[string]string{"title": "Beam"}})
	resp, body := first.do(t, "POST", "/api/threads/beam/runs", keyAlice, map[string]any{"input": "What is the beam current?", "stream": true})
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "401.5") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	first.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "never-run"})
	resp, body = first.do(t, "POST", "/v1/chat/completions", keyWebUI, chatBody("capgraph", false, user("What is the beam current?")),
		"X-OpenWebUI-Chat-Id", "c-1", "X-OpenWebUI-User-Id", "u-1")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	first.http.Close()

	second := sqliteAgentEnv(t, path)
	_, body = second.do(t, "GET", "/api/threads", keyAlice, nil)
	got := threadIDs(t, body)
	th, ok := got["beam"]
	if !ok || len(got) != 2 || th.Metadata["title"] != "Beam" || th.Created.IsZero() || th.Status != "answered" {
		// The status of a thread known only from the store is read from it.
		t.Fatalf("alice's threads after restart: %s", body)
	}
	// A thread created and never run is durable too (it has its initial
	// checkpoint), without a status.
	if nr, ok := got["never-run"]; !ok || nr.Status != "" || nr.Created.IsZero() {
		t.Fatalf("never-run after restart: %s", body)
	}
	resp, body = second.do(t, "GET", "/api/threads/beam", keyAlice, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"answered"`) {
		t.Fatalf("get: %d %s", resp.StatusCode, body)
	}
	resp, body = second.do(t, "GET", "/api/threads/beam/state", keyAlice, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "What is the beam current?") {
		t.Fatalf("state: %d %s", resp.StatusCode, body)
	}
	// Re-registering is harmless: it exists, 200 not 201.
	if resp, body = second.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "beam"}); resp.StatusCode != http.StatusOK {
		t.Fatalf("re-register: %d %s", resp.StatusCode, body)
	}
	// Another principal: no threads, and alice's is 404 on every route.
	_, body = second.do(t, "GET", "/api/threads", keyBob, nil)
	if got := threadIDs(t, body); len(got) != 0 {
		t.Fatalf("bob sees %s", body)
	}
	for _, path := range []string{"/api/threads/beam", "/api/threads/beam/state", "/api/threads/beam/plan"} {
		if resp, body := second.do(t, "GET", path, keyBob, nil); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("bob GET %s: %d %s", path, resp.StatusCode, body)
		}
	}
	// The trusted frontend's thread is listed for its forwarded user only.
	_, body = second.do(t, "GET", "/api/threads", keyWebUI, nil, "X-OpenWebUI-User-Id", "u-1")
	if got := threadIDs(t, body); len(got) != 1 || got["openwebui:c-1"].ID == "" {
		t.Fatalf("webui u-1 sees %s", body)
	}
	_, body = second.do(t, "GET", "/api/threads", keyWebUI, nil, "X-OpenWebUI-User-Id", "u-2")
	if got := threadIDs(t, body); len(got) != 0 {
		t.Fatalf("webui u-2 sees %s", body)
	}
	// Deleting after the restart removes the checkpoints.
	if resp, body := second.do(t, "DELETE", "/api/threads/beam", keyAlice, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	_, body = second.do(t, "GET", "/api/threads", keyAlice, nil)
	if got := threadIDs(t, body); len(got) != 1 || got["never-run"].ID == "" {
		t.Fatalf("after delete: %s", body)
	}
}
