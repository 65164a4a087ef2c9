package controlroom_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/demo/controlroom"
	"github.com/capgraph/capgraph/demo/controlroom/plant"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server"
	"github.com/capgraph/capgraph/state"
)

// TestNoBrowserActsForTheOperator is docs/safety.md's "No browser acts for
// the operator" in a real browser: the control room with writes enabled,
// an operator's write waiting for approval, and pages of other sites in
// Debian's Chromium (server/testdata/js/crossorigin.test.mjs) that try
// everything a page can make the operator's browser send without a
// preflight — no-cors fetches as text/plain, without a type and as a form
// body, and auto-submitted forms (text/plain carrying JSON, urlencoded,
// multipart) — against every route that changes something: create a
// thread, start the write, answer the approval with its real id (as if
// the attacker knew it), say "yes" with the real Chat Completions token,
// resume over AG-UI, ask over MCP, cancel. A page whose host name is
// re-pointed at the server (DNS rebinding) tries the same with JSON, as
// the server's own origin, and reads the threads. With and without API
// keys, nothing is created, run, answered or written: the store, the
// audit log, the run records and the plant are as before, and the server
// saw every attempt and refused it.
func TestNoBrowserActsForTheOperator(t *testing.T) {
	node, chromium, dir := browserOrSkip(t)
	for _, withKeys := range []bool{false, true} {
		name := "no keys"
		if withKeys {
			name = "keys"
		}
		t.Run(name, func(t *testing.T) { attackFromBrowser(t, node, chromium, dir, withKeys) })
	}
}

const q1Write = "Set the quadrupole Q1 current in the BTS line to 150 A"

// seen is a request the server was sent, and its answer.
type seen struct {
	Method, Path, Host, Origin, Referer, ContentType string
	Status                                           int
}

// recorder keeps every request the server answers.
type recorder struct {
	mu   sync.Mutex
	seen []seen
}

func (rec *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusOf{ResponseWriter: w, code: 200}
		h.ServeHTTP(sw, r)
		rec.mu.Lock()
		rec.seen = append(rec.seen, seen{r.Method, r.URL.Path, r.Host, r.Header.Get("Origin"), r.Header.Get("Referer"), r.Header.Get("Content-Type"), sw.code})
		rec.mu.Unlock()
	})
}

// attacks are the requests a page of evil.example or rebind.evil.example
// made the browser send.
func (rec *recorder) attacks() []seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []seen
	for _, s := range rec.seen {
		if strings.Contains(s.Host+s.Origin+s.Referer, "evil.example") {
			out = append(out, s)
		}
	}
	return out
}

type statusOf struct {
	http.ResponseWriter
	code int
}

func (s *statusOf) WriteHeader(code int) { s.code = code; s.ResponseWriter.WriteHeader(code) }
func (s *statusOf) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
func (s *statusOf) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// operator calls the server as the operator's own client does.
type operator struct {
	t    *testing.T
	base string
	key  string
}

func (o operator) do(method, path string, body any) (int, []byte) {
	o.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, o.base+path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if o.key != "" {
		req.Header.Set("Authorization", "Bearer "+o.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		o.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// world is what the attacks must leave as it is.
type world struct {
	Threads  []string
	Runs     []string
	Audit    []string
	Q1       float64
	Pending  string
	Approval string
}

func snapshot(t *testing.T, a *agent.Agent, p *plant.Plant, o operator) world {
	t.Helper()
	ctx := context.Background()
	var w world
	infos, err := a.Threads(ctx, checkpoint.ThreadFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		w.Threads = append(w.Threads, in.Metadata["thread"]+"@"+in.Latest.String())
	}
	slices.Sort(w.Threads)
	runs, err := a.RunStore().ListRuns(ctx, runstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		w.Runs = append(w.Runs, fmt.Sprintf("%s %s", r.ID, r.Status))
	}
	audit, err := a.Audit(ctx, agent.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range audit {
		w.Audit = append(w.Audit, fmt.Sprintf("%d %s %s", e.Seq, e.Event, e.Outcome))
	}
	if w.Q1, err = p.Setpoint("BTS:MAG:Q1:CURRENT"); err != nil {
		t.Fatal(err)
	}
	status, plan := o.do("GET", "/api/threads/op/plan", nil)
	var pl struct {
		Pending *state.Approval `json:"pending_approval"`
	}
	if status != 200 || json.Unmarshal(plan, &pl) != nil || pl.Pending == nil {
		t.Fatalf("the operator's approval is not pending: %d %s", status, plan)
	}
	w.Pending, w.Approval = pl.Pending.ID, pl.Pending.Summary
	return w
}

var tokenPattern = regexp.MustCompile(`AP-[A-Z2-7]{8}`)

func attackFromBrowser(t *testing.T, node, chromium, dir string, withKeys bool) {
	p, err := plant.New(plant.Config{Seed: controlroom.Seed})
	if err != nil {
		t.Fatal(err)
	}
	reg := capabilities.NewRegistry()
	if err := plant.Register(reg, p); err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.New(sqlite.Config{Path: filepath.Join(t.TempDir(), "capgraph.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	a, err := agent.New(agent.Config{Registry: reg, Store: store, Options: state.Options{WritesEnabled: true, ApprovalMode: state.ApprovalModeSelective}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{Runner: a, Heartbeat: time.Hour}
	o := operator{t: t}
	if withKeys {
		o.key = opsKey
		if cfg.Principals, err = server.ParseAPIKeys("ops=" + opsKey); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	hs := httptest.NewServer(rec.wrap(srv.Handler()))
	t.Cleanup(hs.Close)
	o.base = hs.URL

	// The operator asks for a write on two faces: natively (thread "op")
	// and over Chat Completions (an approval token). Both wait for a human.
	if status, body := o.do("POST", "/api/threads", map[string]any{"id": "op"}); status != http.StatusCreated {
		t.Fatalf("create op: %d %s", status, body)
	}
	status, body := o.do("POST", "/api/threads/op/runs", map[string]any{"input": q1Write})
	var run struct {
		Run struct {
			ID string `json:"id"`
		} `json:"run"`
	}
	if status != http.StatusAccepted || json.Unmarshal(body, &run) != nil || run.Run.ID == "" {
		t.Fatalf("the operator's write: %d %s", status, body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if status, plan := o.do("GET", "/api/threads/op/plan", nil); status == 200 && strings.Contains(string(plan), `"pending_approval":{`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the operator's write never asked for approval")
		}
		time.Sleep(50 * time.Millisecond)
	}
	status, chat := o.do("POST", "/v1/chat/completions", map[string]any{"model": "capgraph", "messages": []any{map[string]any{"role": "user", "content": q1Write}}})
	var completion struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if status != 200 || json.Unmarshal(chat, &completion) != nil || len(completion.Choices) != 1 {
		t.Fatalf("the operator's chat: %d %s", status, chat)
	}
	asked := completion.Choices[0].Message.Content
	token := tokenPattern.FindString(asked)
	if token == "" {
		t.Fatalf("no approval token in %q", asked)
	}
	// The store is read directly: wait for the records of the runs that
	// ended (the client is told of the end before its record is written).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		open, err := a.RunStore().ListRuns(context.Background(), runstore.Filter{Status: []runstore.Status{runstore.Queued, runstore.Running}})
		if err == nil && len(open) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs still open after they ended: %+v, %v", open, err)
		}
	}
	before := snapshot(t, a, p, o)
	if !strings.Contains(before.Pending, ":channel_write:") {
		t.Fatalf("pending %q, want the channel_write step", before.Pending)
	}

	// The attacker's site, on another origin (evil.example, mapped to this
	// machine by Chromium's resolver rules), knows everything there is to
	// know: the thread, the approval id, the run, the token.
	secrets := map[string]string{"target": hs.URL, "thread": "op", "approval": before.Pending, "run": run.Run.ID, "token": token, "question": q1Write, "asked": asked}
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/", "/rebind":
			_ = attackPage.Execute(w, secrets)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(attacker.Close)

	cmd := exec.Command(node, "--test", "--test-reporter=spec", "crossorigin.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CAPGRAPH_URL="+hs.URL, "ATTACKER_URL="+attacker.URL, "CHROMIUM="+chromium,
		"APPROVAL_ID="+before.Pending, "APPROVAL_TOKEN="+token)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("the browser's attacks: %v\n%s", err, out) // and what they did to the store, below
	} else {
		t.Logf("%s", out)
	}

	// The server saw the attempts — the test fails if the page made none —
	// and refused every one that could change something or read anything.
	attacks := rec.attacks()
	var writes, refused int
	for _, s := range attacks {
		switch {
		case s.Method == "GET" && s.Path == "/healthz" && !strings.Contains(s.Host, "evil.example"):
			// The page's probe: the server is reachable from it.
			if s.Status != 200 {
				t.Errorf("the probe got %d", s.Status)
			}
		case s.Status == http.StatusForbidden || s.Status == http.StatusUnsupportedMediaType || s.Status == http.StatusMisdirectedRequest:
			refused++
			if s.Method != "GET" && s.Method != "OPTIONS" {
				writes++
			}
		default:
			t.Errorf("not refused: %+v", s)
		}
	}
	if writes < 40 || refused < 50 {
		t.Errorf("the server saw %d refused attempts, %d of them writes; the page makes more:\n%+v", refused, writes, attacks)
	}
	after := snapshot(t, a, p, o)
	if !slices.Equal(after.Threads, before.Threads) || !slices.Equal(after.Runs, before.Runs) || !slices.Equal(after.Audit, before.Audit) ||
		after.Q1 != before.Q1 || after.Pending != before.Pending {
		t.Errorf("the attacks changed the world:\nbefore %+v\nafter  %+v", before, after)
	}
	// The operator still decides: the answer the attacks tried is theirs to
	// give, and it carries the write out once.
	status, body = o.do("POST", "/api/threads/op/approval", map[string]any{"approval_id": before.Pending, "approved": true, "stream": true})
	if status != 200 || !strings.Contains(string(body), "readback") {
		t.Errorf("the operator's approval: %d %s", status, body)
	}
	if q1, _ := p.Setpoint("BTS:MAG:Q1:CURRENT"); q1 != 150 {
		t.Errorf("Q1 after the operator's approval: %v, want 150", q1)
	}
}

// browserOrSkip returns node, Chromium and the npm packages' folder, or
// skips (fails under CI=true) when one is missing.
func browserOrSkip(t *testing.T) (node, chromium, dir string) {
	t.Helper()
	dir = filepath.Join("..", "..", "server", "testdata", "js")
	chromium = os.Getenv("CAPGRAPH_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not installed"
	case !exists(chromium):
		missing = chromium + " is not installed (run: source scripts/setup/chromium.sh)"
	case !exists(filepath.Join(dir, "node_modules", "playwright-core", "package.json")):
		missing = "npm packages are not installed (run: source scripts/setup/npm.sh)"
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
	return node, chromium, dir
}

// attackPage is the attacker's page. On evil.example it sends, to the
// server's address, every request a page may send without a preflight (and
// a few that need one); served as rebind.evil.example (the server's own
// port: a DNS-rebinding page) it calls the server as its own origin, with
// JSON, and reads the answers. window.report says what it did.
var attackPage = template.Must(template.New("attack").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>Cute cat pictures</title></head>
<body><p>Nothing to see here.</p>
<script>
const S = {{.}};
const rebind = location.hostname.startsWith("rebind.");
const base = rebind ? "" : S.target;
window.report = { mode: rebind ? "rebind" : "cross-site", attempts: 0, errors: [], results: [] };
const bodies = {
  createThread: ["/api/threads", { id: "evil-thread" }],
  startWrite: ["/api/threads/" + S.thread + "/runs", { input: S.question }],
  writeOnNewThread: ["/api/threads/evil-run/runs", { input: S.question }],
  approve: ["/api/threads/" + S.thread + "/approval", { approval_id: S.approval, approved: true }],
  chatYes: ["/v1/chat/completions", { model: "capgraph", messages: [{ role: "user", content: S.question }, { role: "assistant", content: S.asked }, { role: "user", content: "yes " + S.token }] }],
  chatWrite: ["/v1/chat/completions", { model: "capgraph", messages: [{ role: "user", content: S.question }] }],
  responses: ["/v1/responses", { model: "capgraph", input: S.question }],
  aguiResume: ["/agui", { threadId: S.thread, runId: "evil", messages: [], resume: [{ interruptId: S.approval, status: "resolved", payload: { approved: true } }] }],
  aguiWrite: ["/agui", { threadId: "evil-agui", runId: "evil", messages: [{ id: "u", role: "user", content: S.question }] }],
  mcpYes: ["/mcp", { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "ask", arguments: { thread_id: S.thread, question: "yes" } } }],
  mcpWrite: ["/mcp", { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "ask", arguments: { question: S.question } } }],
};

async function attempt(what, f) {
  window.report.attempts++;
  try { await f(); } catch (e) { window.report.errors.push(what + ": " + e.message); }
}

// submit posts a form into an iframe of its own and waits for the answer.
function submit(action, enctype, fields) {
  return new Promise((resolve) => {
    const name = "f" + Math.random().toString(36).slice(2);
    const frame = document.createElement("iframe");
    frame.name = name;
    frame.onload = () => resolve();
    document.body.appendChild(frame);
    const form = document.createElement("form");
    form.method = "POST";
    form.action = action;
    form.enctype = enctype;
    form.target = name;
    for (const [k, v] of fields) {
      const input = document.createElement("input");
      input.type = "hidden";
      input.name = k;
      input.value = v;
      form.appendChild(input);
    }
    document.body.appendChild(form);
    form.submit();
    setTimeout(resolve, 10000);
  });
}

async function crossSite() {
  // The server answers this page at all: a no-cors GET (changes nothing).
  await fetch(base + "/healthz", { mode: "no-cors" });
  for (const [what, [path, body]] of Object.entries(bodies)) {
    const json = JSON.stringify(body);
    const url = base + path;
    await attempt(what + " text/plain", () => fetch(url, { method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body: json }));
    await attempt(what + " untyped", () => fetch(url, { method: "POST", mode: "no-cors", body: new Blob([json]) }));
    await attempt(what + " urlencoded", () => fetch(url, { method: "POST", mode: "no-cors", body: new URLSearchParams({ json }) }));
    const fd = new FormData();
    fd.append("json", json);
    await attempt(what + " multipart", () => fetch(url, { method: "POST", mode: "no-cors", body: fd }));
    // A text/plain form whose body is the JSON: name + "=" + value.
    await attempt(what + " form text/plain", () => submit(url, "text/plain", [[json.slice(0, -1) + ',"pad":"', '"}']]));
    await attempt(what + " form urlencoded", () => submit(url, "application/x-www-form-urlencoded", [["json", json]]));
    await attempt(what + " form multipart", () => submit(url, "multipart/form-data", [["json", json]]));
  }
  const cancel = base + "/api/threads/" + S.thread + "/runs/" + S.run + "/cancel";
  await attempt("cancel", () => fetch(cancel, { method: "POST", mode: "no-cors" }));
  await attempt("cancel form", () => submit(cancel, "application/x-www-form-urlencoded", []));
  // What needs a preflight never gets past it.
  for (const [method, path, body] of [["DELETE", "/api/threads/" + S.thread, undefined], ["PATCH", "/api/threads/" + S.thread, '{"metadata":{"title":"pwned"}}'],
    ["POST", "/api/threads", '{"id":"evil-json"}']]) {
    await fetch(base + path, { method, headers: { "Content-Type": "application/json" }, body }).then(
      (r) => window.report.errors.push("a preflighted " + method + " was answered " + r.status), () => {});
  }
}

async function rebinding() {
  for (const path of ["/api/threads", "/api/threads/" + S.thread + "/plan", "/api/threads/" + S.thread + "/state", "/v1/models", "/api/info", "/healthz", "/app.js"]) {
    await attempt("read " + path, async () => {
      const r = await fetch(path);
      const text = await r.text();
      window.report.results.push({ what: "GET " + path, status: r.status, leaked: text.includes(S.approval) || text.includes('"op"') });
    });
  }
  for (const [what, [path, body]] of Object.entries(bodies)) {
    await attempt(what, async () => {
      const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" }, body: JSON.stringify(body) });
      const text = await r.text();
      window.report.results.push({ what, status: r.status, leaked: text.includes(S.approval) });
    });
  }
}

(rebind ? rebinding() : crossSite()).finally(() => { window.attackDone = true; });
</script>
</body></html>
`))
