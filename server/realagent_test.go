package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/server/internal/approvaltoken"
	"github.com/capgraph/capgraph/server/internal/responses"
)

// realAgentEnv serves a real agent (offline: no LLM) over a small registry:
// read_beam_current answers; archive_snapshot fails once with
// resource exhaustion, which escalates to a human approval, then succeeds.
type realAgentEnv struct {
	*testEnv
	mu        sync.Mutex
	snapshots int
}

func newRealAgentEnv(t *testing.T) *realAgentEnv {
	t.Helper()
	re := &realAgentEnv{}
	read := readBeamCurrent(t)
	snap := capabilities.Define(capabilities.Definition{
		Name: "archive_snapshot", Description: "Save a snapshot of the machine settings to the archive",
		Provides: []string{"SNAPSHOT"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use to save or archive a snapshot of the settings.",
			Examples: []capabilities.ClassifierExample{{Query: "save a snapshot of the settings", Result: true, Reason: "asks for a snapshot"}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			re.mu.Lock()
			defer re.mu.Unlock()
			re.snapshots++
			if re.snapshots == 1 {
				return capabilities.Output{}, capabilities.ErrResourceExhausted
			}
			return capabilities.Result("SNAPSHOT", "snap-7", "snapshot snap-7 saved"), nil
		},
	})
	reg := newRegistry(t, read, snap)
	a, err := agent.New(agent.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	re.testEnv = newTestEnv(t, func(c *Config) { c.Runner = a })
	return re
}

func TestRealAgentChatCompletions(t *testing.T) {
	env := newRealAgentEnv(t)
	resp, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user("What is the beam current of the storage ring?")))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if c := chatContent(t, body); !strings.Contains(c, "401.5") {
		t.Fatalf("content %q", c)
	}
	_, body = env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", true, user("What is the beam current of the storage ring?")))
	v := parseLikeOpenWebUI(t, string(body))
	if !v.Done || !strings.Contains(v.Content, "401.5") || !strings.Contains(v.Reasoning, "read_beam_current") {
		t.Fatalf("stream %+v", v)
	}
	recs := env.audit.records(t)
	if len(recs) == 0 || recs[0].Capability != "read_beam_current" || recs[0].Event != agent.AuditStep || recs[0].Outcome != "" || recs[0].Principal != "alice" {
		t.Fatalf("audit %+v", recs)
	}
}

func TestRealAgentApprovalOverChatCompletions(t *testing.T) {
	env := newRealAgentEnv(t)
	_, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user("Save a snapshot of the settings")))
	ask := chatContent(t, body)
	if _, ok := approvaltoken.Find(ask); !ok || !strings.Contains(ask, `reply "yes"`) {
		t.Fatalf("no approval request: %q", ask)
	}
	tok, _ := approvaltoken.Find(ask)
	hist := chatBody("capgraph", false, user("Save a snapshot of the settings"), assistant(ask), user("Yes "+tok))
	_, b1 := env.do(t, "POST", "/v1/chat/completions", keyAlice, hist)
	_, b2 := env.do(t, "POST", "/v1/chat/completions", keyAlice, hist)
	c1, c2 := chatContent(t, b1), chatContent(t, b2)
	env.mu.Lock()
	n := env.snapshots
	env.mu.Unlock()
	if !strings.Contains(c1, "snap-7") || c2 != c1 || n != 2 {
		t.Fatalf("after yes: %q / replay %q, capability ran %d times", c1, c2, n)
	}
}

func TestRealAgentNativeAndAGUI(t *testing.T) {
	env := newRealAgentEnv(t)
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "snap"})
	_, body := env.do(t, "POST", "/api/threads/snap/runs", keyAlice, map[string]any{"input": "Save a snapshot of the settings", "stream": true})
	frames := readSSE(t, strings.NewReader(string(body)))
	var ap *struct {
		Approval struct{ ID string } `json:"approval"`
	}
	for _, f := range frames {
		if f.Event == "approval_required" {
			ap = &struct {
				Approval struct{ ID string } `json:"approval"`
			}{}
			if err := json.Unmarshal([]byte(f.Data), ap); err != nil {
				t.Fatal(err)
			}
		}
	}
	if ap == nil || ap.Approval.ID == "" {
		t.Fatalf("no approval: %s", body)
	}
	resp, body := env.do(t, "POST", "/api/threads/snap/approval", keyAlice, map[string]any{"approval_id": ap.Approval.ID, "approved": true, "stream": true})
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "snap-7") || !strings.Contains(string(body), `"status":"answered"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	// AG-UI on the real agent: a run ends with RUN_FINISHED and carries the answer.
	resp, body = env.do(t, "POST", "/agui", keyAlice, map[string]any{"threadId": "ag", "runId": "r1",
		"messages": []map[string]any{{"id": "u1", "role": "user", "content": "What is the beam current of the storage ring?"}}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"type":"RUN_FINISHED"`) || !strings.Contains(string(body), "401.5") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

// The Responses API on the real agent: an approval asked through one
// server process is answered through another (a restart: nothing in
// memory) by previous_response_id, found through the checkpoint store, and
// carried out once.
func TestRealAgentResponsesAcrossRestart(t *testing.T) {
	env := newRealAgentEnv(t)
	code, body := rawResponses(t, env.testEnv, keyAlice, map[string]any{"model": "capgraph", "input": "Save a snapshot of the settings"})
	var ask responses.Object
	if err := json.Unmarshal([]byte(body), &ask); err != nil || code != http.StatusOK || ask.Status != "completed" ||
		!strings.Contains(ask.Output[0].Content[0].Text, "Approval ID: AP-") {
		t.Fatalf("%d %s", code, body)
	}
	// A second process over the same agent and store.
	env2 := newTestEnv(t, func(c *Config) { c.Runner = env.srv.cfg.Runner })
	yes := map[string]any{"model": "capgraph", "input": "yes", "previous_response_id": ask.ID, "stream": true}
	code, body = rawResponses(t, env2, keyAlice, yes)
	if code != http.StatusOK || !strings.Contains(body, "snap-7") || !strings.Contains(body, "event: response.completed") {
		t.Fatalf("%d %s", code, body)
	}
	if code, body = rawResponses(t, env2, keyAlice, yes); code != http.StatusConflict {
		t.Fatalf("retry %d %s", code, body)
	}
	// Bob cannot reach alice's thread in either process.
	if code, _ = rawResponses(t, env2, keyBob, map[string]any{"model": "capgraph", "input": "yes", "previous_response_id": ask.ID}); code != http.StatusNotFound {
		t.Fatalf("bob %d", code)
	}
	env.mu.Lock()
	n := env.snapshots
	env.mu.Unlock()
	if n != 2 {
		t.Fatalf("the capability ran %d times (1 failure + 1 after the approval expected)", n)
	}
}
