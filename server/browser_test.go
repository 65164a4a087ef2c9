package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/server/internal/turns"
	"github.com/capgraph/capgraph/state"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// No browser acts for the operator (browser.go, docs/safety.md): the Host
// rule on every route family, the Origin and Content-Type rules on every
// request that may change something, with and without keys. The browser
// itself is driven in demo/controlroom (TestNoBrowserActsForTheOperator).

// guardRoute is one route of a family, as a client that may use it calls it.
type guardRoute struct {
	family, method, path string
	body                 any
	// want is the status the request gets when its Host is allowed.
	want int
}

// guardRoutes are the routes, each thread route on thread id.
func guardRoutes(id string) []guardRoute {
	chat := chatBody("capgraph", false, user("What is the beam current?"))
	initialize := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}}
	return []guardRoute{
		{"health", "GET", "/healthz", nil, 200},
		{"page", "GET", "/", nil, 200},
		{"page asset", "GET", "/app.js", nil, 200},
		{"OpenAI models", "GET", "/v1/models", nil, 200},
		{"OpenAI chat completions", "POST", "/v1/chat/completions", chat, 200},
		{"OpenAI responses", "POST", "/v1/responses", map[string]any{"model": "capgraph", "input": "What is the beam current?"}, 200},
		{"native create thread", "POST", "/api/threads", map[string]any{"id": id}, 201},
		{"native threads", "GET", "/api/threads", nil, 200},
		{"native thread", "GET", "/api/threads/" + id, nil, 200},
		{"native runs", "POST", "/api/threads/" + id + "/runs", map[string]any{"input": "What is the beam current?"}, 202},
		{"native state", "GET", "/api/threads/" + id + "/state", nil, 200},
		{"native plan", "GET", "/api/threads/" + id + "/plan", nil, 200},
		{"native approval", "POST", "/api/threads/" + id + "/approval", map[string]any{"approval_id": "step:1:1:0:set_q1:000000000000", "approved": true}, 409},
		{"native artifacts", "GET", "/api/threads/" + id + "/artifacts", nil, 200},
		{"native outcomes", "GET", "/api/threads/" + id + "/outcomes", nil, 200},
		{"evaluations", "GET", "/api/evaluations", nil, 200},
		{"audit", "GET", "/api/audit", nil, 403},
		{"info", "GET", "/api/info", nil, 200},
		{"AG-UI", "POST", "/agui", map[string]any{"threadId": "agui-" + id, "messages": []any{map[string]any{"id": "u", "role": "user", "content": "What is the beam current?"}}}, 200},
		{"MCP", "POST", "/mcp", initialize, 200},
		{"metrics", "GET", "/metrics", nil, 200},
		{"signed artifact", "GET", "/v1/artifacts/guarded/none.svg?exp=1&sig=x", nil, 404},
		{"preflight", "OPTIONS", "/v1/chat/completions", nil, 204},
	}
}

// send sends one request with the given Host (empty: the server's own
// address) and headers; a body is JSON unless a header says otherwise.
func (e *testEnv) send(t *testing.T, method, path, host, key string, body any, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		if s, ok := body.(string); ok {
			rd = strings.NewReader(s)
		} else {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
	}
	req, err := http.NewRequest(method, e.http.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if method == "POST" && path == "/mcp" {
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	if method == "OPTIONS" {
		req.Header.Set("Origin", portal)
		req.Header.Set("Access-Control-Request-Method", "POST")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header[http.CanonicalHeaderKey(hdr[i])] = []string{hdr[i+1]}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// wantRefused fails t unless the answer is status in the error shape with
// code and param. (The message may quote what the client sent, an
// address too, and names the setting that would allow it.)
func wantRefused(t *testing.T, what string, resp *http.Response, body []byte, status int, code, param string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("%s: %d %s, want %d", what, resp.StatusCode, body, status)
		return
	}
	// /mcp answers JSON-RPC errors (mcphttp/rpcerrors.go); apiErrorOf reads their data.
	e := apiErrorOf(t, resp, string(body))
	if *e.Code != code || e.Param == nil || *e.Param != param {
		t.Errorf("%s: code %s param %v, want %s %s: %s", what, *e.Code, e.Param, code, param, e.Message)
	}
}

// guardEnvs are the server with keys (alice) and without (loopback, the
// default setup), each with metrics, a listed CORS origin and one allowed
// host name.
func guardEnvs(t *testing.T) map[string]struct {
	env *testEnv
	key string
} {
	mod := func(c *Config) {
		c.Metrics = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "# metrics\n") })
		c.CORSOrigins = []string{portal}
		c.AllowedHosts = []string{"capgraph.example.org"}
	}
	return map[string]struct {
		env *testEnv
		key string
	}{
		"keys":    {newTestEnv(t, mod), keyAlice},
		"no keys": {newTestEnv(t, func(c *Config) { mod(c); c.Principals = nil }), ""},
	}
}

// TestDNSRebindingOnEveryRouteFamily: a request whose Host names another
// site (a page re-pointed at the server) is 421 on every route, before
// anything else, with and without keys; the loopback names, with any port,
// and the allowed host names reach every route.
func TestDNSRebindingOnEveryRouteFamily(t *testing.T) {
	for name, ge := range guardEnvs(t) {
		t.Run(name, func(t *testing.T) {
			env := ge.env
			port := strings.TrimPrefix(env.http.URL[strings.LastIndexByte(env.http.URL, ':'):], ":")
			for _, rt := range guardRoutes("refused") {
				for _, host := range []string{"rebind.evil.example", "rebind.evil.example:" + port, "capgraph.example.org.evil.example", "localhost.evil.example:" + port, "evil.example:80"} {
					resp, body := env.send(t, rt.method, rt.path, host, ge.key, rt.body)
					wantRefused(t, rt.family+" at "+host, resp, body, http.StatusMisdirectedRequest, "unknown_host", "Host")
					if resp.Header.Get("Access-Control-Allow-Origin") != "" {
						t.Errorf("%s at %s: a refused request carries CORS headers", rt.family, host)
					}
				}
			}
			// The refused requests ran nothing and created nothing.
			if _, list := env.send(t, "GET", "/api/threads", "", ge.key, nil); strings.Contains(string(list), "refused") {
				t.Errorf("a refused request created a thread: %s", list)
			}
			if runs := env.runner.runs(); len(runs) != 0 {
				t.Errorf("refused requests ran %d turns", len(runs))
			}
			for i, host := range []string{"", "localhost:" + port, "LOCALHOST:" + port, "[::1]:" + port, "127.0.0.2:" + port, "capgraph.example.org", "Capgraph.Example.org:8443"} {
				for _, rt := range guardRoutes("served-" + string(rune('a'+i))) {
					if resp, body := env.send(t, rt.method, rt.path, host, ge.key, rt.body); resp.StatusCode != rt.want {
						t.Errorf("%s at %q: %d %s, want %d", rt.family, host, resp.StatusCode, body, rt.want)
					}
				}
			}
		})
	}
}

// TestAllowedHostsRule: what Config.AllowedHosts accepts, and which names
// the server adds itself (a specific listen address, PublicURL).
func TestAllowedHostsRule(t *testing.T) {
	keys := []Principal{{Name: "a", KeySHA256: HashKey(keyAlice)}}
	for _, tc := range []struct {
		name  string
		cfg   Config
		allow []string
		deny  []string
	}{
		{"loopback only", Config{}, []string{"localhost", "localhost:1", "127.0.0.1:8080", "[::1]:8080", "127.9.9.9"},
			[]string{"10.0.0.5", "localhost.", "evil.example", "", "[::ffff:127.0.0.1]x", "local host"}},
		{"names with and without port", Config{Auth: Auth{AllowedHosts: []string{"capgraph.example.org", "proxy.lab:8443", "10.0.0.5", "[fd00::5]:8080"}}},
			[]string{"capgraph.example.org:9", "CAPGRAPH.example.org", "proxy.lab:8443", "10.0.0.5:8080", "[fd00::5]:8080"},
			[]string{"proxy.lab", "proxy.lab:8080", "10.0.0.6", "[fd00::5]:8081", "x.capgraph.example.org", "capgraph.example.org.evil.example"}},
		{"a specific listen address", Config{Addr: "10.0.0.5:8080", Auth: Auth{Principals: keys}}, []string{"10.0.0.5:8080", "10.0.0.5"}, []string{"10.0.0.6:8080"}},
		{"public URL", Config{Artifacts: Artifacts{PublicURL: "https://capgraph.example.org"}}, []string{"capgraph.example.org", "capgraph.example.org:443"}, []string{"evil.example"}},
		{"any", Config{Auth: Auth{AllowedHosts: []string{"*"}, Principals: keys}}, []string{"evil.example", "anything.at.all:1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Runner = newScriptedRunner()
			srv, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range tc.allow {
				if !srv.hosts.hosts.Allows(h) {
					t.Errorf("%q refused", h)
				}
			}
			for _, h := range tc.deny {
				if srv.hosts.hosts.Allows(h) {
					t.Errorf("%q allowed", h)
				}
			}
		})
	}
	// A server on every interface with no name to answer to would refuse
	// every client but this machine's: New says so, naming the setting.
	_, err := New(Config{Runner: newScriptedRunner(), Addr: "0.0.0.0:8080", Auth: Auth{Principals: keys}})
	if err == nil || !strings.Contains(err.Error(), "AllowedHosts") || !strings.Contains(err.Error(), "server.allowed_hosts") {
		t.Errorf("0.0.0.0 without allowed hosts: %v", err)
	}
}

// TestMCPBehindAllowedHosts: /mcp behind a reverse proxy that passes its
// public name as Host (nginx's proxy_set_header Host $host), on this
// machine: the MCP SDK's own guard refused every such request (403); the
// server's Host rule answers it when the name is allowed, and refuses it
// (421) when not.
func TestMCPBehindAllowedHosts(t *testing.T) {
	for _, allowed := range []bool{true, false} {
		env := newMCPEnvWith(t, state.Options{}, func(c *Config) {
			if allowed {
				c.AllowedHosts = []string{"agent.example.org"}
			}
		})
		target, _ := url.Parse(env.http.URL)
		proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = "agent.example.org"
		}})
		t.Cleanup(proxy.Close)
		c := sdk.NewClient(&sdk.Implementation{Name: "proxied-assistant", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: proxy.URL + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{keyAlice}}}, nil)
		if !allowed {
			if err == nil || !strings.Contains(err.Error(), "421") && !strings.Contains(err.Error(), "Misdirected") {
				t.Fatalf("not allowed: connected (%v)", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out, text, isErr := ask(t, cs, map[string]any{"question": "What is the beam current?"})
		cs.Close()
		if isErr || !strings.Contains(text, "401.5 mA") || out.ThreadID == "" {
			t.Fatalf("behind the proxy: %+v %s", out, text)
		}
	}
}

// TestWritesFromAnotherSiteAreRefused: what a page on another site can
// make a browser send — a no-cors fetch, a form, text/plain — is refused
// before any handler runs, with and without keys; the server's own page,
// a listed origin and clients that are no browser are served.
func TestWritesFromAnotherSiteAreRefused(t *testing.T) {
	for name, ge := range guardEnvs(t) {
		t.Run(name, func(t *testing.T) {
			env, key := ge.env, ge.key
			host := strings.TrimPrefix(env.http.URL, "http://")
			var writes []guardRoute
			for _, rt := range guardRoutes("guarded") {
				if !safeMethod(rt.method) {
					writes = append(writes, rt)
				}
			}
			writes = append(writes,
				guardRoute{"native rename", "PATCH", "/api/threads/guarded", map[string]any{"metadata": map[string]string{"title": "x"}}, 200},
				guardRoute{"native cancel", "POST", "/api/threads/guarded/runs/run-none/cancel", nil, 404},
				guardRoute{"native delete", "DELETE", "/api/threads/guarded-2", nil, 404})
			for _, rt := range writes {
				// A foreign page, as the browser names it.
				for _, hdr := range [][]string{
					{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"},
					{"Origin", "https://evil.example"},
					{"Origin", "null"},
					{"Origin", "http://" + host + ".evil.example"},
					{"Origin", "http://localhost:1", "Sec-Fetch-Site", "same-site"}, // another port of this machine
					{"Origin", "http://" + host, "Sec-Fetch-Site", "cross-site"},    // the browser knows better
				} {
					resp, body := env.send(t, rt.method, rt.path, "", key, rt.body, hdr...)
					wantRefused(t, rt.family+" from "+hdr[1], resp, body, http.StatusForbidden, "cross_origin", "Origin")
				}
				resp, body := env.send(t, rt.method, rt.path, "", key, rt.body, "Sec-Fetch-Site", "cross-site")
				wantRefused(t, rt.family+" cross-site without Origin", resp, body, http.StatusForbidden, "cross_origin", "Sec-Fetch-Site")
				// Bodies a page may send without a preflight, and none.
				if rt.body != nil {
					for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "", "application/json-seq", "text/json"} {
						resp, body := env.send(t, rt.method, rt.path, "", key, rt.body, "Content-Type", ct)
						wantRefused(t, rt.family+" as "+ct, resp, body, http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type")
					}
				}
				if rt.body == nil {
					resp, body := env.send(t, rt.method, rt.path, "", key, nil, "Content-Type", "text/plain")
					wantRefused(t, rt.family+" empty text/plain", resp, body, http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type")
				}
			}
			// Served: no browser, this server's own page (by the browser's
			// word or by Origin = Host), a listed origin, JSON with a charset.
			for i, hdr := range [][]string{
				nil,
				{"Sec-Fetch-Site", "same-origin", "Origin", "http://" + host},
				{"Origin", "http://" + host},
				{"Origin", strings.Replace("http://"+host, "127.0.0.1", "LOCALHOST", 1)}, // not Host: refused below
				{"Origin", portal, "Sec-Fetch-Site", "cross-site"},
				{"Content-Type", "application/json; charset=utf-8"},
			} {
				id := "served-" + string(rune('a'+i))
				resp, body := env.send(t, "POST", "/api/threads", "", key, map[string]any{"id": id}, hdr...)
				want := http.StatusCreated
				if i == 3 {
					want = http.StatusForbidden
				}
				if resp.StatusCode != want {
					t.Errorf("%v: %d %s, want %d", hdr, resp.StatusCode, body, want)
				}
			}
			// The refused requests created nothing.
			_, list := env.send(t, "GET", "/api/threads", "", key, nil)
			for _, id := range []string{`"guarded-2"`, `"agui-guarded"`} {
				if strings.Contains(string(list), id) {
					t.Errorf("a refused request created %s: %s", id, list)
				}
			}
			if strings.Count(string(list), `"served-`) != 5 {
				t.Errorf("served threads: %s", list)
			}
		})
	}
}

// TestForwardedIdentityMustBeText: a trusted frontend's forwarded user or
// chat id that is not UTF-8, holds a control character or is oversized is a
// 400 naming the header on every API (it went into the store's metadata
// and failed there with a 500).
func TestForwardedIdentityMustBeText(t *testing.T) {
	env := newTestEnv(t, nil)
	routes := []guardRoute{}
	for _, rt := range guardRoutes("forwarded") {
		if rt.path != "/healthz" && rt.method != "OPTIONS" && !strings.HasPrefix(rt.path, "/v1/artifacts") && rt.path != "/" && rt.path != "/app.js" && rt.path != "/metrics" {
			routes = append(routes, rt)
		}
	}
	for _, header := range []string{headerUserID, headerChatID} {
		for _, bad := range []string{"\xff", "u\xc0\xae", "\xed\xa0\x80", "a\tb", strings.Repeat("u", 300)} {
			for _, rt := range routes {
				resp, body := env.send(t, rt.method, rt.path, "", keyWebUI, rt.body, header, bad)
				wantRefused(t, rt.family+" "+header+" "+turns.QuoteForClient(bad), resp, body, http.StatusBadRequest, "invalid_request", header)
			}
		}
	}
	// From a key that is no trusted frontend the headers are ignored.
	if resp, body := env.send(t, "POST", "/api/threads", "", keyAlice, map[string]any{"id": "ignored"}, headerUserID, "\xff"); resp.StatusCode != http.StatusCreated {
		t.Errorf("untrusted key: %d %s", resp.StatusCode, body)
	}
	// Text is fine.
	if resp, body := env.send(t, "POST", "/api/threads", "", keyWebUI, map[string]any{"id": "text"}, headerUserID, "jürgen@example.org", headerChatID, "3f2a-chat"); resp.StatusCode != http.StatusCreated {
		t.Errorf("text: %d %s", resp.StatusCode, body)
	}
}
