package server

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/native"
)

// sseFrame is one parsed SSE frame.
type sseFrame struct {
	ID, Event, Data string
}

func readSSE(t *testing.T, r io.Reader) []sseFrame {
	t.Helper()
	var out []sseFrame
	var cur sseFrame
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur != (sseFrame{}) {
				out = append(out, cur)
			}
			cur = sseFrame{}
		case strings.HasPrefix(line, "id: "):
			cur.ID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return out
}

func TestNativeThreadsAndRuns(t *testing.T) {
	env := newTestEnv(t, nil)
	resp, body := env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "beam", "metadata": map[string]string{"title": "Beam"}})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if resp, _ := env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "beam"}); resp.StatusCode != http.StatusOK {
		t.Fatalf("re-create %d", resp.StatusCode)
	}
	if resp, _ := env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "a/b"}); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad id %d", resp.StatusCode)
	}
	// A streamed run.
	resp, body = env.do(t, "POST", "/api/threads/beam/runs", keyAlice, map[string]any{"input": "What is the beam current?", "stream": true})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	frames := readSSE(t, strings.NewReader(string(body)))
	last := frames[len(frames)-1]
	if last.Event != "end" || !strings.Contains(last.Data, `"status":"answered"`) {
		t.Fatalf("last frame %+v", last)
	}
	var types []string
	for i, f := range frames[:len(frames)-1] {
		var ev agent.Event
		if err := json.Unmarshal([]byte(f.Data), &ev); err != nil {
			t.Fatal(err)
		}
		if f.ID != itoa(i+1) || ev.Seq != i+1 || string(ev.Type) != f.Event {
			t.Fatalf("frame %d: %+v", i, f)
		}
		types = append(types, f.Event)
	}
	for _, want := range []string{"run_start", "plan", "step_start", "step_end", "retry", "token", "message", "usage", "done"} {
		if !strings.Contains(","+strings.Join(types, ",")+",", ","+want+",") {
			t.Fatalf("missing %s in %v", want, types)
		}
	}
	// State and plan.
	_, body = env.do(t, "GET", "/api/threads/beam/state", keyAlice, nil)
	var ts native.ThreadState
	if err := json.Unmarshal(body, &ts); err != nil || ts.Status != agent.RunAnswered || ts.State == nil || len(ts.State.Messages) != 2 {
		t.Fatalf("state %s", body)
	}
	_, body = env.do(t, "GET", "/api/threads/beam/plan", keyAlice, nil)
	if !strings.Contains(string(body), `"capability":"channel_read"`) {
		t.Fatalf("plan %s", body)
	}
	// List, get, delete.
	_, body = env.do(t, "GET", "/api/threads", keyAlice, nil)
	if !strings.Contains(string(body), `"id":"beam"`) || !strings.Contains(string(body), `"status":"answered"`) {
		t.Fatalf("list %s", body)
	}
	if resp, _ := env.do(t, "DELETE", "/api/threads/beam", keyAlice, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete %d", resp.StatusCode)
	}
	if resp, _ := env.do(t, "GET", "/api/threads/beam", keyAlice, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("get after delete %d", resp.StatusCode)
	}
	if _, _, err := env.runner.State(t.Context(), internalThreadID(caller{Principal: Principal{Name: "alice", Tenant: "lab"}}, "beam")); err == nil {
		t.Fatal("the agent's thread was not deleted")
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestNativeReconnectWithLastEventID(t *testing.T) {
	env := newTestEnv(t, nil)
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "slow"})
	_, body := env.do(t, "POST", "/api/threads/slow/runs", keyAlice, map[string]any{"input": "slow please"})
	var started struct {
		Run       native.RunInfo `json:"run"`
		EventsURL string         `json:"events_url"`
	}
	if err := json.Unmarshal(body, &started); err != nil {
		t.Fatal(err)
	}
	// Read the first frames, then drop the connection.
	req, _ := http.NewRequest("GET", env.http.URL+started.EventsURL, nil)
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	lastID := ""
	for lastID != "4" { // run_start, status, task, status "Waiting…"
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "id: ") {
			lastID = strings.TrimSpace(strings.TrimPrefix(line, "id: "))
		}
	}
	resp.Body.Close()
	env.runner.Release()
	// Reconnect: only the missed events come.
	resp2, body2 := env.do(t, "GET", started.EventsURL, keyAlice, nil, "Last-Event-ID", lastID)
	if resp2.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp2.StatusCode, body2)
	}
	frames := readSSE(t, strings.NewReader(string(body2)))
	if frames[0].ID != "5" || frames[0].Event != "message" || frames[len(frames)-1].Event != "end" {
		t.Fatalf("frames %+v", frames)
	}
	// The run's info.
	_, body = env.do(t, "GET", "/api/threads/slow/runs/"+started.Run.ID, keyAlice, nil)
	if !strings.Contains(string(body), `"finished":true`) {
		t.Fatalf("run %s", body)
	}
	if resp, _ := env.do(t, "GET", started.EventsURL, keyAlice, nil, "Last-Event-ID", "x"); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad Last-Event-ID %d", resp.StatusCode)
	}
}

func TestNativeApprovalExecutesOnce(t *testing.T) {
	env := newTestEnv(t, nil)
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "w"})
	_, body := env.do(t, "POST", "/api/threads/w/runs", keyAlice, map[string]any{"input": "write 1.5 A", "stream": true})
	if !strings.Contains(string(body), "event: approval_required") || !strings.Contains(string(body), `"status":"interrupted"`) {
		t.Fatalf("%s", body)
	}
	_, body = env.do(t, "GET", "/api/threads/w/plan", keyAlice, nil)
	if !strings.Contains(string(body), `"pending_approval":{"id":"approval-1"`) {
		t.Fatalf("plan %s", body)
	}
	yes := map[string]any{"approval_id": "approval-1", "approved": true, "stream": true}
	// Bob cannot answer alice's approval.
	if resp, _ := env.do(t, "POST", "/api/threads/w/approval", keyBob, yes); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("bob %d", resp.StatusCode)
	}
	resp, body := env.do(t, "POST", "/api/threads/w/approval", keyAlice, yes)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "SR:HCM1 is now 1.5 A.") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	resp, body = env.do(t, "POST", "/api/threads/w/approval", keyAlice, yes)
	if resp.StatusCode != http.StatusConflict || resp.Header.Get("x-should-retry") != "false" || env.runner.writes() != 1 {
		t.Fatalf("replay: %d %s writes %d", resp.StatusCode, body, env.runner.writes())
	}
	if resp, _ := env.do(t, "POST", "/api/threads/w/approval", keyAlice, map[string]any{"approval_id": "approval-1"}); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("no decision %d", resp.StatusCode)
	}
}

func TestNativeCancel(t *testing.T) {
	env := newTestEnv(t, nil)
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "c"})
	_, body := env.do(t, "POST", "/api/threads/c/runs", keyAlice, map[string]any{"input": "slow please"})
	var started struct {
		Run native.RunInfo `json:"run"`
	}
	if err := json.Unmarshal(body, &started); err != nil {
		t.Fatal(err)
	}
	if resp, _ := env.do(t, "POST", "/api/threads/c/runs/"+started.Run.ID+"/cancel", keyAlice, nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("cancel %d", resp.StatusCode)
	}
	_, body = env.do(t, "GET", "/api/threads/c/runs/"+started.Run.ID+"/events", keyAlice, nil)
	if !strings.Contains(string(body), `event: end`) || !strings.Contains(string(body), `"status":"canceled"`) {
		t.Fatalf("%s", body)
	}
	// The thread is free again.
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, _ := env.do(t, "POST", "/api/threads/c/runs", keyAlice, map[string]any{"input": "hello"})
		if resp.StatusCode == http.StatusAccepted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread still busy: %d", resp.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestNativeAfterRestart: the thread index is in memory, the agent's
// checkpoints are not; a re-registered thread reaches its old state and its
// pending approval.
func TestNativeAfterRestart(t *testing.T) {
	env := newTestEnv(t, nil)
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "w"})
	env.do(t, "POST", "/api/threads/w/runs", keyAlice, map[string]any{"input": "write 1.5 A", "stream": true})

	restarted := newTestEnv(t, func(c *Config) { c.Runner = env.runner })
	if resp, _ := restarted.do(t, "GET", "/api/threads/w", keyAlice, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unregistered thread: %d", resp.StatusCode)
	}
	if resp, _ := restarted.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "w"}); resp.StatusCode != http.StatusCreated {
		t.Fatalf("re-register: %d", resp.StatusCode)
	}
	_, body := restarted.do(t, "GET", "/api/threads/w/state", keyAlice, nil)
	if !strings.Contains(string(body), `"status":"interrupted"`) {
		t.Fatalf("state %s", body)
	}
	resp, body := restarted.do(t, "POST", "/api/threads/w/approval", keyAlice, map[string]any{"approval_id": "approval-1", "approved": true, "stream": true})
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "SR:HCM1 is now 1.5 A.") || env.runner.writes() != 1 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}
