package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/capgraph/capgraph/server/internal/turns"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/state"
)

// rawExchange writes raw to the server's listener and reads one response.
// halfClose closes the write side after raw (the body ends early).
func rawExchange(t *testing.T, env *testEnv, raw string, halfClose bool) (*http.Response, string) {
	t.Helper()
	u, _ := url.Parse(env.http.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Far above the server's body idle timeout and below its ReadTimeout:
	// an answer within it came from the idle timeout.
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := conn.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	if halfClose {
		_ = conn.(*net.TCPConn).CloseWrite()
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
	return resp, b.String()
}

// apiErrorOf decodes an error body in the API's shape, failing t when the
// body is not one.
func apiErrorOf(t *testing.T, resp *http.Response, body string) apierror.Body {
	t.Helper()
	// /mcp answers a JSON-RPC error object; its data carries the same fields.
	var rpc struct {
		JSONRPC string `json:"jsonrpc"`
		Error   *struct {
			Message string `json:"message"`
			Data    struct {
				Type  string  `json:"type"`
				Param *string `json:"param"`
				Code  *string `json:"code"`
			} `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(body), &rpc) == nil && rpc.JSONRPC == "2.0" && rpc.Error != nil && rpc.Error.Data.Code != nil &&
		strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") && rpc.Error.Message != "" {
		return apierror.Body{Message: rpc.Error.Message, Type: rpc.Error.Data.Type, Param: rpc.Error.Data.Param, Code: rpc.Error.Data.Code}
	}
	var e struct {
		Error *apierror.Body `json:"error"`
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || json.Unmarshal([]byte(body), &e) != nil || e.Error == nil || e.Error.Message == "" || e.Error.Code == nil {
		t.Fatalf("%d %q is not the JSON error shape: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	return *e.Error
}

// noInternalDetail fails t when a message shows what only the server
// should know: addresses, Go error chains, file paths, internal ids.
func noInternalDetail(t *testing.T, msg string) {
	t.Helper()
	for _, bad := range []string{"127.0.0.1", "tcp", "i/o timeout", "read ", "json: ", "/work/", ".go:", "sqlite", "checkpoint:", "agent: ", "goroutine", "server.", "Go struct"} {
		if strings.Contains(msg, bad) {
			t.Errorf("message shows internal detail %q: %s", bad, msg)
		}
	}
}

// Issue 13 item 3: a body shorter than its Content-Length is a 408 after
// the body idle timeout (not a 500 after ReadTimeout), one that ends early
// a 400, neither showing an address or a Go error, on every route that
// reads a body.
func TestShortBodyIsRefusedQuickly(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.BodyIdleTimeout = 200 * time.Millisecond; c.ReadTimeout = time.Minute })
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "short"})
	for _, path := range []string{"/api/threads", "/api/threads/short/runs", "/api/threads/short/approval", "/v1/chat/completions", "/agui"} {
		for _, body := range []string{`{"id":"t1"}`, `{"input":"wh`, ``} {
			raw := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
				path, keyAlice, len(body)+100, body)
			resp, got := rawExchange(t, env, raw, false)
			e := apiErrorOf(t, resp, got)
			if resp.StatusCode != http.StatusRequestTimeout || *e.Code != "request_timeout" || !strings.Contains(e.Message, "Content-Length") {
				t.Errorf("%s %q stalled: %d %s", path, body, resp.StatusCode, got)
			}
			noInternalDetail(t, e.Message)
			resp, got = rawExchange(t, env, raw, true)
			e = apiErrorOf(t, resp, got)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Message, "ended after") {
				t.Errorf("%s %q cut: %d %s", path, body, resp.StatusCode, got)
			}
			noInternalDetail(t, e.Message)
		}
	}
	if n := len(env.runner.runs()); n != 0 {
		t.Fatalf("%d runs started from truncated bodies", n)
	}
}

// Issue 27: a body shorter than its Content-Length holds up no answer on
// a route that does not read it — a wrong key (401), a path no route serves
// (404), a method the path does not take (405), the MCP handler refusing
// the request — for longer than the body idle timeout, as on the routes
// that read it.
func TestShortBodyOnRoutesThatDoNotReadIt(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.BodyIdleTimeout = 200 * time.Millisecond; c.ReadTimeout = time.Minute })
	for _, tc := range []struct {
		name, method, path, key, extra string
		status                         int
	}{
		{"wrong key", "POST", "/api/threads", "sk-wrong-0123456789", "", http.StatusUnauthorized},
		{"no such route", "POST", "/api/nothing", keyAlice, "", http.StatusNotFound},
		{"no such method", "PUT", "/v1/chat/completions", keyAlice, "", http.StatusMethodNotAllowed},
		{"mcp refuses", "POST", "/mcp", keyAlice, "Accept: text/plain\r\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"id":"t1"}`
			raw := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s",
				tc.method, tc.path, tc.key, strings.ReplaceAll(tc.extra, `\r\n`, "\r\n"), len(body)+100, body)
			start := time.Now()
			resp, got := rawExchange(t, env, raw, false)
			if took := time.Since(start); took > 2*time.Second {
				t.Fatalf("answered after %s (body idle timeout 200ms): %d %s", took, resp.StatusCode, got)
			}
			if resp.StatusCode < 400 || tc.status != 0 && resp.StatusCode != tc.status {
				t.Fatalf("%d %s, want %d", resp.StatusCode, got, tc.status)
			}
		})
	}
}

// Issue 13 item 4: traversal paths and invalid UTF-8 in the static page's
// paths are a 404 in the JSON shape, never a 500 and never a file outside
// the page.
func TestStaticPathsRefuseTraversal(t *testing.T) {
	env := newTestEnv(t, nil)
	for _, p := range []string{
		"/%c0%ae%c0%ae/%c0%ae%c0%ae/etc/passwd", "/%c0%ae%c0%ae/", "/%ff", "/..%2f..%2fetc%2fpasswd", "/%2e%2e/%2e%2e/etc/passwd",
		"/.%2e/server.go", "/app.js%00.png", "/..\\..\\etc\\passwd", "/web/../../go.mod", "/%252e%252e/etc/passwd", "/nope.js", "/a//b",
	} {
		raw := "GET " + p + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
		resp, body := rawExchange(t, env, raw, false)
		if resp.StatusCode >= 500 || strings.Contains(body, "root:") || strings.Contains(body, "module ") || strings.Contains(body, "package server") {
			t.Errorf("GET %s: %d %s", p, resp.StatusCode, body)
			continue
		}
		if resp.StatusCode >= 400 {
			if e := apiErrorOf(t, resp, body); resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusBadRequest {
				t.Errorf("GET %s: %d %+v", p, resp.StatusCode, e)
			}
		}
	}
	// The page itself is still served.
	resp, body := env.do(t, "GET", "/", "", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body2s(body), "<html") {
		t.Fatalf("GET /: %d", resp.StatusCode)
	}
}

func body2s(b []byte) string { return strings.ToLower(string(b)) }

// Issue 13 item 5: thread ids outside the alphabet are refused with 400
// naming the rule, wherever an id comes from; ids inside it work on every
// route, and the URLs the server builds reach them.
func TestThreadIDAlphabet(t *testing.T) {
	env := newTestEnv(t, nil)
	for _, id := range []string{"..", ".", "a?b", "a#b", "a b", "a/b", "-lead", ".hidden", "ünï", "a\x00b", strings.Repeat("x", turns.MaxThreadIDLen+1), "a%2Fb", "a\\b"} {
		resp, body := env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": id})
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "ASCII letters, digits") || !strings.Contains(string(body), `"param":"id"`) {
			t.Errorf("create %q: %d %s", id, resp.StatusCode, body)
		}
		resp, body = env.do(t, "POST", "/agui", keyAlice, map[string]any{"threadId": id, "messages": []any{map[string]any{"id": "u", "role": "user", "content": "hi"}}})
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "ASCII letters, digits") {
			t.Errorf("agui %q: %d %s", id, resp.StatusCode, body)
		}
	}
	for _, p := range []string{"/api/threads/a%20b", "/api/threads/a%3Fb/state", "/api/threads/%2E%2E/runs", "/api/threads/a%23b/plan"} {
		resp, body := env.do(t, "GET", p, keyAlice, nil)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "a thread id is 1 to 128 characters") {
			t.Errorf("GET %s: %d %s", p, resp.StatusCode, body)
		}
	}
	// A trusted frontend's chat id makes a thread id too.
	resp, body := env.do(t, "POST", "/v1/chat/completions", keyWebUI, chatBody("capgraph", false, user("hi")), "X-OpenWebUI-Chat-Id", "c 1/../x")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "X-OpenWebUI-Chat-Id") {
		t.Errorf("chat id with a space: %d %s", resp.StatusCode, body)
	}
	for _, id := range []string{"a:b", "t.1", "A-b_c:d.e", "0", strings.Repeat("y", turns.MaxThreadIDLen)} {
		if resp, body := env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": id}); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %q: %d %s", id, resp.StatusCode, body)
		}
		resp, body := env.do(t, "POST", "/api/threads/"+url.PathEscape(id)+"/runs", keyAlice, map[string]any{"input": "What is the beam current?"})
		var out struct {
			EventsURL string `json:"events_url"`
		}
		if resp.StatusCode != http.StatusAccepted || json.Unmarshal(body, &out) != nil {
			t.Fatalf("run on %q: %d %s", id, resp.StatusCode, body)
		}
		if resp, body := env.do(t, "GET", out.EventsURL, keyAlice, nil); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "event: end") {
			t.Fatalf("events_url %s of %q: %d %s", out.EventsURL, id, resp.StatusCode, body)
		}
	}
}

// Issue 13 item 6: every answer under /v1 and /api — the mux's own 404 and
// 405 included — is the JSON error shape; a 405 says which methods work.
func TestRouteMissesInTheErrorShape(t *testing.T) {
	env := newTestEnv(t, nil)
	for _, tc := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{"GET", "/v1/chat/completions", 405, "POST"},
		{"PUT", "/v1/chat/completions", 405, "POST"},
		{"DELETE", "/v1/models", 405, "GET, HEAD"},
		{"POST", "/v1/models/capgraph", 405, "GET, HEAD"},
		{"GET", "/v1/nope", 404, ""},
		{"GET", "/v1", 404, ""},
		{"GET", "/v1/", 404, ""},
		{"PUT", "/api/threads", 405, "GET, HEAD, POST"},
		{"PUT", "/api/threads/t1", 405, "GET, HEAD, PATCH, DELETE"}, // PATCH renames (issue 14)
		{"DELETE", "/api/threads/t1/runs", 405, "GET, HEAD, POST"},
		{"GET", "/api/threads/t1/approval", 405, "POST"},
		{"GET", "/api/nope", 404, ""},
		{"GET", "/api", 404, ""},
		{"POST", "/api/threads/t1/runs/r1/events", 405, "GET, HEAD"},
		{"GET", "/agui", 405, "POST"},
		{"POST", "/healthz", 405, "GET, HEAD"},
		{"PUT", "/", 405, "GET, HEAD"},
		{"OPTIONS", "/v1/chat/completions", 405, "POST"},
	} {
		resp, body := env.do(t, tc.method, tc.path, keyAlice, nil)
		e := apiErrorOf(t, resp, string(body))
		if resp.StatusCode != tc.status || resp.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d (Allow %q) %s; want %d (Allow %q)", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), body, tc.status, tc.allow)
		}
		wantCode := map[int]string{404: "not_found", 405: "method_not_allowed"}[tc.status]
		if *e.Code != wantCode {
			t.Errorf("%s %s: code %s, want %s", tc.method, tc.path, *e.Code, wantCode)
		}
	}
	// Without a key the route still answers 401 in the same shape.
	resp, body := env.do(t, "POST", "/v1/chat/completions", "", chatBody("capgraph", false, user("hi")))
	if e := apiErrorOf(t, resp, string(body)); resp.StatusCode != http.StatusUnauthorized || *e.Code != "invalid_api_key" {
		t.Fatalf("no key: %d %s", resp.StatusCode, body)
	}
}

// Issue 13 item 7: a body must be exactly one JSON value, the native API's
// fields must be known and well typed, and options are checked before
// anything starts: each is a 400 naming what is wrong, and nothing runs.
func TestMalformedBodiesAreRefusedBeforeAnythingStarts(t *testing.T) {
	env := newSafetyEnv(t, state.Options{ApprovalMode: state.ApprovalModeSelective})
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "m1"})
	for _, tc := range []struct {
		path, body, param, says string
	}{
		{"/api/threads/m1/runs", `{"input":"What is the beam current?"} garbage`, "body", "unexpected data after the JSON value"},
		{"/api/threads/m1/runs", `{"input":"What is the beam current?"}{"input":"again"}`, "body", "exactly one JSON value"},
		{"/api/threads/m1/runs", `{"input":"What is the beam current?","options":{"approval_mode":"bogus"}}`, "options.approval_mode", `must be "disabled", "selective" or "all_capabilities", got "bogus"`},
		{"/api/threads/m1/runs", `{"input":"What is the beam current?","options":{"writes_enabled":"yes"}}`, "options.writes_enabled", "expected true or false, got a string"},
		{"/api/threads/m1/runs", `{"input":"What is the beam current?","options":{"writes_enable":false}}`, "options.writes_enable", "unknown field"},
		{"/api/threads/m1/runs", `{"input":"What is the beam current?","strem":true}`, "strem", "unknown field"},
		{"/api/threads/m1/runs", `{"input":42}`, "input", "expected a string, got a number"},
		{"/api/threads/m1/runs", `{"input":"x","stream":"yes"}`, "stream", "expected true or false, got a string"},
		{"/api/threads/m1/runs", `[1,2]`, "body", "expected an object, got an array"},
		{"/api/threads/m1/runs", `{"input":"wh`, "body", "ends inside a value"},
		{"/api/threads/m1/runs", `{"input":"x",}`, "body", "invalid JSON at byte"},
		{"/api/threads/m1/runs", ``, "body", "a JSON object is required"},
		{"/api/threads", `{"id":"m2"} x`, "body", "unexpected data"},
		{"/api/threads", `{"id":"m2","metadata":{"a":1}}`, "metadata", "expected a string, got a number"},
		{"/api/threads/m1/approval", `{"approval_id":"a1","approved":"yes"}`, "approved", "expected true or false"},
		{"/v1/chat/completions", `{"model":"capgraph","messages":[{"role":"user","content":"What is the beam current?"}]} trailing`, "body", "unexpected data"},
		{"/v1/chat/completions", `{"model":"capgraph","messages":"hi"}`, "messages", "expected an array"},
		{"/agui", `{"threadId":"m3","messages":[{"id":"u","role":"user","content":"What is the beam current?"}]}]`, "body", "unexpected data"},
		{"/agui", `{"threadId":"m3","messages":[{"id":"u","role":"user","content":"What is the beam current?"}],"forwardedProps":{"options":{"approval_mode":"bogus"}}}`, "options.approval_mode", "must be"},
	} {
		resp, body := env.do(t, "POST", tc.path, keyAlice, tc.body)
		e := apiErrorOf(t, resp, string(body))
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Message, tc.says) || tc.param != "" && (e.Param == nil || *e.Param != tc.param) {
			t.Errorf("%s %s: %d %s; want 400 saying %q about %q", tc.path, tc.body, resp.StatusCode, body, tc.says, tc.param)
		}
		noInternalDetail(t, e.Message)
	}
	env.nothingRan(t, alice, "m1")
	env.nothingRan(t, alice, "m3")
	if resp, body := env.do(t, "GET", "/api/threads/m2", keyAlice, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a refused create made thread m2: %d %s", resp.StatusCode, body)
	}
}
