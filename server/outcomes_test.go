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
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/internal/outcometest"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/server/internal/agui"
	"github.com/capgraph/capgraph/server/internal/approvaltoken"
	"github.com/capgraph/capgraph/server/internal/responses"
	"github.com/capgraph/capgraph/state"
)

// outcomeEnv serves a real offline agent over SQLite whose one
// side-effecting capability ends each way a change can end
// (internal/outcometest): Q1 confirms, Q2 is interlocked (failed), Q3
// drifts (mismatch), Q4 drops the connection (unconfirmed), and a value
// above 120 A is refused.
type outcomeEnv struct {
	*testEnv
	agent *agent.Agent
	plant *outcometest.Plant
}

func newOutcomeEnv(t *testing.T, mod func(*Config)) *outcomeEnv {
	t.Helper()
	return newOutcomeEnvWith(t, llm.None, mod)
}

// newOutcomeEnvWith is newOutcomeEnv whose agent asks models (e.g.
// outcometest.Planner, which turns a read into a write nobody asked for).
func newOutcomeEnvWith(t *testing.T, models llm.Models, mod func(*Config)) *outcomeEnv {
	t.Helper()
	store, err := sqlite.New(sqlite.Config{Path: filepath.Join(t.TempDir(), "capgraph.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	p := outcometest.New()
	caps, err := p.Capabilities()
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Registry: newRegistry(t, caps...), Store: store, Models: models,
		Options: state.Options{WritesEnabled: true, ApprovalMode: state.ApprovalModeSelective}})
	if err != nil {
		t.Fatal(err)
	}
	env := newTestEnv(t, func(c *Config) {
		c.Runner = a
		if mod != nil {
			mod(c)
		}
	})
	return &outcomeEnv{testEnv: env, agent: a, plant: p}
}

// chatApproved asks for a change over Chat Completions, checks that the
// approval request shows the value before, approves it with its token and
// returns the answer.
func (e *outcomeEnv) chatApproved(t *testing.T, ask string, stream bool) string {
	t.Helper()
	resp, body := e.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user(ask)))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", ask, resp.StatusCode, body)
	}
	question := chatContent(t, body)
	tok, ok := approvaltoken.Find(question)
	if !ok {
		t.Fatalf("%s: no approval request: %q", ask, question)
	}
	if !strings.Contains(question, ": now 92.00 A → 105.00 A — quadrupole ") {
		t.Errorf("%s: the approval request does not show the value before and what the target is: %q", ask, question)
	}
	hist := chatBody("capgraph", stream, user(ask), assistant(question), user("yes "+tok))
	resp, body = e.do(t, "POST", "/v1/chat/completions", keyAlice, hist)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s, approved: %d %s", ask, resp.StatusCode, body)
	}
	if stream {
		return parseLikeOpenWebUI(t, string(body)).Content
	}
	return chatContent(t, body)
}

// Every outcome of a change is said in the Chat Completions answer, in
// words an operator acts on, streamed or not.
func TestChatCompletionsSayEveryOutcome(t *testing.T) {
	env := newOutcomeEnv(t, nil)
	for _, tc := range []struct {
		ask, want string
		stream    bool
	}{
		{"Set the Q1 current to 105 A", "**confirmed** — set BTS:MAG:Q1:CURRENT 92.00 → 105.00 A (readback 105.00 A).", false},
		{"Set the Q2 current to 105 A", "**failed** — set BTS:MAG:Q2:CURRENT 92.00 → 105.00 A was not applied: the Q2 interlock is open.", true},
		{"Set the Q3 current to 105 A", "**MISMATCH** — set BTS:MAG:Q3:CURRENT 92.00 → 105.00 A was carried out, but the readback differs from what was asked (readback 97.50 A). It was not retried: check BTS:MAG:Q3:CURRENT on the machine.", false},
		{"Set the Q4 current to 105 A", "**UNCONFIRMED** — set BTS:MAG:Q4:CURRENT 92.00 → 105.00 A may or may not have been applied (the connection to the Q4 supply broke after the request was sent). It was not retried: check BTS:MAG:Q4:CURRENT on the machine before asking for the change again.", true},
	} {
		got := env.chatApproved(t, tc.ask, tc.stream)
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s (stream %v): the answer does not say\n  %s\n%s", tc.ask, tc.stream, tc.want, got)
		}
	}
	// Refused by the application's limits: nobody is asked, nothing is written.
	resp, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user("Set the Q1 current to 150 A")))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	got := chatContent(t, body)
	if _, asked := approvaltoken.Find(got); asked || !strings.Contains(got, "**refused** — set BTS:MAG:Q1:CURRENT to 150.00 A was not carried out: Step 1 was refused and not carried out: 150 A is above the Q1 supply's limit of 120 A.") {
		t.Errorf("the refused change: %s", got)
	}
	if w := env.plant.Writes(); !slices.Equal(w, []string{"Q1=105", "Q3=105", "Q4=105"}) {
		t.Errorf("writes %v", w)
	}
}

// A model that plans a write for a question (outcometest.Planner): the plan
// is refused at planning, nobody is asked to approve it, nothing is
// written, and the answer says so with the outcome unrequested.
func TestChatCompletionsSayUnrequested(t *testing.T) {
	env := newOutcomeEnvWith(t, outcometest.Planner(), nil)
	resp, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user(outcometest.Read)))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	got := chatContent(t, body)
	if _, asked := approvaltoken.Find(got); asked || !strings.Contains(got, "**unrequested** — set BTS:MAG:Q2:CURRENT to 105.00 A was not carried out: the request did not ask for this change.") {
		t.Errorf("the unrequested change: %s", got)
	}
	// The same planner plans what a change question asks for: written after the yes.
	if got := env.chatApproved(t, "Set the Q1 current to 105 A", false); !strings.Contains(got, "**confirmed** — set BTS:MAG:Q1:CURRENT 92.00 → 105.00 A") {
		t.Errorf("the planned change: %s", got)
	}
	if w := env.plant.Writes(); !slices.Equal(w, []string{"Q1=105"}) {
		t.Errorf("writes %v", w)
	}
}

// The Responses API ends its answer with the outcome too.
func TestResponsesSayTheOutcome(t *testing.T) {
	env := newOutcomeEnv(t, nil)
	resp, body := env.do(t, "POST", "/v1/responses", keyAlice, map[string]any{"model": "capgraph", "input": "Set the Q3 current to 105 A"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	question := outputText(t, body)
	if !strings.Contains(question, "BTS:MAG:Q3:CURRENT: now 92.00 A → 105.00 A") {
		t.Fatalf("the approval request does not show the value before: %q", question)
	}
	id := responseID(t, body)
	resp, body = env.do(t, "POST", "/v1/responses", keyAlice, map[string]any{"model": "capgraph", "input": "yes", "previous_response_id": id})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if got := outputText(t, body); !strings.Contains(got, "**MISMATCH** — set BTS:MAG:Q3:CURRENT 92.00 → 105.00 A was carried out, but the readback differs") {
		t.Fatalf("answer %q", got)
	}
}

func outputText(t *testing.T, body []byte) string {
	t.Helper()
	var r responses.Object
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	var b strings.Builder
	for _, it := range r.Output {
		for _, c := range it.Content {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func responseID(t *testing.T, body []byte) string {
	t.Helper()
	var r responses.Object
	if err := json.Unmarshal(body, &r); err != nil || r.ID == "" {
		t.Fatalf("no response id (%v): %s", err, body)
	}
	return r.ID
}

// An approval given against a machine state that has moved since is asked
// again, and the new question says so and shows the value now.
func TestChatCompletionsAskAgainWhenTheMachineMoved(t *testing.T) {
	env := newOutcomeEnv(t, nil)
	ask := "Set the Q5 current to 105 A"
	_, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user(ask)))
	first := chatContent(t, body)
	tok, ok := approvaltoken.Find(first)
	if !ok || !strings.Contains(first, "BTS:MAG:Q5:CURRENT: now 92.00 A → 105.00 A") {
		t.Fatalf("first question: %q", first)
	}
	hist := []map[string]any{user(ask), assistant(first), user("yes " + tok)}
	_, body = env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, hist...))
	again := chatContent(t, body)
	tok2, ok := approvaltoken.Find(again)
	if !ok || tok2 == tok || !strings.Contains(again, "Asked again: BTS:MAG:Q5:CURRENT moved from 92 A to 94 A since the approval.") ||
		!strings.Contains(again, "BTS:MAG:Q5:CURRENT: now 94.00 A → 105.00 A") {
		t.Fatalf("the question asked again: %q", again)
	}
	if w := env.plant.Writes(); len(w) != 0 {
		t.Fatalf("written before the second approval: %v", w)
	}
	hist = append(hist, assistant(again), user("yes "+tok2))
	_, body = env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, hist...))
	if got := chatContent(t, body); !strings.Contains(got, "**confirmed** — set BTS:MAG:Q5:CURRENT 94.00 → 105.00 A (readback 105.00 A).") {
		t.Fatalf("answer %q", got)
	}
}

// TestWebPageOutcomes drives the built-in page in headless Chromium
// (testdata/js/outcomes.test.mjs) over the outcome plant: every outcome a
// change can have is made to happen and its badge read from the page.
// CAPGRAPH_SCREENSHOT_DIR keeps the screenshots.
func TestWebPageOutcomes(t *testing.T) {
	dir := filepath.Join("testdata", "js")
	node, chromium := chromiumOrSkip(t, dir)
	// The planner plans each change as asked, and a write for the read.
	env := newOutcomeEnvWith(t, outcometest.Planner(), nil)
	shots := os.Getenv("CAPGRAPH_SCREENSHOT_DIR")
	if shots == "" {
		shots = t.TempDir()
	}
	cmd := exec.Command(node, "--test", "--test-reporter=spec", "--test-concurrency=1", "outcomes.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CAPGRAPH_URL="+env.http.URL, "CAPGRAPH_KEY="+keyAlice, "CHROMIUM="+chromium, "SCREENSHOT_DIR="+shots)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("web page test failed: %v (screenshots in %s)\n%s", err, shots, out)
	}
	t.Logf("%s", out)
	// What the page showed is what reached the machine.
	if w := env.plant.Writes(); !slices.Equal(w, []string{"Q1=105", "Q3=105", "Q4=105", "Q5=105"}) {
		t.Errorf("writes %v", w)
	}
}

// AG-UI clients and native followers get each outcome as an event: the
// outcome, the change and the values, never who ran it or the approval id.
func TestOutcomeEvents(t *testing.T) {
	env := newOutcomeEnv(t, nil)
	_, body := env.do(t, "POST", "/agui", keyAlice, map[string]any{"threadId": "ag", "runId": "r1",
		"messages": []map[string]any{{"id": "u1", "role": "user", "content": "Set the Q1 current to 150 A"}}})
	var outcome map[string]any
	for _, line := range strings.Split(string(body), "\n") {
		var ev agui.Event
		if data, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(data), &ev) == nil && ev.Name == "outcome" {
			outcome, _ = ev.Value.(map[string]any)
		}
	}
	if outcome == nil || outcome["outcome"] != "refused" || outcome["event"] != "refused" || outcome["reason"] != "limits" || outcome["capability"] != outcometest.Capability {
		t.Fatalf("no CUSTOM outcome event: %s", body)
	}
	for _, k := range []string{"principal", "tenant", "approval_id", "idempotency_key", "result", "turn_id"} {
		if _, ok := outcome[k]; ok {
			t.Errorf("the outcome event shows %s: %v", k, outcome)
		}
	}
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "nat"})
	_, body = env.do(t, "POST", "/api/threads/nat/runs", keyAlice, map[string]any{"input": "Set the Q2 current to 150 A", "stream": true})
	if !strings.Contains(string(body), "event: audit\n") || !strings.Contains(string(body), `"outcome":"refused"`) || strings.Contains(string(body), `"principal"`) {
		t.Fatalf("native stream: %s", body)
	}
}

// GET /api/threads/{id}/outcomes lists what became of the thread's changes,
// for its owner only, by turn on request; a bad turn is a 400 naming it.
func TestThreadOutcomesAfterwards(t *testing.T) {
	env := newOutcomeEnv(t, nil)
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "plant"})
	for _, ask := range []string{"Set the Q1 current to 150 A", "Set the Q2 current to 150 A"} {
		// Streamed: the answer ends with the run.
		if resp, body := env.do(t, "POST", "/api/threads/plant/runs", keyAlice, map[string]any{"input": ask, "stream": true}); resp.StatusCode >= 300 {
			t.Fatalf("%s: %d %s", ask, resp.StatusCode, body)
		}
	}
	var got struct {
		ThreadID string              `json:"thread_id"`
		Outcomes []agent.AuditRecord `json:"outcomes"`
	}
	resp, body := env.do(t, "GET", "/api/threads/plant/outcomes", keyAlice, nil)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &got) != nil || got.ThreadID != "plant" || len(got.Outcomes) != 2 ||
		got.Outcomes[0].Turn != 1 || got.Outcomes[1].Turn != 2 || got.Outcomes[1].Outcome != capabilities.OutcomeRefused ||
		!strings.Contains(got.Outcomes[1].Message, "Q2 supply's limit") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if strings.Contains(string(body), `"principal"`) || strings.Contains(string(body), `"idempotency_key"`) {
		t.Errorf("the outcomes show who ran them or their keys: %s", body)
	}
	resp, body = env.do(t, "GET", "/api/threads/plant/outcomes?turn=2", keyAlice, nil)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got.Outcomes) != 1 || got.Outcomes[0].Turn != 2 {
		t.Fatalf("turn 2: %d %s", resp.StatusCode, body)
	}
	if resp, body := env.do(t, "GET", "/api/threads/plant/outcomes?turn=x", keyAlice, nil); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"turn"`) {
		t.Errorf("a bad turn: %d %s", resp.StatusCode, body)
	}
	if resp, _ := env.do(t, "GET", "/api/threads/plant/outcomes", keyBob, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another key reads the outcomes: %d", resp.StatusCode)
	}
}
