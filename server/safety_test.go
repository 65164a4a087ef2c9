package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/logging"
	"github.com/capgraph/capgraph/server/internal/approvaltoken"
	"github.com/capgraph/capgraph/state"
	goopenai "github.com/sashabaranov/go-openai"
)

const keyAdmin = "sk-admin-0123456789"

// q1Plant is a setpoint written by set_q1, a side-effecting capability
// with no checks of its own: whatever reaches Run is written.
type q1Plant struct {
	mu     sync.Mutex
	writes []float64
}

func (p *q1Plant) written() []float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]float64(nil), p.writes...)
}

var toValue = regexp.MustCompile(`(?i)\bto\s+([0-9]+(?:\.[0-9]+)?)`)

func (p *q1Plant) capability(t testing.TB) capabilities.Capability {
	t.Helper()
	value := func(st capabilities.Step) (float64, error) {
		for _, s := range []string{st.TaskObjective, st.Task} {
			if m := toValue.FindStringSubmatch(s); m != nil {
				return strconv.ParseFloat(m[1], 64)
			}
		}
		return 0, errors.New("no value (say \"to <number>\")")
	}
	c := capabilities.Define(capabilities.Definition{
		Name: "set_q1", Description: "Set the Q1 quadrupole current to a value", Provides: []string{"Q1_WRITE"}, SideEffects: true,
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use to set the Q1 current.",
			Examples: []capabilities.ClassifierExample{{Query: "Set the Q1 current to 105 A", Result: true, Reason: "a setpoint change"}}},
		Action: func(st capabilities.Step) (capabilities.Action, error) {
			v, err := value(st)
			return capabilities.Action{Changes: []capabilities.Change{{Target: "Q1", Value: v, Unit: "A"}}, Summary: fmt.Sprintf("set Q1 to %g A", v)}, err
		},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			v, err := value(st)
			if err != nil {
				return capabilities.Output{}, err
			}
			p.mu.Lock()
			p.writes = append(p.writes, v)
			p.mu.Unlock()
			return capabilities.Result("Q1_WRITE", map[string]any{"old": 92.0, "new": v, "readback": v}, fmt.Sprintf("Q1 from 92 → %g A", v)), nil
		},
	})
	return c
}

type safetyEnv struct {
	*testEnv
	agent *agent.Agent
	plant *q1Plant
}

// newSafetyEnv serves a real offline agent over SQLite whose configuration
// is opts, with alice (no permission), bob (may raise approval_mode), an
// admin key and model profiles that ask for looser options.
func newSafetyEnv(t *testing.T, opts state.Options) *safetyEnv {
	t.Helper()
	store, err := sqlite.New(sqlite.Config{Path: filepath.Join(t.TempDir(), "capgraph.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	p := &q1Plant{}
	a, err := agent.New(agent.Config{Registry: newRegistry(t, p.capability(t), readBeamCurrent(t)), Store: store, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	env := newTestEnv(t, func(c *Config) {
		c.Runner = a
		c.Principals = []Principal{
			{Name: "alice", KeySHA256: HashKey(keyAlice), Tenant: "lab"},
			{Name: "bob", KeySHA256: HashKey(keyBob), Tenant: "lab", MayRaise: []string{state.SettingApprovalMode}},
			{Name: "root", KeySHA256: HashKey(keyAdmin), Tenant: "ops", Admin: true},
		}
		c.Models = []Model{{ID: "capgraph"},
			{ID: "capgraph-writes", Options: &agent.TurnOptions{WritesEnabled: new(true)}},
			{ID: "capgraph-no-approval", Options: &agent.TurnOptions{ApprovalMode: state.ApprovalModeDisabled}},
			{ID: "capgraph-strict", Options: &agent.TurnOptions{ApprovalMode: state.ApprovalModeAll, WritesEnabled: new(false)}}}
	})
	return &safetyEnv{testEnv: env, agent: a, plant: p}
}

type apiErr struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

func decodeErr(t *testing.T, body []byte) apiErr {
	t.Helper()
	var e apiErr
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("not an error body: %v: %s", err, body)
	}
	return e
}

// wantForbidden checks a 403 naming the setting, in the OpenAI error shape.
func wantForbidden(t *testing.T, resp *http.Response, body []byte, setting, param string) {
	t.Helper()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("status %d, want 403: %s", resp.StatusCode, body)
	}
	e := decodeErr(t, body)
	if e.Error.Type != "permission_error" || e.Error.Code != "option_not_allowed" || !strings.Contains(e.Error.Message, setting) ||
		e.Error.Param == nil || *e.Error.Param != param {
		t.Fatalf("error %+v (param %v), want option_not_allowed naming %s (param %s)", e.Error, e.Error.Param, setting, param)
	}
	if resp.Header.Get("x-should-retry") != "false" {
		t.Error("x-should-retry is not false")
	}
}

// nothingRan checks that no turn ran on the internal thread: it does not
// exist, or (created by POST /api/threads, which is durable) has no turn.
func (e *safetyEnv) nothingRan(t *testing.T, c caller, clientThread string) {
	t.Helper()
	st, _, err := e.agent.State(context.Background(), internalThreadID(c, clientThread))
	if err == nil && (st.Turn.Number != 0 || len(st.Messages) != 0) || err != nil && !errors.Is(err, agent.ErrUnknownThread) {
		t.Errorf("thread %s was written: turn %d, %v", clientThread, st.Turn.Number, err)
	}
	if w := e.plant.written(); len(w) != 0 {
		t.Fatalf("written: %v", w)
	}
}

var alice = caller{Principal: Principal{Name: "alice", Tenant: "lab"}}

// The first finding: request options no longer loosen the
// server's configuration, on any API. Each loosening option gets 403
// naming the setting; nothing runs and nothing is written.
func TestLooseningOptionsForbiddenOnEveryAPI(t *testing.T) {
	env := newSafetyEnv(t, state.Options{ApprovalMode: state.ApprovalModeSelective, PlanApproval: true})
	loosen := []struct {
		setting string
		opts    string
	}{
		{state.SettingWritesEnabled, `{"writes_enabled": true}`},
		{state.SettingApprovalMode, `{"approval_mode": "disabled"}`},
		{state.SettingPlanApproval, `{"plan_approval": false}`},
		{state.SettingSkipClassification, `{"skip_classification": true}`},
		{state.SettingSkipTaskExtraction, `{"skip_task_extraction": true}`},
		{state.SettingWritesEnabled, `{"writes_enabled": true, "approval_mode": "disabled"}`}, // the request
	}
	for i, tc := range loosen {
		t.Run("native "+tc.opts, func(t *testing.T) {
			th := fmt.Sprintf("w%d", i)
			env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": th})
			resp, body := env.do(t, "POST", "/api/threads/"+th+"/runs", keyAlice,
				`{"input": "Set the Q1 current to 105 A", "options": `+tc.opts+`}`)
			wantForbidden(t, resp, body, tc.setting, "options."+tc.setting)
			env.nothingRan(t, alice, th)
		})
		t.Run("agui "+tc.opts, func(t *testing.T) {
			th := fmt.Sprintf("g%d", i)
			resp, body := env.do(t, "POST", "/agui", keyAlice, `{"threadId": "`+th+`", "runId": "r1",
				"messages": [{"id": "u1", "role": "user", "content": "Set the Q1 current to 105 A"}], "forwardedProps": {"options": `+tc.opts+`}}`)
			wantForbidden(t, resp, body, tc.setting, "options."+tc.setting)
			env.nothingRan(t, alice, th)
		})
	}
	t.Run("chat completions model profiles", func(t *testing.T) {
		for model, setting := range map[string]string{"capgraph-writes": state.SettingWritesEnabled, "capgraph-no-approval": state.SettingApprovalMode} {
			_, err := goOpenAIClient(env.testEnv, keyAlice).CreateChatCompletion(context.Background(), goopenai.ChatCompletionRequest{
				Model: model, Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "Set the Q1 current to 105 A"}}})
			var ae *goopenai.APIError
			if !errors.As(err, &ae) || ae.HTTPStatusCode != http.StatusForbidden || ae.Code != "option_not_allowed" || !strings.Contains(ae.Message, setting) ||
				ae.Param == nil || *ae.Param != "model" {
				t.Fatalf("%s: err = %#v", model, err)
			}
		}
		if w := env.plant.written(); len(w) != 0 {
			t.Fatalf("written: %v", w)
		}
		// A refused request leaves nothing behind: no chat thread either.
		_, body := env.do(t, "GET", "/api/threads", keyAlice, nil)
		for id := range threadIDs(t, body) {
			if strings.HasPrefix(id, "chat-") {
				t.Fatalf("a refused chat left thread %s: %s", id, body)
			}
		}
	})
	t.Run("a key that may raise the approval mode", func(t *testing.T) {
		env.do(t, "POST", "/api/threads", keyBob, map[string]any{"id": "b1"})
		resp, body := env.do(t, "POST", "/api/threads/b1/runs", keyBob, `{"input": "What is the beam current?", "options": {"approval_mode": "disabled"}}`)
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		// Not the write switch, which no key may raise.
		env.do(t, "POST", "/api/threads", keyBob, map[string]any{"id": "b2"})
		resp, body = env.do(t, "POST", "/api/threads/b2/runs", keyBob, `{"input": "Set the Q1 current to 105 A", "options": {"writes_enabled": true}}`)
		wantForbidden(t, resp, body, state.SettingWritesEnabled, "options.writes_enabled")
	})
	t.Run("tightening is accepted", func(t *testing.T) {
		env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "tight"})
		resp, body := env.do(t, "POST", "/api/threads/tight/runs", keyAlice, `{"input": "What is the beam current?", "stream": true, "options": {"approval_mode": "all_capabilities", "writes_enabled": false}}`)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "event: approval_required") {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
	})
	t.Run("an unknown option is a bad request", func(t *testing.T) {
		env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "typo"})
		resp, body := env.do(t, "POST", "/api/threads/typo/runs", keyAlice, `{"input": "hi", "options": {"writes_enable": true}}`)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "writes_enable") {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
	})
}

// The write switch is checked where the write executes: an approval given
// over the API with writes enabled, answered after the server restarted
// with writes disabled (same SQLite file), writes nothing.
func TestApprovalOutlivesNoSwitchOverAPI(t *testing.T) {
	path := filepath.Join(t.TempDir(), "capgraph.db")
	serve := func(opts state.Options) (*testEnv, *q1Plant) {
		store, err := sqlite.New(sqlite.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = store.Close() })
		p := &q1Plant{}
		a, err := agent.New(agent.Config{Registry: newRegistry(t, p.capability(t)), Store: store, Options: opts})
		if err != nil {
			t.Fatal(err)
		}
		return newTestEnv(t, func(c *Config) { c.Runner = a }), p
	}
	first, _ := serve(state.Options{WritesEnabled: true, ApprovalMode: state.ApprovalModeDisabled})
	first.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "w"})
	resp, body := first.do(t, "POST", "/api/threads/w/runs", keyAlice, map[string]any{"input": "Set the Q1 current to 105 A", "stream": true})
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"approval_required"`) {
		t.Fatalf("status %d, no approval asked: %s", resp.StatusCode, body)
	}
	m := regexp.MustCompile(`"id":"(step:[^"]+)"`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no approval id: %s", body)
	}
	second, p := serve(state.Options{}) // restarted without writes
	resp, body = second.do(t, "POST", "/api/threads/w/approval", keyAlice, map[string]any{"approval_id": string(m[1]), "approved": true, "stream": true})
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Writes are disabled") {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if w := p.written(); len(w) != 0 {
		t.Fatalf("written without the switch: %v", w)
	}
}

// Audit records of side-effecting steps: the admin API lists them; other
// keys get 403; the server's audit log file gets them too, beside a step
// record of every capability step attempt.
func TestAuditAPI(t *testing.T) {
	env := newSafetyEnv(t, state.Options{WritesEnabled: true})
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "w"})
	_, body := env.do(t, "POST", "/api/threads/w/runs", keyAlice, map[string]any{"input": "Set the Q1 current to 105 A", "stream": true})
	m := regexp.MustCompile(`"id":"(step:[^"]+)"`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no approval asked: %s", body)
	}
	resp, body := env.do(t, "POST", "/api/threads/w/approval", keyAlice, map[string]any{"approval_id": string(m[1]), "approved": true, "stream": true})
	if resp.StatusCode != http.StatusOK || len(env.plant.written()) != 1 {
		t.Fatalf("status %d, writes %v: %s", resp.StatusCode, env.plant.written(), body)
	}
	resp, body = env.do(t, "GET", "/api/audit", keyAlice, nil)
	if resp.StatusCode != http.StatusForbidden || decodeErr(t, body).Error.Code != "forbidden" {
		t.Fatalf("non-admin: status %d: %s", resp.StatusCode, body)
	}
	resp, body = env.do(t, "GET", "/api/audit?since=1h&limit=10", keyAdmin, nil)
	var out struct{ Records []agent.AuditEntry }
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil || len(out.Records) != 5 || out.Records[0].Event != agent.AuditPlanned {
		t.Fatalf("admin: status %d: %s", resp.StatusCode, body)
	}
	ap, ex := out.Records[2], out.Records[4]
	if ap.Event != agent.AuditApproved || ap.ApprovedBy != "alice" || ap.Principal != "alice" || ap.Tenant != "lab" ||
		ex.Outcome != capabilities.OutcomeConfirmed || ex.Run == "" || !strings.HasPrefix(ex.Run, "run-") || ex.ResultSummary != "Q1 from 92 → 105 A" {
		t.Fatalf("records %+v", out.Records)
	}
	resp, body = env.do(t, "GET", "/api/audit?outcome=confirmed&thread="+ex.Thread, keyAdmin, nil)
	if json.Unmarshal(body, &out) != nil || len(out.Records) != 1 {
		t.Fatalf("filtered: %d %s", resp.StatusCode, body)
	}
	for _, q := range []string{"since=yesterday", "limit=0", "limit=5000", "until=x", "outcome=executed", "event=done"} {
		if resp, body := env.do(t, "GET", "/api/audit?"+q, keyAdmin, nil); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d: %s", q, resp.StatusCode, body)
		}
	}
	// The file: the same records, one type and one vocabulary, and a
	// "step" record for every capability step attempt, which for the write
	// carries the attempt's outcome.
	env.audit.mu.Lock()
	lines := env.audit.buf.String()
	env.audit.mu.Unlock()
	sc := bufio.NewScanner(strings.NewReader(lines))
	kinds := map[string]int{}
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if _, old := l["record"]; old {
			t.Errorf("a line in the old step/action shape: %s", sc.Bytes())
		}
		o, _ := l["outcome"].(string)
		kinds[fmt.Sprint(l["event"], "/", o, "/", l["capability"])]++
	}
	want := map[string]int{"asked//set_q1": 1, "approved//set_q1": 1, "started//set_q1": 1, "ended/confirmed/set_q1": 1, "step/confirmed/set_q1": 1}
	for k, n := range want {
		if kinds[k] != n {
			t.Fatalf("audit file lines %v, want %v among them:\n%s", kinds, want, lines)
		}
	}
}

// panicRunner panics where a scripted runner would answer: State for the
// thread "boom", and the first Resume.
type panicRunner struct {
	*scriptedRunner
	mu      sync.Mutex
	resumed int
}

func (p *panicRunner) State(ctx context.Context, thread string) (state.State, agent.RunStatus, error) {
	if strings.HasSuffix(thread, internalThreadID(alice, "boom")) {
		panic("scripted panic in State")
	}
	return p.scriptedRunner.State(ctx, thread)
}

func (p *panicRunner) Resume(ctx context.Context, thread string, ans agent.Answer) iter.Seq2[agent.Event, error] {
	p.mu.Lock()
	p.resumed++
	first := p.resumed == 1
	p.mu.Unlock()
	if first {
		return func(func(agent.Event, error) bool) { panic("scripted panic in Resume") }
	}
	return p.scriptedRunner.Resume(ctx, thread, ans)
}

// A handler's panic is a logged 500 in the API's error shape, and the
// server goes on serving.
func TestHandlerPanicIs500(t *testing.T) {
	pr := &panicRunner{scriptedRunner: newScriptedRunner()}
	var logged logBuf
	env := newTestEnv(t, func(c *Config) { c.Runner = pr; c.Logger = lineLogger(&logged) })
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "boom"})
	env.do(t, "POST", "/api/threads/boom/runs", keyAlice, map[string]any{"input": "hello", "stream": true})
	resp, body := env.do(t, "GET", "/api/threads/boom/state", keyAlice, nil)
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if e := decodeErr(t, body); e.Error.Type != "server_error" || e.Error.Code != "internal_error" || strings.Contains(e.Error.Message, "scripted panic") {
		t.Fatalf("error %+v", e.Error)
	}
	if !strings.Contains(logged.String(), "scripted panic in State") {
		t.Errorf("the panic was not logged: %s", logged.String())
	}
	if resp, _ := env.do(t, "GET", "/v1/models", keyAlice, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("the server stopped serving: %d", resp.StatusCode)
	}
}

// The fourth finding: a non-ASCII answer to a Chat Completions
// approval ("ɐ yes AP-…") crashed the request and left the approval
// "being carried out" (409) until a restart.
func TestChatApprovalAnswerUnicode(t *testing.T) {
	env := newTestEnv(t, nil)
	ask := func(thread string) (string, string) {
		t.Helper()
		c := goOpenAIClient(env, keyAlice)
		r, err := c.CreateChatCompletion(context.Background(), goopenai.ChatCompletionRequest{Model: "capgraph",
			Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "please write the corrector " + thread}}})
		if err != nil {
			t.Fatal(err)
		}
		text := r.Choices[0].Message.Content
		tok, ok := approvaltoken.Find(text)
		if !ok {
			t.Fatalf("no token in %q", text)
		}
		return text, tok
	}
	answer := func(question, first, reply string) (int, string) {
		t.Helper()
		resp, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, map[string]any{"model": "capgraph", "messages": []map[string]string{
			{"role": "user", "content": first}, {"role": "assistant", "content": question}, {"role": "user", "content": reply}}})
		return resp.StatusCode, string(body)
	}
	q, tok := ask("one")
	for _, reply := range []string{"ɐ yes " + tok, "ɐ yes " + tok} {
		status, body := answer(q, "please write the corrector one", reply)
		if status != http.StatusOK {
			t.Fatalf("%q: status %d: %s", reply, status, body)
		}
	}
	if env.runner.writes() != 0 {
		t.Fatal("an unclear answer wrote")
	}
	// Lower case, Unicode around it: the token is still recognised and
	// removed, leaving a clear yes.
	q, tok = ask("two")
	status, body := answer(q, "please write the corrector two", "  yes "+strings.ToLower(tok)+" 👍")
	if status != http.StatusOK || env.runner.writes() != 1 {
		t.Fatalf("status %d, writes %d: %s", status, env.runner.writes(), body)
	}
	if got := env.runner.resumes(); got[len(got)-1].Text != "yes 👍" || got[len(got)-1].By != "alice" {
		t.Errorf("answer %+v", got[len(got)-1])
	}
}

// A claim whose run fails before taking the answer releases its token: the
// next answer is carried out instead of meeting 409.
func TestFailedClaimReleasesToken(t *testing.T) {
	pr := &panicRunner{scriptedRunner: newScriptedRunner()}
	var logged logBuf
	env := newTestEnv(t, func(c *Config) { c.Runner = pr; c.Logger = lineLogger(&logged) })
	c := goOpenAIClient(env, keyAlice)
	r, err := c.CreateChatCompletion(context.Background(), goopenai.ChatCompletionRequest{Model: "capgraph",
		Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "write the corrector"}}})
	if err != nil {
		t.Fatal(err)
	}
	q := r.Choices[0].Message.Content
	tok, _ := approvaltoken.Find(q)
	msgs := []goopenai.ChatCompletionMessage{{Role: "user", Content: "write the corrector"}, {Role: "assistant", Content: q}, {Role: "user", Content: "yes " + tok}}
	_, err = c.CreateChatCompletion(context.Background(), goopenai.ChatCompletionRequest{Model: "capgraph", Messages: msgs})
	var ae *goopenai.APIError
	if !errors.As(err, &ae) || ae.HTTPStatusCode != http.StatusInternalServerError || !strings.Contains(ae.Message, "internal server error (reference ") {
		t.Fatalf("first answer (the run panics): %#v", err)
	}
	r, err = c.CreateChatCompletion(context.Background(), goopenai.ChatCompletionRequest{Model: "capgraph", Messages: msgs})
	if err != nil {
		t.Fatalf("second answer: %v (the token stayed claimed)", err)
	}
	if pr.writes() != 1 || !strings.Contains(r.Choices[0].Message.Content, "SR:HCM1 is now 1.5 A.") {
		t.Fatalf("writes %d: %q", pr.writes(), r.Choices[0].Message.Content)
	}
	if !strings.Contains(logged.String(), "scripted panic in Resume") {
		t.Errorf("the run's panic was not logged: %s", logged.String())
	}
}

// logBuf collects log lines; safe for concurrent use.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// bufLogger writes every log call as a line.
type bufLogger struct {
	w   *logBuf
	kvs []any
}

func lineLogger(w *logBuf) logging.Logger { return bufLogger{w: w} }

func (l bufLogger) line(level, msg string, kv ...any) {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	fmt.Fprintln(&l.w.b, level, msg, append(append([]any(nil), l.kvs...), kv...))
}
func (l bufLogger) Debug(msg string, kv ...any) { l.line("debug", msg, kv...) }
func (l bufLogger) Info(msg string, kv ...any)  { l.line("info", msg, kv...) }
func (l bufLogger) Warn(msg string, kv ...any)  { l.line("warn", msg, kv...) }
func (l bufLogger) Error(msg string, kv ...any) { l.line("error", msg, kv...) }
func (l bufLogger) With(kv ...any) logging.Logger {
	return bufLogger{w: l.w, kvs: append(append([]any(nil), l.kvs...), kv...)}
}
