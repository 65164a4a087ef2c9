package controlroom_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/demo/controlroom/plant"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/server"
	"github.com/capgraph/capgraph/state"
)

// Time travel over the server's native API, on the offline control room
// with two plants (live and simulator) over SQLite: history, fork, replay,
// compare and targets, each thread the caller's own; a fork's replay writes
// the simulator only. (Here, not in server/: the library's tests import no
// application, internal/layers.)

// alice and bob are two principals of one tenant: each thread is its
// owner's alone.
const (
	aliceKey = "sk-alice-0123456789"
	bobKey   = "sk-bob-0123456789"
	// readerKey may only find and read channels.
	readerKey = "sk-reader-0123456789"
)

// timeTravelSite is the server over the control room with its two
// targets; its plants are read back to see which one was written.
type timeTravelSite struct {
	t      *testing.T
	url    string
	plants plant.Targets
}

func newTimeTravelSite(t *testing.T) *timeTravelSite {
	t.Helper()
	return newTimeTravelSiteWith(t, nil)
}

// newTimeTravelSiteWith is newTimeTravelSite with mod applied to the
// agent's config.
func newTimeTravelSiteWith(t *testing.T, mod func(*agent.Config)) *timeTravelSite {
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
	reg := capabilities.NewRegistry()
	if err := reg.Register(caps...); err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.New(sqlite.Config{Path: filepath.Join(t.TempDir(), "tt.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	cfg := agent.Config{Registry: reg, Store: store,
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
	srv, err := server.New(server.Config{Runner: a, Heartbeat: time.Hour, Auth: server.Auth{Principals: []server.Principal{
		{Name: "alice", KeySHA256: server.HashKey(aliceKey), Tenant: "lab"},
		{Name: "bob", KeySHA256: server.HashKey(bobKey), Tenant: "lab"},
		{Name: "reader", KeySHA256: server.HashKey(readerKey), Tenant: "lab", AllowedCapabilities: []string{"channel_finding", "channel_read"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &timeTravelSite{t: t, url: hs.URL, plants: targets}
}

// do sends a request with key ("" for none), a JSON body (nil for none)
// and header pairs; it returns the status and the body.
func (s *timeTravelSite) do(method, path, key string, body any, hdr ...string) (int, []byte) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		s.t.Fatal(err)
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
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// q1On is Q1's setpoint on target's plant.
func (s *timeTravelSite) q1On(target string) float64 {
	s.t.Helper()
	v, err := s.plants[target].Setpoint(q1)
	if err != nil {
		s.t.Fatal(err)
	}
	return v
}

// askQ1 starts "Set the Q1 current to <to> A" on alice's thread and returns
// the approval the run stopped at.
func (s *timeTravelSite) askQ1(thread, to string) state.Approval {
	s.t.Helper()
	s.do("POST", "/api/threads", aliceKey, map[string]any{"id": thread})
	status, body := s.do("POST", "/api/threads/"+thread+"/runs", aliceKey, map[string]any{"input": "Set the Q1 current to " + to + " A", "stream": true})
	if status != http.StatusOK {
		s.t.Fatalf("%d %s", status, body)
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		var ev agent.Event
		if ok && json.Unmarshal([]byte(data), &ev) == nil && ev.Type == agent.EventApprovalRequired && ev.Approval != nil {
			return *ev.Approval
		}
	}
	s.t.Fatalf("no approval asked: %s", body)
	return state.Approval{}
}

// approveOn answers approval id on alice's thread and returns the stream.
func (s *timeTravelSite) approveOn(thread, id string) string {
	s.t.Helper()
	status, body := s.do("POST", "/api/threads/"+thread+"/approval", aliceKey, map[string]any{"approval_id": id, "approved": true, "stream": true})
	if status != http.StatusOK {
		s.t.Fatalf("approval on %s: %d %s", thread, status, body)
	}
	return string(body)
}

// libreChat posts messages as LibreChat sends them (streaming, no chat id:
// the transcript says which thread) and returns the answer's text; every
// frame is JSON and the stream ends with [DONE].
func (s *timeTravelSite) libreChat(key string, msgs ...map[string]string) string {
	s.t.Helper()
	status, body := s.do("POST", "/v1/chat/completions", key, map[string]any{"model": "capgraph", "stream": true, "user": "6650f0c0c0ffee",
		"temperature": 1, "top_p": 1, "presence_penalty": 0, "frequency_penalty": 0, "messages": msgs})
	if status != http.StatusOK {
		s.t.Fatalf("chat completions: %d %s", status, body)
	}
	var content strings.Builder
	done := false
	for _, line := range strings.Split(string(body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct{ Content *string } `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			s.t.Fatalf("frame is not JSON: %s", data)
		}
		for _, c := range chunk.Choices {
			if c.Delta.Content != nil {
				content.WriteString(*c.Delta.Content)
			}
		}
	}
	if !done {
		s.t.Fatalf("the stream did not end with [DONE]: %s", body)
	}
	return content.String()
}

// chatUser and chatAssistant are the messages of a chat's history.
func chatUser(text string) map[string]string {
	return map[string]string{"role": "user", "content": text}
}

func chatAssistant(text string) map[string]string {
	return map[string]string{"role": "assistant", "content": text}
}

// forkReply and replayReply are the parts of the server's fork and replay
// answers these tests read.
type forkReply struct {
	Thread struct {
		ID string `json:"id"`
	} `json:"thread"`
	Target string `json:"target"`
	Writes bool   `json:"writes"`
}

type replayReply struct {
	Status   string          `json:"status"`
	Approval *state.Approval `json:"approval"`
}

func TestTimeTravelAPI(t *testing.T) {
	s := newTimeTravelSite(t)
	live, sim := capabilities.TargetLive, capabilities.TargetSimulator
	ap := s.askQ1("orig", "105")
	if !strings.HasPrefix(ap.Summary, "on the live target: set BTS:MAG:Q1:CURRENT") {
		t.Fatalf("approval %q does not name the live target", ap.Summary)
	}
	if body := s.approveOn("orig", ap.ID); !strings.Contains(body, `"status":"answered"`) {
		t.Fatalf("answer: %s", body)
	}
	if s.q1On(live) != 105 || s.q1On(sim) == 105 {
		t.Fatalf("live %g, simulator %g after the live turn", s.q1On(live), s.q1On(sim))
	}

	// History: the owner's only.
	status, body := s.do("GET", "/api/threads/orig/history", aliceKey, nil)
	var h struct {
		Thread  string         `json:"thread"`
		History []agent.Moment `json:"history"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &h) != nil || h.Thread != "orig" || len(h.History) == 0 {
		t.Fatalf("history: %d %s", status, body)
	}
	end := h.History[len(h.History)-1]
	if end.Kind != agent.MomentEnded || end.Target != capabilities.TargetLive || end.Outcome != string(state.KindAnswer) {
		t.Fatalf("last moment %+v", end)
	}
	if status, _ := s.do("GET", "/api/threads/orig/history", bobKey, nil); status != http.StatusNotFound {
		t.Fatalf("bob reads alice's history: %d", status)
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
		status, body := s.do("POST", "/api/threads/orig/fork", aliceKey, bad.body)
		if status != http.StatusBadRequest || !strings.Contains(string(body), bad.param) {
			t.Errorf("fork %v: %d %s, want a 400 naming %s", bad.body, status, body, bad.param)
		}
	}
	if status, _ := s.do("POST", "/api/threads/orig/fork", bobKey, map[string]any{}); status != http.StatusNotFound {
		t.Fatalf("bob forks alice's thread: %d", status)
	}
	status, body = s.do("POST", "/api/threads/orig/fork", aliceKey, map[string]any{"id": "rehearsal", "checkpoint": end.Checkpoint,
		"input": "Set the BTS Q1 quadrupole current to 107 A"})
	var f forkReply
	if status != http.StatusCreated || json.Unmarshal(body, &f) != nil || f.Thread.ID != "rehearsal" || f.Target != capabilities.TargetSimulator || !f.Writes {
		t.Fatalf("fork: %d %s", status, body)
	}
	if status, _ := s.do("POST", "/api/threads/orig/fork", aliceKey, map[string]any{"id": "rehearsal"}); status != http.StatusConflict {
		t.Fatalf("a fork onto an existing thread: %d, want 409", status)
	}
	if status, _ := s.do("GET", "/api/threads/rehearsal", aliceKey, nil); status != http.StatusOK {
		t.Fatalf("the fork is not alice's thread: %d", status)
	}
	if status, _ := s.do("GET", "/api/threads/rehearsal", bobKey, nil); status != http.StatusNotFound {
		t.Fatalf("bob sees alice's fork: %d", status)
	}

	// Replay: asks for the simulator; the answer writes the simulator.
	status, body = s.do("POST", "/api/threads/rehearsal/replay", aliceKey, map[string]any{})
	var rr replayReply
	if status != http.StatusOK || json.Unmarshal(body, &rr) != nil || rr.Status != string(agent.RunInterrupted) || rr.Approval == nil {
		t.Fatalf("replay: %d %s", status, body)
	}
	if !strings.HasPrefix(rr.Approval.Summary, "on the simulator target:") {
		t.Fatalf("replay asked %q", rr.Approval.Summary)
	}
	if body := s.approveOn("rehearsal", rr.Approval.ID); !strings.Contains(body, `"target":"simulator"`) {
		t.Fatalf("the replay's outcome does not name the simulator: %s", body)
	}
	if s.q1On(sim) != 107 || s.q1On(live) != 105 {
		t.Fatalf("simulator %g, live %g after the replay: want 107 and 105", s.q1On(sim), s.q1On(live))
	}
	if status, _ := s.do("POST", "/api/threads/orig/replay", aliceKey, map[string]any{}); status != http.StatusBadRequest {
		t.Fatalf("replay of a thread that is no fork: %d, want 400", status)
	}

	// Compare: the two side by side; another's thread is not found.
	status, body = s.do("GET", "/api/compare?left=orig&right=rehearsal", aliceKey, nil)
	var c agent.Comparison
	if status != http.StatusOK || json.Unmarshal(body, &c) != nil || len(c.Pairs) != 1 || c.Pairs[0].Left == nil {
		t.Fatalf("compare: %d %s", status, body)
	}
	for _, d := range []string{"input", "target", "writes"} {
		if !slices.Contains(c.Pairs[0].Differences, d) {
			t.Errorf("differences %v lack %s", c.Pairs[0].Differences, d)
		}
	}
	if c.Pairs[0].Right.Target != capabilities.TargetSimulator {
		t.Fatalf("compare %s", body)
	}
	if status, _ := s.do("GET", "/api/compare?left=orig&right=rehearsal", bobKey, nil); status != http.StatusNotFound {
		t.Fatalf("bob compares alice's threads: %d", status)
	}
	if status, body := s.do("GET", "/api/compare?left=orig", aliceKey, nil); status != http.StatusBadRequest || !strings.Contains(string(body), "right") {
		t.Fatalf("compare without right: %d %s", status, body)
	}

	// Targets: the posture for the page's chip.
	status, body = s.do("GET", "/api/targets", aliceKey, nil)
	var ts struct {
		Targets []agent.TargetInfo `json:"targets"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &ts) != nil || len(ts.Targets) != 2 || !ts.Targets[0].Default || !ts.Targets[1].Rehearsal {
		t.Fatalf("targets: %d %s", status, body)
	}

	// A browser page of another origin cannot fork.
	status, _ = s.do("POST", "/api/threads/orig/fork", aliceKey, map[string]any{}, "Origin", "https://evil.example")
	if status != http.StatusForbidden {
		t.Fatalf("a foreign origin forks: %d", status)
	}
}

// TestWebPageTimeTravel drives the built-in page in headless Chromium
// (server/testdata/js/timetravel.test.mjs) over the control room with two plants:
// what the page showed is what reached each plant. CAPGRAPH_SCREENSHOT_DIR
// keeps the screenshots (docs/img/web-timeline.png, web-compare.png).
func TestWebPageTimeTravel(t *testing.T) {
	node, chromium, dir := browserOrSkip(t)
	s := newTimeTravelSiteWith(t, func(c *agent.Config) {
		c.KeepIntermediate = -1
		c.Targets[capabilities.TargetSimulator] = agent.TargetPolicy{WritesEnabled: true, Simulated: true, Approval: agent.TargetApprovalNone}
	})
	shots := os.Getenv("CAPGRAPH_SCREENSHOT_DIR")
	if shots == "" {
		shots = t.TempDir()
	}
	cmd := exec.Command(node, "--test", "--test-reporter=spec", "--test-concurrency=1", "timetravel.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CAPGRAPH_URL="+s.url, "CAPGRAPH_KEY="+aliceKey, "CHROMIUM="+chromium, "SCREENSHOT_DIR="+shots)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("web page test failed: %v (screenshots in %s)\n%s", err, shots, out)
	}
	t.Logf("%s", out)
	if live, sim := s.q1On(capabilities.TargetLive), s.q1On(capabilities.TargetSimulator); live != 105 || sim != 103 {
		t.Errorf("live Q1 %g, simulator Q1 %g; want 105 and 103 (the dry run after the fork)", live, sim)
	}
}

// A chat client (Chat Completions, as LibreChat sends it) reads the target
// of a write in the approval it is asked and in the outcome line of the
// answer.
func TestChatNamesTheTarget(t *testing.T) {
	s := newTimeTravelSite(t)
	q := "Set the BTS Q1 quadrupole current to 105 A"
	ask := s.libreChat(aliceKey, chatUser(q))
	tok := tokenPattern.FindString(ask)
	if tok == "" || !strings.Contains(ask, "on the live target: set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A") {
		t.Fatalf("approval request %q does not name the live target", ask)
	}
	done := s.libreChat(aliceKey, chatUser(q), chatAssistant(ask), chatUser("yes "+tok))
	if !strings.Contains(done, "**confirmed** — on the live target: set BTS:MAG:Q1:CURRENT 92.00 → 105.00 A (readback 105.00 A).") {
		t.Fatalf("answer %q lacks the outcome line naming the target", done)
	}
	if s.q1On(capabilities.TargetLive) != 105 || s.q1On(capabilities.TargetSimulator) == 105 {
		t.Fatal("the chat's write went to the wrong plant")
	}
}

// A key that may only read cannot write by way of a rehearsal: its fork of
// a change request, replayed, is refused the write as the request was —
// no approval asked, the simulator untouched.
func TestReplayStaysWithinTheKeysCapabilities(t *testing.T) {
	s := newTimeTravelSite(t)
	sim := s.q1On(capabilities.TargetSimulator)
	ask := "Set the BTS Q1 quadrupole current to 107 A"
	s.do("POST", "/api/threads", readerKey, map[string]any{"id": "mine"})
	if status, body := s.do("POST", "/api/threads/mine/runs", readerKey, map[string]any{"input": ask, "stream": true}); status != http.StatusOK ||
		!strings.Contains(string(body), "not allowed") || strings.Contains(string(body), "approval_required") {
		t.Fatalf("the reader's change request: %d %s", status, body)
	}
	if status, body := s.do("POST", "/api/threads/mine/fork", readerKey, map[string]any{"id": "rehearsal", "input": ask}); status != http.StatusCreated {
		t.Fatalf("fork: %d %s", status, body)
	}
	status, body := s.do("POST", "/api/threads/rehearsal/replay", readerKey, map[string]any{})
	var rr replayReply
	if status != http.StatusOK || json.Unmarshal(body, &rr) != nil || rr.Approval != nil || rr.Status != string(agent.RunAnswered) {
		t.Fatalf("the reader's replay: %d %s", status, body)
	}
	if got := s.q1On(capabilities.TargetSimulator); got != sim {
		t.Fatalf("the simulator's Q1 went from %g to %g", sim, got)
	}
}
