package server

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/native"
)

// A replay is one of the server's runs: the caller's reply names it, its
// record says how it ended, and it counts as the thread's run while it
// goes on. A server that died right after recording a replay whose fork
// had not begun runs it when it starts again; one that had begun is
// resumed, never begun twice.
func TestReplayIsARecordedRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "replay.db")
	first := sqliteAgentEnv(t, path)
	first.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "beam"})
	if resp, body := first.do(t, "POST", "/api/threads/beam/runs", keyAlice, map[string]any{"input": "What is the beam current?", "stream": true}); resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	for _, id := range []string{"rehearsal", "cut"} {
		if resp, body := first.do(t, "POST", "/api/threads/beam/fork", keyAlice, map[string]any{"id": id, "input": "What is the beam current now?"}); resp.StatusCode != http.StatusCreated {
			t.Fatalf("fork %s: %d %s", id, resp.StatusCode, body)
		}
	}
	if resp, body := first.do(t, "POST", "/api/threads/rehearsal/replay", keyAlice, map[string]any{"strem": true}); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "strem") {
		t.Fatalf("a replay with a field it does not take: %d %s", resp.StatusCode, body)
	}
	resp, body := first.do(t, "POST", "/api/threads/rehearsal/replay", keyAlice, nil)
	var rr struct {
		Run    string `json:"run_id"`
		Status string `json:"status"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &rr) != nil || rr.Run == "" || rr.Status != string(agent.RunAnswered) {
		t.Fatalf("replay: %d %s", resp.StatusCode, body)
	}
	resp, body = first.do(t, "GET", "/api/threads/rehearsal/runs/"+rr.Run, keyAlice, nil)
	var ri native.RunInfo
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &ri) != nil || !ri.Finished || ri.Status != agent.RunAnswered {
		t.Fatalf("the replay's run: %d %s", resp.StatusCode, body)
	}
	if resp, body := first.do(t, "GET", "/api/threads/rehearsal/runs", keyAlice, nil); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), rr.Run) {
		t.Fatalf("the thread's runs do not list the replay: %d %s", resp.StatusCode, body)
	}
	if resp, _ := first.do(t, "GET", "/api/threads/rehearsal/runs/"+rr.Run, keyBob, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("bob reads alice's replay: %d", resp.StatusCode)
	}

	// The crash: a replay of "cut" recorded, its fork not begun.
	cut := crashedRecord(t, first, "run-replay-cut", alice, "native", "cut", runInput{Kind: kindReplay}, "")
	first.http.Close()
	second := sqliteAgentEnv(t, path)
	started, err := second.srv.RecoverAllRuns(context.Background())
	if err != nil || len(started) != 1 {
		t.Fatalf("RecoverAllRuns: %v %v", started, err)
	}
	waitRuns(t, second)
	rec, err := second.srv.records.GetRun(context.Background(), cut.ID)
	for deadline := time.Now().Add(5 * time.Second); err == nil && !rec.Status.Terminal() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond) // the record is written just after the run's end is told
		rec, err = second.srv.records.GetRun(context.Background(), cut.ID)
	}
	if err != nil || rec.Status != runstore.Done {
		t.Fatalf("the recovered replay's record: %+v %v", rec, err)
	}
	st, status, err := second.srv.cfg.Runner.State(context.Background(), cut.Thread)
	if err != nil || status != agent.RunAnswered || st.Turn.Number != 1 || !strings.Contains(st.Messages[len(st.Messages)-2].Content, "beam current now?") {
		t.Fatalf("the fork after recovery: %v %v turn %d", status, err, st.Turn.Number)
	}
	// Recovered again (another restart): the fork has begun and ended, so
	// nothing runs twice.
	again := crashedRecord(t, second, "run-replay-again", alice, "native", "cut", runInput{Kind: kindReplay}, "")
	if started, err := second.srv.RecoverAllRuns(context.Background()); err != nil || len(started) != 0 {
		t.Fatalf("a replay of a fork that ran: started %v %v", started, err)
	}
	if st2, _, _ := second.srv.cfg.Runner.State(context.Background(), again.Thread); st2.Turn.Number != st.Turn.Number {
		t.Fatalf("the fork ran again: turn %d → %d", st.Turn.Number, st2.Turn.Number)
	}
}

// While a replay runs it is the thread's run and counts against the key's
// run limits: a second replay of the fork is refused (409), another run of
// the key past its limit too (429); its client leaving cancels it.
func TestReplayHoldsTheThreadAndTheKeysLimit(t *testing.T) {
	var hold atomic.Bool
	entered := make(chan struct{}, 4)
	read := capabilities.Define(capabilities.Definition{
		Name: "read_beam_current", Description: "Read the beam current of the storage ring", Provides: []string{"BEAM_CURRENT"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use for questions about the beam current.",
			Examples: []capabilities.ClassifierExample{{Query: "what is the beam current?", Result: true, Reason: "asks for the beam current"}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			if hold.Load() {
				entered <- struct{}{}
				<-ctx.Done()
				return capabilities.Output{}, ctx.Err()
			}
			return capabilities.Result("BEAM_CURRENT", 401.5, "beam current is 401.5 mA"), nil
		},
	})
	a, err := agent.New(agent.Config{Registry: newRegistry(t, read)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	env := newTestEnv(t, func(c *Config) { c.Runner, c.MaxConcurrentRuns = a, 1 })
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "beam"})
	if resp, body := env.do(t, "POST", "/api/threads/beam/runs", keyAlice, map[string]any{"input": "What is the beam current?", "stream": true}); resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if resp, body := env.do(t, "POST", "/api/threads/beam/fork", keyAlice, map[string]any{"id": "rehearsal", "input": "What is the beam current now?"}); resp.StatusCode != http.StatusCreated {
		t.Fatalf("fork: %d %s", resp.StatusCode, body)
	}
	hold.Store(true)
	ctx, leave := context.WithCancel(context.Background())
	defer leave()
	replayed := env.postUntil(ctx, "/api/threads/rehearsal/replay", keyAlice, map[string]any{})
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the replay never reached its read")
	}
	if resp, body := env.do(t, "POST", "/api/threads/rehearsal/replay", keyAlice, map[string]any{}); resp.StatusCode != http.StatusConflict {
		t.Fatalf("a second replay of the fork: %d %s", resp.StatusCode, body)
	}
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "other"})
	if resp, body := env.do(t, "POST", "/api/threads/other/runs", keyAlice, map[string]any{"input": "What is the beam current?"}); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a run past the key's limit beside the replay: %d %s", resp.StatusCode, body)
	}
	leave()
	if code := <-replayed; code != 0 {
		t.Fatalf("the replay answered %d after its client left", code)
	}
	waitNoRuns(t, env.srv, 5*time.Second)
}
