package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// verifyAGUI checks the rules @ag-ui/client's verifier enforces (first
// RUN_STARTED; text messages, tool calls and steps opened before used and
// closed before RUN_FINISHED; nothing after RUN_FINISHED or RUN_ERROR) plus
// ours: every tool call gets a result; no null fields. It returns the events.
func verifyAGUI(t *testing.T, body string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for _, f := range readSSE(t, strings.NewReader(body)) {
		if strings.Contains(f.Data, "null") {
			t.Errorf("null in event %s", f.Data)
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(f.Data), &ev); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if len(evs) == 0 || evs[0]["type"] != "RUN_STARTED" {
		t.Fatalf("first event is not RUN_STARTED: %v", evs)
	}
	texts, calls, steps, results := map[any]bool{}, map[any]bool{}, map[any]bool{}, map[any]bool{}
	var started []any
	ended := false
	for i, ev := range evs {
		if ended {
			t.Fatalf("event after the run ended: %v", ev)
		}
		switch ev["type"] {
		case "TEXT_MESSAGE_START":
			texts[ev["messageId"]] = true
		case "TEXT_MESSAGE_CONTENT":
			if !texts[ev["messageId"]] || ev["delta"] == "" {
				t.Fatalf("event %d: content without start or empty: %v", i, ev)
			}
		case "TEXT_MESSAGE_END":
			if !texts[ev["messageId"]] {
				t.Fatalf("event %d: end without start", i)
			}
			delete(texts, ev["messageId"])
		case "TOOL_CALL_START":
			calls[ev["toolCallId"]] = true
			started = append(started, ev["toolCallId"])
		case "TOOL_CALL_ARGS":
			if !calls[ev["toolCallId"]] {
				t.Fatalf("event %d: args without start", i)
			}
			var args map[string]any
			if err := json.Unmarshal([]byte(ev["delta"].(string)), &args); err != nil {
				t.Fatalf("args are not a JSON object: %v", ev["delta"])
			}
		case "TOOL_CALL_END":
			if !calls[ev["toolCallId"]] {
				t.Fatalf("event %d: end without start", i)
			}
			delete(calls, ev["toolCallId"])
		case "TOOL_CALL_RESULT":
			results[ev["toolCallId"]] = true
		case "STEP_STARTED":
			if steps[ev["stepName"]] {
				t.Fatalf("event %d: step %v already active", i, ev["stepName"])
			}
			steps[ev["stepName"]] = true
		case "STEP_FINISHED":
			if !steps[ev["stepName"]] {
				t.Fatalf("event %d: step %v not started", i, ev["stepName"])
			}
			delete(steps, ev["stepName"])
		case "RUN_FINISHED":
			if len(texts)+len(calls)+len(steps) > 0 {
				t.Fatalf("RUN_FINISHED with open texts %v calls %v steps %v", texts, calls, steps)
			}
			ended = true
		case "RUN_ERROR":
			ended = true
		}
	}
	if !ended {
		t.Fatal("the stream ended without RUN_FINISHED or RUN_ERROR")
	}
	for _, id := range started {
		if !results[id] {
			t.Errorf("tool call %v has no result", id)
		}
	}
	return evs
}

func types(evs []map[string]any) string {
	var b []string
	for _, e := range evs {
		b = append(b, e["type"].(string))
	}
	return strings.Join(b, ",")
}

func TestAGUIStreams(t *testing.T) {
	env := newTestEnv(t, nil)
	input := func(thread, run, text string) map[string]any {
		return map[string]any{"threadId": thread, "runId": run, "state": map[string]any{}, "tools": []any{}, "context": []any{},
			"messages": []map[string]any{{"id": "u1", "role": "user", "content": text}}}
	}
	// A plain run.
	resp, body := env.do(t, "POST", "/agui", keyAlice, input("t1", "r1", "What is the beam current?"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	evs := verifyAGUI(t, string(body))
	last := evs[len(evs)-1]
	if last["type"] != "RUN_FINISHED" || last["runId"] != "r1" || last["threadId"] != "t1" || last["outcome"] != nil {
		t.Fatalf("last %v", last)
	}
	for _, want := range []string{"STATE_SNAPSHOT", "STATE_DELTA", "STEP_STARTED", "TOOL_CALL_RESULT", "TEXT_MESSAGE_CONTENT"} {
		if !strings.Contains(types(evs), want) {
			t.Fatalf("no %s in %s", want, types(evs))
		}
	}
	// An approval: interrupt, then resume.
	_, body = env.do(t, "POST", "/agui", keyAlice, input("t2", "r1", "write 1.5 A to SR:HCM1"))
	evs = verifyAGUI(t, string(body))
	out, _ := evs[len(evs)-1]["outcome"].(map[string]any)
	if out["type"] != "interrupt" || evs[len(evs)-2]["type"] != "STATE_SNAPSHOT" {
		t.Fatalf("no interrupt: %s", body)
	}
	intr := out["interrupts"].([]any)[0].(map[string]any)
	if intr["id"] != "approval-1" || intr["reason"] != "confirmation" || !strings.Contains(intr["message"].(string), "SR:HCM1") {
		t.Fatalf("interrupt %v", intr)
	}
	resume := func(status string, payload any) map[string]any {
		in := input("t2", "r2", "")
		in["messages"] = []any{}
		in["resume"] = []map[string]any{{"interruptId": "approval-1", "status": status, "payload": payload}}
		return in
	}
	// Bad resumes are refused before anything runs.
	for _, bad := range []map[string]any{
		resume("resolved", map[string]any{}),
		resume("maybe", map[string]any{"approved": true}),
		func() map[string]any {
			r := resume("resolved", map[string]any{"approved": true})
			r["threadId"] = "other"
			return r
		}(),
	} {
		_, body = env.do(t, "POST", "/agui", keyAlice, bad)
		evs = verifyAGUI(t, string(body))
		if evs[len(evs)-1]["type"] != "RUN_ERROR" || evs[len(evs)-1]["code"] != "invalid_resume" {
			t.Fatalf("bad resume accepted: %s", body)
		}
	}
	// Another principal cannot resume it (their thread t2 is another thread).
	_, body = env.do(t, "POST", "/agui", keyBob, resume("resolved", map[string]any{"approved": true}))
	if !strings.Contains(string(body), "invalid_resume") || env.runner.writes() != 0 {
		t.Fatalf("bob resumed: %s", body)
	}
	_, body = env.do(t, "POST", "/agui", keyAlice, resume("resolved", map[string]any{"approved": true}))
	evs = verifyAGUI(t, string(body))
	if evs[len(evs)-1]["outcome"] != nil || !strings.Contains(string(body), "SR:HCM1 is now 1.5 A.") || env.runner.writes() != 1 {
		t.Fatalf("resume: %s", body)
	}
	// The same resume again executes nothing.
	_, body = env.do(t, "POST", "/agui", keyAlice, resume("resolved", map[string]any{"approved": true}))
	if !strings.Contains(string(body), "invalid_resume") || env.runner.writes() != 1 {
		t.Fatalf("replayed resume: %s", body)
	}
	// A failure.
	_, body = env.do(t, "POST", "/agui", keyAlice, input("t3", "r1", "fail"))
	evs = verifyAGUI(t, string(body))
	if evs[len(evs)-1]["type"] != "RUN_ERROR" || evs[len(evs)-1]["code"] != "run_failed" {
		t.Fatalf("failure: %s", body)
	}
	// Bad input is an HTTP error before the stream.
	for _, bad := range []any{map[string]any{"runId": "r"}, map[string]any{"threadId": "t", "messages": []any{}}} {
		if resp, _ := env.do(t, "POST", "/agui", keyAlice, bad); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%v: %d", bad, resp.StatusCode)
		}
	}
}
