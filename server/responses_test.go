package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
	responsesapi "github.com/capgraph/capgraph/server/internal/responses"
	"github.com/capgraph/capgraph/state"
	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// reportRunner is the scripted runner, plus an input with "report" that
// ends in the error node's report (an answer, RunAnswered), as a real
// agent's error node does.
type reportRunner struct{ *scriptedRunner }

const reportText = "⚠️ **Error report**: channel_read failed: the archiver timed out (SR:DCCT). Nothing was written."

func (r reportRunner) Run(ctx context.Context, req agent.TurnRequest) iter.Seq2[agent.Event, error] {
	if !strings.Contains(req.Input, "report") {
		return r.scriptedRunner.Run(ctx, req)
	}
	r.mu.Lock()
	r.Runs = append(r.Runs, req)
	r.mu.Unlock()
	return func(yield func(agent.Event, error) bool) {
		th := r.thread(req.Thread)
		msg := state.Message{Role: state.RoleAssistant, Content: reportText, Kind: state.KindErrorReport,
			Report: &state.ErrorReport{Asked: req.Input, Explanation: "the archiver timed out"}}
		r.mu.Lock()
		th.st = state.NewTurn(th.st, req.Input, state.Options{}, time.Now())
		th.st.Messages = append(th.st.Messages, msg)
		th.status = agent.RunAnswered
		r.mu.Unlock()
		for _, e := range []agent.Event{{Type: agent.EventRunStart}, {Type: agent.EventNodeStart, Node: "error"},
			{Type: agent.EventMessage, Message: &msg}, {Type: agent.EventDone, Status: agent.RunAnswered}} {
			e.Thread = req.Thread
			if !yield(e, nil) {
				return
			}
		}
	}
}

func newResponsesEnv(t *testing.T, mod func(*Config)) *testEnv {
	env := newTestEnv(t, mod)
	env.srv.cfg.Runner = reportRunner{env.runner}
	return env
}

func respParams(input string) responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: "capgraph", Input: responses.ResponseNewParamsInputUnion{OfString: oa.String(input)}}
}

func TestResponsesOpenAIGoNonStream(t *testing.T) {
	env := newResponsesEnv(t, nil)
	c := openaiGoClient(env, keyAlice)
	ctx := context.Background()
	resp, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "capgraph",
		Input:        responses.ResponseNewParamsInputUnion{OfString: oa.String("What is the beam current?")},
		Instructions: oa.String("Answer briefly."), Temperature: oa.Float(0.2), Metadata: map[string]string{"ticket": "OPS-42"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "Beam current is 500 mA." || resp.Status != "completed" || !strings.HasPrefix(resp.ID, "resp_") {
		t.Fatalf("response %q %q %q", resp.ID, resp.Status, resp.OutputText())
	}
	if resp.Usage.TotalTokens != 14 || resp.Usage.InputTokens != 10 || resp.Instructions.OfString != "Answer briefly." || resp.Metadata["ticket"] != "OPS-42" {
		t.Fatalf("usage %+v instructions %q metadata %v", resp.Usage, resp.Instructions.OfString, resp.Metadata)
	}
	if len(resp.Output) != 1 || resp.Output[0].Type != "message" || !strings.HasPrefix(resp.Output[0].ID, "msg_") {
		t.Fatalf("output %+v", resp.Output)
	}
	// The metadata is the thread's, like POST /api/threads metadata.
	if runs := env.runner.runs(); runs[0].Metadata["meta.ticket"] != "OPS-42" || runs[0].Metadata[metaSource] != "responses" {
		t.Fatalf("turn metadata %v", runs[0].Metadata)
	}
	got, err := c.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{})
	if err != nil || got.OutputText() != resp.OutputText() || got.Status != "completed" {
		t.Fatalf("get %v %v", got, err)
	}
	// Another principal's response does not exist for bob.
	_, err = openaiGoClient(env, keyBob).Responses.Get(ctx, resp.ID, responses.ResponseGetParams{})
	var apiErr *oa.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Fatalf("bob get: %v", err)
	}
}

func TestResponsesOpenAIGoStream(t *testing.T) {
	env := newResponsesEnv(t, nil)
	s := openaiGoClient(env, keyAlice).Responses.NewStreaming(context.Background(), respParams("What is the beam current?"))
	var types []string
	var deltas strings.Builder
	var final responses.Response
	seq := int64(-1)
	for s.Next() {
		ev := s.Current()
		if ev.SequenceNumber != seq+1 {
			t.Fatalf("sequence %d after %d", ev.SequenceNumber, seq)
		}
		seq = ev.SequenceNumber
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			deltas.WriteString(ev.Delta)
		case "response.completed":
			final = ev.Response
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	want := "response.created response.in_progress response.output_item.added response.content_part.added response.output_text.delta " +
		"response.output_text.delta response.output_text.done response.content_part.done response.output_item.done response.completed"
	if strings.Join(types, " ") != want {
		t.Fatalf("events\n%s\nwant\n%s", strings.Join(types, " "), want)
	}
	if deltas.String() != "Beam current is 500 mA." || final.OutputText() != deltas.String() || final.Usage.TotalTokens != 14 || final.Status != "completed" {
		t.Fatalf("deltas %q final %q %+v", deltas.String(), final.OutputText(), final.Usage)
	}
}

// rawResponses posts a Responses request and returns the status and body.
func rawResponses(t *testing.T, env *testEnv, key string, body any) (int, string) {
	t.Helper()
	resp, b := env.do(t, "POST", "/v1/responses", key, body)
	return resp.StatusCode, string(b)
}

// TestResponsesSSEFrames checks the wire: every frame names its event
// type on an "event:" line that matches the data's "type", no [DONE].
func TestResponsesSSEFrames(t *testing.T) {
	env := newResponsesEnv(t, nil)
	code, body := rawResponses(t, env, keyAlice, map[string]any{"model": "capgraph", "stream": true, "input": "What is the beam current?"})
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	event := ""
	frames := 0
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil || d.Type != event {
				t.Fatalf("frame event %q data %s", event, line)
			}
			frames++
		case line == "":
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	if frames < 8 || strings.Contains(body, "[DONE]") {
		t.Fatalf("%d frames:\n%s", frames, body)
	}
}

func TestResponsesConversationAndApproval(t *testing.T) {
	env := newResponsesEnv(t, nil)
	c := openaiGoClient(env, keyAlice)
	ctx := context.Background()
	ask, err := c.Responses.New(ctx, respParams("write 1.5 A to SR:HCM1"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ask.OutputText(), "Approval ID: AP-") || !strings.Contains(ask.OutputText(), "SR:HCM1") || ask.Status != "completed" {
		t.Fatalf("approval request %q", ask.OutputText())
	}
	p := respParams("yes")
	p.PreviousResponseID = oa.String(ask.ID)
	done, err := c.Responses.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if done.OutputText() != "SR:HCM1 is now 1.5 A." || env.runner.writes() != 1 || done.PreviousResponseID != ask.ID {
		t.Fatalf("resume %q writes %d", done.OutputText(), env.runner.writes())
	}
	// The retried request (same previous_response_id) starts nothing.
	_, err = c.Responses.New(ctx, p)
	var apiErr *oa.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusConflict || apiErr.Param != "previous_response_id" {
		t.Fatalf("retry: %v", err)
	}
	// A follow-up question continues the same thread.
	p2 := respParams("What is the beam current?")
	p2.PreviousResponseID = oa.String(done.ID)
	if _, err := c.Responses.New(ctx, p2); err != nil {
		t.Fatal(err)
	}
	runs := env.runner.runs()
	if len(runs) != 2 || runs[0].Thread != runs[1].Thread || len(env.runner.resumes()) != 1 || env.runner.writes() != 1 {
		t.Fatalf("runs %d resumes %d writes %d", len(runs), len(env.runner.resumes()), env.runner.writes())
	}
	// Bob cannot continue (or answer) alice's conversation: 404.
	p3 := respParams("yes")
	p3.PreviousResponseID = oa.String(ask.ID)
	_, err = openaiGoClient(env, keyBob).Responses.New(ctx, p3)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Param != "previous_response_id" {
		t.Fatalf("bob: %v", err)
	}
}

// A client that keeps the history itself (no ids) is recognised like a
// Chat Completions client: the approval token in the last assistant
// message resumes; item_reference to our message names the thread.
func TestResponsesStatelessHistory(t *testing.T) {
	for _, ref := range []bool{false, true} {
		t.Run(map[bool]string{false: "text", true: "item_reference"}[ref], func(t *testing.T) {
			env := newResponsesEnv(t, nil)
			code, body := rawResponses(t, env, keyAlice, map[string]any{"model": "capgraph", "input": "write 1.5 A to SR:HCM1"})
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			var ask responsesapi.Object
			_ = json.Unmarshal([]byte(body), &ask)
			prev := map[string]any{"role": "assistant", "content": []map[string]any{{"type": "output_text", "text": ask.Output[0].Content[0].Text}}}
			if ref {
				prev = map[string]any{"type": "item_reference", "id": ask.Output[0].ID}
			}
			code, body = rawResponses(t, env, keyAlice, map[string]any{"model": "capgraph", "input": []any{
				map[string]any{"role": "system", "content": "You are terse."},
				map[string]any{"role": "user", "content": "write 1.5 A to SR:HCM1"}, prev,
				map[string]any{"type": "message", "role": "user", "content": []map[string]any{{"type": "input_text", "text": "yes"}}}}})
			if code != http.StatusOK || !strings.Contains(body, "SR:HCM1 is now 1.5 A.") || env.runner.writes() != 1 {
				t.Fatalf("%d %s writes %d", code, body, env.runner.writes())
			}
			if ref { // Bob's reference to alice's message: 404.
				code, body = rawResponses(t, env, keyBob, map[string]any{"model": "capgraph", "input": []any{prev, user("yes")}})
				if code != http.StatusNotFound || !strings.Contains(body, `"param":"input[0].id"`) {
					t.Fatalf("bob %d %s", code, body)
				}
			}
		})
	}
}

// An error report is an answer: a completed response with the report as
// text. A failed run (a fault) is a failed response.
func TestResponsesErrorReportAndFailure(t *testing.T) {
	env := newResponsesEnv(t, nil)
	c := openaiGoClient(env, keyAlice)
	ctx := context.Background()
	rep, err := c.Responses.New(ctx, respParams("give me the report of SR:DCCT"))
	if err != nil || rep.Status != "completed" || rep.OutputText() != reportText {
		t.Fatalf("report %v %+v", err, rep)
	}
	s := c.Responses.NewStreaming(ctx, respParams("give me the report of SR:DCCT"))
	var text string
	for s.Next() {
		if ev := s.Current(); ev.Type == "response.completed" {
			text = ev.Response.OutputText()
		}
	}
	if s.Err() != nil || text != reportText {
		t.Fatalf("streamed report %q %v", text, s.Err())
	}
	s = c.Responses.NewStreaming(ctx, respParams("please fail"))
	var failed responses.Response
	for s.Next() {
		if ev := s.Current(); ev.Type == "response.failed" {
			failed = ev.Response
		}
	}
	// A server fault: a reference to the log, not the Go error.
	if s.Err() != nil || failed.Status != "failed" || !strings.Contains(failed.Error.Message, "internal server error (reference ") || strings.Contains(failed.Error.Message, "unreachable") {
		t.Fatalf("failed %+v %v", failed, s.Err())
	}
	_, err = c.Responses.New(ctx, respParams("please fail"))
	var apiErr *oa.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode < 500 {
		t.Fatalf("non-stream failure: %v", err)
	}
}

func TestResponsesRefusesUnsupported(t *testing.T) {
	env := newResponsesEnv(t, nil)
	msg := func(role string, parts ...map[string]any) map[string]any {
		return map[string]any{"type": "message", "role": role, "content": parts}
	}
	cases := []struct {
		name  string
		body  any
		code  int
		param string
	}{
		{"tools", map[string]any{"model": "capgraph", "input": "hi", "tools": []any{map[string]any{"type": "function", "name": "f"}}}, 400, "tools"},
		{"tool_choice", map[string]any{"model": "capgraph", "input": "hi", "tool_choice": "required"}, 400, "tool_choice"},
		{"json schema", map[string]any{"model": "capgraph", "input": "hi", "text": map[string]any{"format": map[string]any{"type": "json_schema"}}}, 400, "text.format"},
		{"store false", map[string]any{"model": "capgraph", "input": "hi", "store": false}, 400, "store"},
		{"background", map[string]any{"model": "capgraph", "input": "hi", "background": true}, 400, "background"},
		{"conversation", map[string]any{"model": "capgraph", "input": "hi", "conversation": "conv_1"}, 400, "conversation"},
		{"prompt template", map[string]any{"model": "capgraph", "input": "hi", "prompt": map[string]any{"id": "pmpt_1"}}, 400, "prompt"},
		{"reasoning item", map[string]any{"model": "capgraph", "input": []any{map[string]any{"type": "reasoning", "id": "rs_1", "summary": []any{}}, user("hi")}}, 400, "input[0].type"},
		{"unknown field", map[string]any{"model": "capgraph", "input": "hi", "modalities": []string{"audio"}}, 400, "modalities"},
		{"image only", map[string]any{"model": "capgraph", "input": []any{msg("user", map[string]any{"type": "input_image", "image_url": "data:x"})}}, 400, "input[0]"},
		{"function output", map[string]any{"model": "capgraph", "input": []any{map[string]any{"type": "function_call_output", "call_id": "c", "output": "x"}}}, 400, "input[0].type"},
		{"last not user", map[string]any{"model": "capgraph", "input": []any{msg("assistant", map[string]any{"type": "output_text", "text": "x"})}}, 400, "input[0]"},
		{"empty input", map[string]any{"model": "capgraph", "input": "  "}, 400, "input[0]"},
		{"no model", map[string]any{"input": "hi"}, 400, "model"},
		{"unknown model", map[string]any{"model": "gpt-9", "input": "hi"}, 404, "model"},
		{"wrong type", map[string]any{"model": "capgraph", "input": "hi", "stream": "yes"}, 400, "stream"},
		{"metadata too big", map[string]any{"model": "capgraph", "input": "hi", "metadata": map[string]any{"k": strings.Repeat("v", 513)}}, 400, "metadata"},
		{"NUL in a metadata value", map[string]any{"model": "capgraph", "input": "hi", "metadata": map[string]any{"k": "a\x00b"}}, 400, "metadata"},
		{"NUL in a metadata key", map[string]any{"model": "capgraph", "input": "hi", "metadata": map[string]any{"k\x00": "v"}}, 400, "metadata"},
		{"garbage after JSON", `{"model":"capgraph","input":"hi"} {"x":1}`, 400, "body"},
		{"array body", `[1,2]`, 400, "body"},
		{"unknown previous response", map[string]any{"model": "capgraph", "input": "hi", "previous_response_id": "resp_zz"}, 404, "previous_response_id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := rawResponses(t, env, keyAlice, tc.body)
			var e struct {
				Error apierror.Body `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || code != tc.code || e.Error.Param == nil || *e.Error.Param != tc.param || e.Error.Message == "" {
				t.Fatalf("%d %s", code, body)
			}
		})
	}
	if n := len(env.runner.runs()); n != 0 {
		t.Fatalf("%d runs started by refused requests", n)
	}
}

// While a run waits, a Responses stream gets SSE comments (every SSE
// parser skips them), then the answer.
func TestResponsesKeepAlive(t *testing.T) {
	env := newResponsesEnv(t, func(c *Config) { c.Heartbeat = 20 * time.Millisecond })
	body, _ := json.Marshal(map[string]any{"model": "capgraph", "stream": true, "input": "slow please"})
	req, _ := http.NewRequest("POST", env.http.URL+"/v1/responses", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == ": keep-alive\n" {
			break
		}
	}
	env.runner.Release()
	var rest strings.Builder
	_, _ = br.WriteTo(&rest)
	if !strings.Contains(rest.String(), `"delta":"Done after waiting."`) || !strings.Contains(rest.String(), "event: response.completed") {
		t.Fatalf("after keep-alive:\n%s", rest.String())
	}
}

// A body shorter than its Content-Length is a 400 that shows nothing of
// the connection.
func TestResponsesShortBody(t *testing.T) {
	env := newResponsesEnv(t, nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(env.http.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"model":"capgraph","input":"hi"`
	fmt.Fprintf(conn, "POST /v1/responses HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		keyAlice, len(body)+50, body)
	_ = conn.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(b), "127.0.0.1") || !strings.Contains(string(b), `"param":"body"`) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}
