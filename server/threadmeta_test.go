package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/state"
)

// The page renames a thread with PATCH /api/threads/{id}: the title is
// stored with the thread in the agent's store, listed, kept by later turns
// and by a server started afresh over the same store; a pending approval
// stays pending and is answered as before. Bad bodies are 400s naming
// what is wrong, another principal's thread is 404, a running thread 409.
func TestRenameThread(t *testing.T) {
	env := newSafetyEnv(t, state.Options{WritesEnabled: true, ApprovalMode: state.ApprovalModeSelective})
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "q1", "metadata": map[string]string{"title": "Set Q1"}})
	_, body := env.do(t, "POST", "/api/threads/q1/runs", keyAlice, map[string]any{"input": "Set the Q1 current to 105 A", "stream": true})
	var approvalID string
	for _, f := range readSSE(t, strings.NewReader(string(body))) {
		if f.Event == "approval_required" {
			var ev struct {
				Approval state.Approval `json:"approval"`
			}
			if err := json.Unmarshal([]byte(f.Data), &ev); err != nil {
				t.Fatal(err)
			}
			approvalID = ev.Approval.ID
		}
	}
	if approvalID == "" {
		t.Fatalf("no approval asked: %s", body)
	}

	resp, body := env.do(t, "PATCH", "/api/threads/q1", keyAlice, map[string]any{"metadata": map[string]string{"title": "Q1 to 105 A — shift B"}})
	var th apiThread
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &th) != nil || th.Metadata["title"] != "Q1 to 105 A — shift B" || th.Status != "interrupted" {
		t.Fatalf("rename: %d %s", resp.StatusCode, body)
	}
	if titles := threadTitles(t, env.testEnv, keyAlice); titles["q1"] != "Q1 to 105 A — shift B" {
		t.Fatalf("listed titles %v", titles)
	}
	// Still waiting: the approval is answered as before, the write made once.
	_, body = env.do(t, "GET", "/api/threads/q1/plan", keyAlice, nil)
	if !strings.Contains(string(body), approvalID) {
		t.Fatalf("the pending approval is gone: %s", body)
	}
	resp, body = env.do(t, "POST", "/api/threads/q1/approval", keyAlice, map[string]any{"approval_id": approvalID, "approved": true, "stream": true})
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"answered"`) {
		t.Fatalf("approve: %d %s", resp.StatusCode, body)
	}
	if w := env.plant.written(); len(w) != 1 || w[0] != 105 {
		t.Fatalf("written %v", w)
	}
	// A later turn keeps the title; so does a server started afresh.
	env.do(t, "POST", "/api/threads/q1/runs", keyAlice, map[string]any{"input": "What is the beam current?", "stream": true})
	fresh := newTestEnv(t, func(c *Config) { c.Runner = env.agent; c.Principals = env.srv.cfg.Principals })
	if titles := threadTitles(t, fresh, keyAlice); titles["q1"] != "Q1 to 105 A — shift B" {
		t.Fatalf("after a restart: %v", titles)
	}
	// Removing a key.
	resp, body = env.do(t, "PATCH", "/api/threads/q1", keyAlice, map[string]any{"metadata": map[string]any{"title": nil}})
	if resp.StatusCode != http.StatusOK || strings.Contains(string(body), "title") {
		t.Fatalf("remove: %d %s", resp.StatusCode, body)
	}
	env.do(t, "PATCH", "/api/threads/q1", keyAlice, map[string]any{"metadata": map[string]string{"title": "kept"}})

	for _, tc := range []struct {
		name, body, param string
	}{
		{"no metadata", `{}`, "metadata"},
		{"metadata null", `{"metadata":null}`, "metadata"},
		{"not an object", `{"metadata":"title"}`, "metadata"},
		{"number value", `{"metadata":{"title":5}}`, "metadata"},
		{"long value", `{"metadata":{"title":"` + strings.Repeat("x", 600) + `"}}`, "metadata"},
		{"empty key", `{"metadata":{"":"x"}}`, "metadata"},
		{"NUL", `{"metadata":{"title":"a\u0000b"}}`, "metadata"},
		{"broken JSON", `{"metadata":`, "body"},
	} {
		resp, body := env.do(t, "PATCH", "/api/threads/q1", keyAlice, tc.body)
		e := decodeErr(t, body)
		if resp.StatusCode != http.StatusBadRequest || e.Error.Param == nil || *e.Error.Param != tc.param {
			t.Errorf("%s: %d %s, want 400 naming %s", tc.name, resp.StatusCode, body, tc.param)
		}
	}
	many := map[string]string{}
	for i := range 17 {
		many[strings.Repeat("k", i+1)] = "v"
	}
	if resp, body := env.do(t, "PATCH", "/api/threads/q1", keyAlice, map[string]any{"metadata": many}); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("17 keys: %d %s", resp.StatusCode, body)
	}
	if resp, _ := env.do(t, "PATCH", "/api/threads/q1", keyBob, map[string]any{"metadata": map[string]string{"title": "mine now"}}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another principal's thread: %d, want 404", resp.StatusCode)
	}
	if resp, _ := env.do(t, "PATCH", "/api/threads/q1", "", map[string]any{"metadata": map[string]string{"title": "x"}}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no key: %d, want 401", resp.StatusCode)
	}
	if titles := threadTitles(t, env.testEnv, keyAlice); titles["q1"] != "kept" {
		t.Errorf("a refused change changed the title: %v", titles)
	}
}

// A thread created but never run is renamed too (the index carries the
// title into its first turn).
func TestRenameThreadBeforeItsFirstTurn(t *testing.T) {
	env := newSafetyEnv(t, state.Options{})
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "new"})
	if resp, body := env.do(t, "PATCH", "/api/threads/new", keyAlice, map[string]any{"metadata": map[string]string{"title": "Beam"}}); resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	env.do(t, "POST", "/api/threads/new/runs", keyAlice, map[string]any{"input": "What is the beam current?", "stream": true})
	fresh := newTestEnv(t, func(c *Config) { c.Runner = env.agent; c.Principals = env.srv.cfg.Principals })
	if titles := threadTitles(t, fresh, keyAlice); titles["new"] != "Beam" {
		t.Fatalf("titles %v", titles)
	}
}

// While a run goes on, its thread is not changed (409).
func TestRenameRunningThread(t *testing.T) {
	env := newTestEnv(t, nil)
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "s"})
	resp, body := env.do(t, "POST", "/api/threads/s/runs", keyAlice, map[string]any{"input": "slow please"})
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	resp, body = env.do(t, "PATCH", "/api/threads/s", keyAlice, map[string]any{"metadata": map[string]string{"title": "x"}})
	if resp.StatusCode != http.StatusConflict || decodeErr(t, body).Error.Code != "run_in_progress" {
		t.Fatalf("%d %s, want 409 run_in_progress", resp.StatusCode, body)
	}
	env.runner.Release()
}

func threadTitles(t *testing.T, env *testEnv, key string) map[string]string {
	t.Helper()
	resp, body := env.do(t, "GET", "/api/threads", key, nil)
	var list struct {
		Threads []apiThread `json:"threads"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &list) != nil {
		t.Fatalf("list: %d %s", resp.StatusCode, body)
	}
	out := map[string]string{}
	for _, th := range list.Threads {
		out[th.ID] = th.Metadata["title"]
	}
	return out
}

// /api/info says who the key is and whether writes are enabled, as the
// agent is configured; a runner that does not say leaves it out.
func TestInfoWritesEnabled(t *testing.T) {
	for _, on := range []bool{false, true} {
		env := newSafetyEnv(t, state.Options{WritesEnabled: on})
		resp, body := env.do(t, "GET", "/api/info", keyBob, nil)
		var in info
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &in) != nil || in.WritesEnabled == nil || *in.WritesEnabled != on ||
			in.Principal != "bob" || in.ApprovalMode != state.ApprovalModeSelective {
			t.Fatalf("writes %v: %d %s", on, resp.StatusCode, body)
		}
	}
	env := newTestEnv(t, nil)
	_, body := env.do(t, "GET", "/api/info", keyAlice, nil)
	if strings.Contains(string(body), "writes_enabled") || !strings.Contains(string(body), `"principal":"alice"`) {
		t.Fatalf("scripted runner: %s", body)
	}
}
