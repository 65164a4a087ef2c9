package server

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/demo/controlroom/plant"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/state"
)

// Time travel over the native API, on the offline control room with two
// plants (live and simulator) over SQLite: history, fork, replay, compare
// and targets, each thread the caller's own; a fork's replay writes the
// simulator only.

// timeTravelEnv serves the control room with its two targets; plants are
// read back to see which one was written.
func timeTravelEnv(t *testing.T) (*testEnv, plant.Targets) {
	t.Helper()
	return timeTravelEnvWith(t, nil)
}

// timeTravelEnvWith is timeTravelEnv with mod applied to the agent's config.
func timeTravelEnvWith(t *testing.T, mod func(*agent.Config)) (*testEnv, plant.Targets) {
	t.Helper()
	targets := plant.Targets{}
	for _, n := range []string{capabilities.TargetLive, capabilities.TargetSimulator} {
		p, err := plant.New(plant.Config{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		targets[n] = p
	}
	caps, err := plant.CapabilitiesOn(targets, capabilities.TargetLive)
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.New(sqlite.Config{Path: filepath.Join(t.TempDir(), "tt.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	cfg := agent.Config{Registry: newRegistry(t, caps...), Store: store,
		Options: state.Options{WritesEnabled: true, Target: capabilities.TargetLive},
		Targets: map[string]agent.TargetPolicy{
			capabilities.TargetLive:      {WritesEnabled: true},
			capabilities.TargetSimulator: {WritesEnabled: true, Simulated: true},
		}}
	if mod != nil {
		mod(&cfg)
	}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return newTestEnv(t, func(c *Config) { c.Runner = a }), targets
}

func q1(t *testing.T, p *plant.Plant) float64 {
	t.Helper()
	v, err := p.Setpoint("BTS:MAG:Q1:CURRENT")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// approveStream answers approval id on thread and returns the stream.
func approveOn(t *testing.T, env *testEnv, thread, id string) string {
	t.Helper()
	resp, body := env.do(t, "POST", "/api/threads/"+thread+"/approval", keyAlice, map[string]any{"approval_id": id, "approved": true, "stream": true})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("approval on %s: %d %s", thread, resp.StatusCode, body)
	}
	return string(body)
}

func TestTimeTravelAPI(t *testing.T) {
	env, plants := timeTravelEnv(t)
	live, sim := plants[capabilities.TargetLive], plants[capabilities.TargetSimulator]
	ap := askQ1(t, env, "orig", "105")
	if !strings.HasPrefix(ap.Summary, "on the live target: set BTS:MAG:Q1:CURRENT") {
		t.Fatalf("approval %q does not name the live target", ap.Summary)
	}
	if body := approveOn(t, env, "orig", ap.ID); !strings.Contains(body, `"status":"answered"`) {
		t.Fatalf("answer: %s", body)
	}
	if q1(t, live) != 105 || q1(t, sim) == 105 {
		t.Fatalf("live %g, simulator %g after the live turn", q1(t, live), q1(t, sim))
	}

	// History: the owner's only.
	resp, body := env.do(t, "GET", "/api/threads/orig/history", keyAlice, nil)
	var h struct {
		Thread  string         `json:"thread"`
		History []agent.Moment `json:"history"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &h) != nil || h.Thread != "orig" || len(h.History) == 0 {
		t.Fatalf("history: %d %s", resp.StatusCode, body)
	}
	end := h.History[len(h.History)-1]
	if end.Kind != agent.MomentEnded || end.Target != capabilities.TargetLive || end.Outcome != string(state.KindAnswer) {
		t.Fatalf("last moment %+v", end)
	}
	if resp, _ := env.do(t, "GET", "/api/threads/orig/history", keyBob, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("bob reads alice's history: %d", resp.StatusCode)
	}

	// Fork: bad requests are 400s naming what is wrong; another's thread is 404.
	for _, bad := range []struct {
		body  any
		param string
	}{
		{map[string]any{"checkpoint": "not-a-checkpoint"}, "checkpoint"},
		{map[string]any{"target": "moon"}, "target"},
		{map[string]any{"strange": 1}, "strange"},
	} {
		resp, body := env.do(t, "POST", "/api/threads/orig/fork", keyAlice, bad.body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), bad.param) {
			t.Errorf("fork %v: %d %s, want a 400 naming %s", bad.body, resp.StatusCode, body, bad.param)
		}
	}
	if resp, _ := env.do(t, "POST", "/api/threads/orig/fork", keyBob, map[string]any{}); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("bob forks alice's thread: %d", resp.StatusCode)
	}
	resp, body = env.do(t, "POST", "/api/threads/orig/fork", keyAlice, map[string]any{"id": "rehearsal", "checkpoint": end.Checkpoint,
		"input": "Set the BTS Q1 quadrupole current to 107 A"})
	var f forkResponse
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &f) != nil || f.Thread.ID != "rehearsal" || f.Target != capabilities.TargetSimulator || !f.Writes {
		t.Fatalf("fork: %d %s", resp.StatusCode, body)
	}
	if resp, _ := env.do(t, "POST", "/api/threads/orig/fork", keyAlice, map[string]any{"id": "rehearsal"}); resp.StatusCode != http.StatusConflict {
		t.Fatalf("a fork onto an existing thread: %d, want 409", resp.StatusCode)
	}
	if resp, _ := env.do(t, "GET", "/api/threads/rehearsal", keyAlice, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("the fork is not alice's thread: %d", resp.StatusCode)
	}
	if resp, _ := env.do(t, "GET", "/api/threads/rehearsal", keyBob, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("bob sees alice's fork: %d", resp.StatusCode)
	}

	// Replay: asks for the simulator; the answer writes the simulator.
	resp, body = env.do(t, "POST", "/api/threads/rehearsal/replay", keyAlice, map[string]any{})
	var rr replayResponse
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &rr) != nil || rr.Status != string(agent.RunInterrupted) || rr.Approval == nil {
		t.Fatalf("replay: %d %s", resp.StatusCode, body)
	}
	if !strings.HasPrefix(rr.Approval.Summary, "on the simulator target:") {
		t.Fatalf("replay asked %q", rr.Approval.Summary)
	}
	if body := approveOn(t, env, "rehearsal", rr.Approval.ID); !strings.Contains(body, `"target":"simulator"`) {
		t.Fatalf("the replay's outcome does not name the simulator: %s", body)
	}
	if q1(t, sim) != 107 || q1(t, live) != 105 {
		t.Fatalf("simulator %g, live %g after the replay: want 107 and 105", q1(t, sim), q1(t, live))
	}
	if resp, _ := env.do(t, "POST", "/api/threads/orig/replay", keyAlice, map[string]any{}); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("replay of a thread that is no fork: %d, want 400", resp.StatusCode)
	}

	// Compare: the two side by side; another's thread is not found.
	resp, body = env.do(t, "GET", "/api/compare?left=orig&right=rehearsal", keyAlice, nil)
	var c agent.Comparison
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &c) != nil || len(c.Pairs) != 1 || c.Pairs[0].Left == nil {
		t.Fatalf("compare: %d %s", resp.StatusCode, body)
	}
	for _, d := range []string{"input", "target", "writes"} {
		if !slices.Contains(c.Pairs[0].Differences, d) {
			t.Errorf("differences %v lack %s", c.Pairs[0].Differences, d)
		}
	}
	if c.Pairs[0].Right.Target != capabilities.TargetSimulator {
		t.Fatalf("compare %s", body)
	}
	if resp, _ := env.do(t, "GET", "/api/compare?left=orig&right=rehearsal", keyBob, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("bob compares alice's threads: %d", resp.StatusCode)
	}
	if resp, body := env.do(t, "GET", "/api/compare?left=orig", keyAlice, nil); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "right") {
		t.Fatalf("compare without right: %d %s", resp.StatusCode, body)
	}

	// Targets: the posture for the page's chip.
	resp, body = env.do(t, "GET", "/api/targets", keyAlice, nil)
	var ts struct {
		Targets []agent.TargetInfo `json:"targets"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &ts) != nil || len(ts.Targets) != 2 || !ts.Targets[0].Default || !ts.Targets[1].Rehearsal {
		t.Fatalf("targets: %d %s", resp.StatusCode, body)
	}

	// A browser page of another origin cannot fork.
	resp, _ = env.send(t, "POST", "/api/threads/orig/fork", "", keyAlice, map[string]any{}, "Origin", "https://evil.example")
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a foreign origin forks: %d", resp.StatusCode)
	}
}

// TestWebPageTimeTravel drives the built-in page in headless Chromium
// (testdata/js/timetravel.test.mjs) over the control room with two plants:
// what the page showed is what reached each plant. CAPGRAPH_SCREENSHOT_DIR
// keeps the screenshots (docs/img/web-timeline.png, web-compare.png).
func TestWebPageTimeTravel(t *testing.T) {
	dir := filepath.Join("testdata", "js")
	node, chromium := chromiumOrSkip(t, dir)
	env, plants := timeTravelEnvWith(t, func(c *agent.Config) {
		c.KeepIntermediate = -1
		c.Targets[capabilities.TargetSimulator] = agent.TargetPolicy{WritesEnabled: true, Simulated: true, Approval: agent.TargetApprovalNone}
	})
	shots := os.Getenv("CAPGRAPH_SCREENSHOT_DIR")
	if shots == "" {
		shots = t.TempDir()
	}
	cmd := exec.Command(node, "--test", "--test-reporter=spec", "--test-concurrency=1", "timetravel.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CAPGRAPH_URL="+env.http.URL, "CAPGRAPH_KEY="+keyAlice, "CHROMIUM="+chromium, "SCREENSHOT_DIR="+shots)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("web page test failed: %v (screenshots in %s)\n%s", err, shots, out)
	}
	t.Logf("%s", out)
	if live, sim := q1(t, plants[capabilities.TargetLive]), q1(t, plants[capabilities.TargetSimulator]); live != 105 || sim != 103 {
		t.Errorf("live Q1 %g, simulator Q1 %g; want 105 and 103 (the dry run after the fork)", live, sim)
	}
}

// A chat client (Chat Completions, as LibreChat sends it) reads the target
// of a write in the approval it is asked and in the outcome line of the
// answer.
func TestChatNamesTheTarget(t *testing.T) {
	env, plants := timeTravelEnv(t)
	q := "Set the BTS Q1 quadrupole current to 105 A"
	ask := sendLibreChat(t, env, keyAlice, user(q))
	tok, ok := findApprovalToken(ask)
	if !ok || !strings.Contains(ask, "on the live target: set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A") {
		t.Fatalf("approval request %q does not name the live target", ask)
	}
	done := sendLibreChat(t, env, keyAlice, user(q), assistant(ask), user("yes "+tok))
	if !strings.Contains(done, "**confirmed** — on the live target: set BTS:MAG:Q1:CURRENT 92.00 → 105.00 A (readback 105.00 A).") {
		t.Fatalf("answer %q lacks the outcome line naming the target", done)
	}
	if q1(t, plants[capabilities.TargetLive]) != 105 || q1(t, plants[capabilities.TargetSimulator]) == 105 {
		t.Fatal("the chat's write went to the wrong plant")
	}
}
