package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

// newFailingReadEnv serves a real agent (offline) whose beam current read
// times out once (a retry) and is then denied (CRITICAL, with a
// suggestion): the turn ends in an error report.
func newFailingReadEnv(t *testing.T) *testEnv {
	t.Helper()
	read := capabilities.Define(capabilities.Definition{
		Name: "read_beam_current", Description: "Read the beam current of the storage ring",
		Provides: []string{"BEAM_CURRENT"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use for questions about the beam current.",
			Examples: []capabilities.ClassifierExample{{Query: "what is the beam current?", Result: true, Reason: "asks for the beam current"}}},
		Retry: capabilities.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond, Jitter: capabilities.JitterNone},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			if st.Attempt == 1 {
				return capabilities.Output{}, capabilities.NewError(capabilities.Retriable, capabilities.KindTimeout, "the DCCT did not answer in time", nil)
			}
			e := capabilities.NewError(capabilities.Critical, capabilities.KindAuth, "read access to SR:DCCT:CURRENT was denied", nil)
			e.Metadata = map[string]any{capabilities.MetaSuggestions: "ask an operator for read access"}
			return capabilities.Output{}, e
		},
	})
	a, err := agent.New(agent.Config{Registry: newRegistry(t, read)})
	if err != nil {
		t.Fatal(err)
	}
	return newTestEnv(t, func(c *Config) { c.Runner = a })
}

const beamQuestion = "What is the beam current of the storage ring?"

// The structured error report and the retried step reach every frontend:
// the native API's message event carries the report as fields, AG-UI sends
// it as a custom event beside the message, Chat Completions keeps the
// Markdown; retries name the step and capability everywhere.
func TestErrorReportAndRetriesReachEveryFrontend(t *testing.T) {
	env := newFailingReadEnv(t)

	t.Run("native", func(t *testing.T) {
		env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "n1"})
		_, body := env.do(t, "POST", "/api/threads/n1/runs", keyAlice, map[string]any{"input": beamQuestion, "stream": true})
		var retry *agent.RetryInfo
		var msg *state.Message
		for _, f := range readSSE(t, strings.NewReader(string(body))) {
			var ev agent.Event
			if f.Event == "retry" || f.Event == "message" {
				if err := json.Unmarshal([]byte(f.Data), &ev); err != nil {
					t.Fatal(err)
				}
			}
			if f.Event == "retry" {
				retry = ev.Retry
			}
			if f.Event == "message" {
				msg = ev.Message
			}
		}
		if retry == nil || retry.Capability != "read_beam_current" || retry.Step != 0 {
			t.Errorf("retry %+v", retry)
		}
		if msg == nil || msg.Report == nil {
			t.Fatalf("message without its report: %s", body)
		}
		r := msg.Report
		if r.Failure.Capability != "read_beam_current" || r.Failure.Severity != capabilities.Critical || r.Failure.Kind != capabilities.KindAuth ||
			r.Failure.Reason != "read access to SR:DCCT:CURRENT was denied" || len(r.Suggestions) == 0 || r.Suggestions[0] != "Ask an operator for read access." {
			t.Errorf("report %+v", r)
		}
	})

	t.Run("agui", func(t *testing.T) {
		resp, body := env.do(t, "POST", "/agui", keyAlice, map[string]any{"threadId": "ag", "runId": "r1",
			"messages": []map[string]any{{"id": "u1", "role": "user", "content": beamQuestion}}})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		evs := verifyAGUI(t, string(body))
		var textID any
		var report, retry map[string]any
		for _, ev := range evs {
			switch {
			case ev["type"] == "TEXT_MESSAGE_START":
				textID = ev["messageId"]
			case ev["type"] == "CUSTOM" && ev["name"] == "error_report":
				v := ev["value"].(map[string]any)
				if v["messageId"] != textID || textID == nil {
					t.Errorf("the report names message %v, the text was %v", v["messageId"], textID)
				}
				report = v["report"].(map[string]any)
			case ev["type"] == "CUSTOM" && ev["name"] == "retry":
				retry = ev["value"].(map[string]any)
			}
		}
		if report == nil || report["failure"].(map[string]any)["kind"] != "auth" || report["asked"] != beamQuestion {
			t.Errorf("error_report %v", report)
		}
		if retry == nil || retry["capability"] != "read_beam_current" || retry["step"] != 0.0 {
			t.Errorf("retry %v", retry)
		}
	})

	t.Run("chat completions", func(t *testing.T) {
		_, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", true, user(beamQuestion)))
		v := parseLikeOpenWebUI(t, string(body))
		// The operator's part, the analysis visible, then the technical
		// report folded (Open WebUI and LibreChat render <details>).
		for _, want := range []string{"**What failed:** Step 1", "read access to SR:DCCT:CURRENT was denied", "- Ask an operator for read access.",
			"**Analysis:** ", "\n<details>\n<summary>Technical report</summary>\n", "**Error type:** `auth` (severity `critical`)",
			"**Capability:** `read_beam_current`", "**Failed steps:** step 1 (`read_beam_current`), attempt 2 of 2", "```json\n{", "</details>"} {
			if !strings.Contains(v.Content, want) {
				t.Errorf("content lacks %q:\n%s", want, v.Content)
			}
		}
		if a, d := strings.Index(v.Content, "**Analysis:**"), strings.Index(v.Content, "<details>"); a < 0 || d < a || strings.Count(v.Content, beamQuestion) != 1 {
			t.Errorf("the analysis before the folded report, the question said once:\n%s", v.Content)
		}
		if !strings.Contains(v.Reasoning, "↻ step 1 (read_beam_current) — ") || !strings.Contains(v.Reasoning, "failed (attempt 1/2)") {
			t.Errorf("reasoning lacks the retried step:\n%s", v.Reasoning)
		}
	})
}
