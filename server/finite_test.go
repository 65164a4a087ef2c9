package server

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/logging"
	"github.com/capgraph/capgraph/state"
)

// Numbers that are not numbers (issue 26, part 7) on every API — native,
// /v1/chat/completions, /v1/responses, AG-UI — over the real agent: ±Inf,
// NaN and 1e400 in a request's JSON are a 400 naming the field; in a
// user's words, in a model's plan or in a capability's action they end the
// turn with an answer or a refusal and its report (200), never a 5xx and
// never an internal error.

// finiteEnv serves the real offline agent over SQLite, writes enabled, with
// caps, counting the errors the server logs.
type finiteEnv struct {
	*testEnv
	agent *agent.Agent
	log   *countLogger
}

func newFiniteEnv(t *testing.T, models llm.Models, caps ...capabilities.Capability) *finiteEnv {
	t.Helper()
	store, err := sqlite.New(sqlite.Config{Path: filepath.Join(t.TempDir(), "capgraph.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	cfg := agent.Config{Registry: newRegistry(t, caps...), Store: store,
		Options: state.Options{WritesEnabled: true, ApprovalMode: state.ApprovalModeSelective}}
	if models != nil {
		cfg.Models = models
	}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	log := &countLogger{Logger: logging.Nop()}
	env := newTestEnv(t, func(c *Config) { c.Runner, c.Logger = a, log })
	return &finiteEnv{testEnv: env, agent: a, log: log}
}

// ask sends text as a new conversation through api and returns the status
// and the body (an SSE stream for native and AG-UI).
func (e *finiteEnv) ask(t *testing.T, api, thread, text string) (int, string) {
	t.Helper()
	var resp *http.Response
	var body []byte
	switch api {
	case "native":
		e.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": thread})
		resp, body = e.do(t, "POST", "/api/threads/"+thread+"/runs", keyAlice, map[string]any{"input": text, "stream": true})
	case "chat":
		resp, body = e.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user(text)))
	case "responses":
		resp, body = e.do(t, "POST", "/v1/responses", keyAlice, map[string]any{"model": "capgraph", "input": text})
	case "agui":
		resp, body = e.do(t, "POST", "/agui", keyAlice, map[string]any{"threadId": thread, "runId": "r1",
			"messages": []map[string]any{{"id": "u1", "role": "user", "content": text}}})
	default:
		t.Fatalf("no API %q", api)
	}
	return resp.StatusCode, string(body)
}

var apis = []string{"native", "chat", "responses", "agui"}

// noServerErrors fails t when the server logged a panic or an internal error.
func (e *finiteEnv) noServerErrors(t *testing.T) {
	t.Helper()
	if p, ie := e.log.panics.Load(), e.log.internal.Load(); p != 0 || ie != 0 {
		t.Fatalf("%d handler panics, %d internal errors logged", p, ie)
	}
}

// ended reports whether body shows a run that ended without failing.
func ended(api, body string) bool {
	switch api {
	case "native":
		i := strings.LastIndex(body, "event: end\n")
		return i >= 0 && strings.Contains(body[i:], `"status":"answered"`)
	case "agui":
		return strings.Contains(body, `"type":"RUN_FINISHED"`) && !strings.Contains(body, `"type":"RUN_ERROR"`)
	case "responses":
		return strings.Contains(body, `"status":"completed"`)
	}
	return strings.Contains(body, `"finish_reason":"stop"`)
}

// A user's words holding a value that is not a number — "1e400", "NaN",
// "inf" — never reach an action: each API answers 200, the run ends, no
// human is asked, nothing is written, the server logs no internal error.
func TestNonFiniteWordsOnEveryAPI(t *testing.T) {
	plant := &q1Plant{}
	env := newFiniteEnv(t, nil, plant.capability(t), readBeamCurrent(t))
	for i, text := range []string{"Set the Q1 current to 1e400 A", "Set the Q1 current to -1e400 A", "Set the Q1 current to NaN A",
		"Set the Q1 current to inf A", "Set the Q1 current to Infinity A", "Set the Q1 current to 1e999999999 A"} {
		for _, api := range apis {
			status, body := env.ask(t, api, fmt.Sprintf("w%d-%s", i, api), text)
			if status != http.StatusOK || !ended(api, body) {
				t.Errorf("%s %q: %d %.400s", api, text, status, body)
			}
			if strings.Contains(body, "approval_required") || strings.Contains(body, "Approval ID") || strings.Contains(body, "Approval needed") {
				t.Errorf("%s %q: a human was asked: %.400s", api, text, body)
			}
		}
	}
	waitRuns(t, env.testEnv)
	if w := plant.written(); len(w) != 0 {
		t.Fatalf("written: %v", w)
	}
	env.noServerErrors(t)
}

// rampQ1 sets Q1 and, carelessly, the time the ramp takes: the step from
// 92 A divided by the ramp rate, which nobody configured (0), is +Inf. The
// capability checks nothing; the framework refuses the action.
func rampQ1(t *testing.T, mu *sync.Mutex, runs *int) capabilities.Capability {
	t.Helper()
	rate := 0.0
	c := capabilities.Define(capabilities.Definition{
		Name: "ramp_q1", Description: "Set the Q1 quadrupole current to a value, ramping it", Provides: []string{"Q1_WRITE"}, SideEffects: true,
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use to set the Q1 current.",
			Examples: []capabilities.ClassifierExample{{Query: "Set the Q1 current to 105 A", Result: true, Reason: "a setpoint change"}}},
		Action: func(st capabilities.Step) (capabilities.Action, error) {
			return capabilities.Action{Changes: []capabilities.Change{{Target: "Q1", Value: 105.0, Unit: "A"},
				{Target: "Q1:RAMP_TIME", Value: (105 - 92) / rate, Unit: "s"}}, Summary: "set Q1 to 105 A"}, nil
		},
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			mu.Lock()
			*runs++
			mu.Unlock()
			return capabilities.Result("Q1_WRITE", 105.0, "Q1 set to 105 A"), nil
		},
	})
	return c
}

// An action holding +Inf is refused before anyone is asked, on every API:
// 200 with the refusal's report, a refused audit record (not_finite) per
// turn, nothing run.
func TestNonFiniteActionRefusedOnEveryAPI(t *testing.T) {
	var mu sync.Mutex
	runs := 0
	env := newFiniteEnv(t, nil, rampQ1(t, &mu, &runs), readBeamCurrent(t))
	for _, api := range apis {
		status, body := env.ask(t, api, "ramp-"+api, "Set the Q1 current to 105 A")
		if status != http.StatusOK || !ended(api, body) || !strings.Contains(body, "The value for Q1:RAMP_TIME is +Inf, which is not a finite number") {
			t.Errorf("%s: %d …%s", api, status, body[max(0, len(body)-700):])
		}
		if strings.Contains(body, "approval_required") || strings.Contains(body, "Approval ID") {
			t.Errorf("%s: a human was asked: %.400s", api, body)
		}
	}
	waitRuns(t, env.testEnv)
	recs, err := env.agent.Audit(context.Background(), agent.AuditFilter{Event: agent.AuditRefused})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(apis) {
		t.Fatalf("%d audit records, want one refusal per API: %+v", len(recs), recs)
	}
	for _, r := range recs {
		if r.Event != agent.AuditRefused || r.Reason != capabilities.ReasonNotFinite || len(r.Changes) != 2 || r.Changes[1].Value != "+Inf" {
			t.Errorf("audit record %+v", r.AuditRecord)
		}
	}
	// The audit API shows them to the operator.
	resp, body := env.do(t, "GET", "/api/audit?outcome=refused", keyAlice, nil)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusForbidden || resp.StatusCode == http.StatusOK && !strings.Contains(string(body), `"not_finite"`) {
		t.Errorf("GET /api/audit: %d %.400s", resp.StatusCode, body)
	}
	if runs != 0 {
		t.Fatalf("ramp_q1 ran %d times", runs)
	}
	env.noServerErrors(t)
}

// A model's plan holding 1e400 (JSON that decodes into no float) is
// re-asked with a message saying so, and when the model keeps it the turn
// ends in an error report: 200 on every API, nothing written.
func TestModelPlanWithOutOfRangeNumberOnEveryAPI(t *testing.T) {
	plant := &q1Plant{}
	m := llmtest.New().Only(llm.RoleOrchestrator).On(llmtest.RoleIs(llm.RoleOrchestrator), func(llm.Request) llmtest.Reply {
		return llmtest.Text("```json\n" + `{"steps": [{"context_key": "w", "capability": "set_q1", "task_objective": "Set the Q1 current to 105 A", ` +
			`"parameters": {"value": 1e400}}, {"context_key": "r", "capability": "respond", "task_objective": "answer"}]}` + "\n```")
	})
	env := newFiniteEnv(t, m, plant.capability(t), readBeamCurrent(t))
	for _, api := range apis {
		status, body := env.ask(t, api, "model-"+api, "Set the Q1 current to 105 A")
		if status != http.StatusOK || !ended(api, body) || !strings.Contains(body, "could not be completed") {
			t.Errorf("%s: %d …%s", api, status, body[max(0, len(body)-700):])
		}
	}
	waitRuns(t, env.testEnv)
	calls := m.CallsFor(llm.RoleOrchestrator)
	if len(calls) < 2 || !strings.Contains(calls[1].Prompt(), "holds the number 1e400, beyond the range of a 64-bit float") {
		t.Fatalf("%d planner calls; the second was not told what is wrong", len(calls))
	}
	if w := plant.written(); len(w) != 0 {
		t.Fatalf("written: %v", w)
	}
	env.noServerErrors(t)
}

// ±Inf, NaN and 1e400 in a request's JSON — a number field, a field of
// another type, an edited plan's parameters — are a 400 naming the field,
// in words without Go's; nothing runs.
func TestNonFiniteNumbersInBodiesAre400(t *testing.T) {
	env := newSafetyEnv(t, state.Options{WritesEnabled: true, ApprovalMode: state.ApprovalModeSelective})
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "nf"})
	msgs := `"messages":[{"role":"user","content":"Set the Q1 current to 105 A"}]`
	for _, tc := range []struct {
		path, body, param, says string
	}{
		{"/v1/chat/completions", `{"model":"capgraph","n":1e400,` + msgs + `}`, "n", "expected a whole number, got a number 1e400"},
		{"/v1/chat/completions", `{"model":"capgraph","temperature":NaN,` + msgs + `}`, "body", "invalid JSON"},
		{"/v1/chat/completions", `{"model":"capgraph","top_p":-Infinity,` + msgs + `}`, "body", "invalid JSON"},
		{"/v1/chat/completions", `{"model":"capgraph","messages":[{"role":"user","content":1e400}]}`, "messages[0].content", "must be a string"},
		{"/v1/responses", `{"model":"capgraph","input":"hi","top_p":Infinity}`, "body", "invalid JSON"},
		{"/v1/responses", `{"model":"capgraph","input":1e400}`, "input", ""},
		{"/v1/responses", `{"model":"capgraph","input":"hi","metadata":{"x":1e400}}`, "metadata", "string values"},
		{"/api/threads/nf/runs", `{"input":1e400}`, "input", "expected a string, got a number"},
		{"/api/threads/nf/runs", `{"input":"hi","options":{"writes_enabled":NaN}}`, "body", "invalid JSON"},
		{"/api/threads/nf/approval", `{"approval_id":"a1","approved":1e400}`, "approved", "expected true or false"},
		{"/api/threads/nf/approval", `{"approval_id":"a1","approved":true,"plan":{"steps":[{"context_key":"w","capability":"set_q1","parameters":{"value":1e400}}]}}`,
			"plan.steps.parameters", "1e400 is beyond the range of a 64-bit float"},
		{"/api/threads/nf/approval", `{"approval_id":"a1","approved":true,"plan":{"steps":[{"context_key":"w","capability":"set_q1","parameters":{"value":-1e400}}]}}`,
			"plan.steps.parameters", "-1e400 is beyond the range of a 64-bit float"},
		{"/api/threads/nf/approval", `{"approval_id":"a1","approved":true,"plan":{"steps":[{"context_key":"w","capability":"set_q1","parameters":{"value":NaN}}]}}`,
			"body", "invalid JSON"},
		{"/api/threads", `{"id":"nf2","metadata":{"a":1e400}}`, "metadata", "expected a string"},
		{"/agui", `{"threadId":"nf3","messages":[{"id":"u","role":"user","content":"hi"}],"state":{"x":NaN}}`, "body", "invalid JSON"},
		{"/agui", `{"threadId":"nf3","messages":[{"id":"u","role":"user","content":"hi"}],"forwardedProps":{"options":{"approval_mode":1e400}}}`,
			"options.approval_mode", "expected a string"},
	} {
		resp, body := env.do(t, "POST", tc.path, keyAlice, tc.body)
		e := apiErrorOf(t, resp, string(body))
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Message, tc.says) || e.Param == nil || *e.Param != tc.param {
			t.Errorf("%s %s: %d %s; want 400 saying %q about %q", tc.path, tc.body, resp.StatusCode, body, tc.says, tc.param)
		}
		noInternalDetail(t, e.Message)
	}
	env.nothingRan(t, alice, "nf")
	env.nothingRan(t, alice, "nf3")
}
