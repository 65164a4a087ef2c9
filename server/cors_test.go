package server

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

const portal = "https://portal.example.org"

func preflight(t *testing.T, env *testEnv, origin, method, headers string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodOptions, env.http.URL+"/v1/chat/completions", nil)
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", method)
	if headers != "" {
		req.Header.Set("Access-Control-Request-Headers", headers)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func TestCORS(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.CORSOrigins = []string{"HTTPS://Portal.Example.org"} })
	// The SDKs' preflight from a listed origin.
	resp := preflight(t, env, portal, "POST", "authorization, content-type, x-stainless-os, x-stainless-retry-count")
	h := resp.Header
	if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != portal ||
		h.Get("Access-Control-Allow-Methods") != "GET, POST, PATCH, DELETE, OPTIONS" || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "x-stainless-retry-count") ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "authorization") || h.Get("Access-Control-Max-Age") == "" {
		t.Fatalf("preflight %d %v", resp.StatusCode, h)
	}
	if h.Get("Access-Control-Allow-Credentials") != "" || !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
		t.Fatalf("credentials or Vary: %v", h)
	}
	// A browser MCP client's preflight for /mcp.
	if resp := preflight(t, env, portal, "POST", "content-type, mcp-protocol-version, mcp-session-id"); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("mcp preflight %d", resp.StatusCode)
	}
	// Refused preflights carry no CORS header at all.
	for _, tc := range []struct{ name, origin, method, headers string }{
		{"origin not listed", "https://evil.example.com", "POST", "authorization"},
		{"a look-alike origin", "https://portal.example.org.evil.com", "POST", ""},
		{"another scheme", "http://portal.example.org", "POST", ""},
		{"method", portal, "PUT", ""},
		{"header", portal, "POST", "authorization, x-forwarded-for"},
		{"a prefix alone", portal, "POST", "x-stainless-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := preflight(t, env, tc.origin, tc.method, tc.headers)
			if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("Access-Control-Allow-Methods") != "" {
				t.Fatalf("%d %v", resp.StatusCode, resp.Header)
			}
		})
	}
	// An actual request from the listed origin may be read by its page; from
	// another origin it is served (the key decides) but unreadable.
	resp, _ = env.do(t, "GET", "/v1/models", keyAlice, nil, "Origin", portal)
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != portal || !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "x-should-retry") {
		t.Fatalf("listed %d %v", resp.StatusCode, resp.Header)
	}
	resp, _ = env.do(t, "GET", "/v1/models", keyAlice, nil, "Origin", "https://evil.example.com")
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("unlisted %d %v", resp.StatusCode, resp.Header)
	}
	// An error answer is readable by the listed page too (the SDK shows it).
	resp, _ = env.do(t, "GET", "/v1/models", "sk-wrong", nil, "Origin", portal)
	if resp.StatusCode != 401 || resp.Header.Get("Access-Control-Allow-Origin") != portal {
		t.Fatalf("401 %v", resp.Header)
	}
}

func TestCORSDefaultsAndConfig(t *testing.T) {
	env := newTestEnv(t, nil) // no origins: nothing for anyone
	if resp := preflight(t, env, portal, "POST", "authorization"); resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("default %v", resp.Header)
	}
	star := newTestEnv(t, func(c *Config) { c.CORSOrigins = []string{"*"} })
	resp := preflight(t, star, "https://anyone.example", "GET", "authorization")
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("star %v", resp.Header)
	}
	for _, bad := range []string{"portal.example.org", "https://portal.example.org/chat", "https://a.org https://b.org", "ftp://x.org", "https://u:p@x.org", "'self'"} {
		if _, err := New(Config{Runner: newScriptedRunner(), Auth: Auth{CORSOrigins: []string{bad}}}); err == nil || !strings.Contains(err.Error(), "CORSOrigins[0]") {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
	if _, err := New(Config{Runner: newScriptedRunner(), Auth: Auth{FrameAncestors: []string{"*"}}}); err == nil {
		t.Error("frame ancestors * accepted")
	}
}

func TestPageCSP(t *testing.T) {
	env := newTestEnv(t, nil)
	for _, path := range []string{"/", "/app.js", "/style.css"} {
		resp, _ := env.do(t, "GET", path, "", nil)
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") || resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
			resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", path, resp.Header)
		}
	}
	// The page obeys it: no inline script, handlers or styles.
	_, page := env.do(t, "GET", "/", "", nil)
	scripts := regexp.MustCompile(`(?is)<script([^>]*)>(.*?)</script>`).FindAllSubmatch(page, -1)
	if len(scripts) == 0 {
		t.Fatal("no script tag")
	}
	for _, m := range scripts {
		if !strings.Contains(string(m[1]), "src=") || strings.TrimSpace(string(m[2])) != "" {
			t.Errorf("inline script: %s", m[0])
		}
	}
	if re := regexp.MustCompile(`(?i)\son[a-z]+\s*=|\sstyle\s*=|<style|javascript:`); re.Match(page) {
		t.Errorf("inline handler or style: %s", re.Find(page))
	}
	// Embedding can be allowed for named sites.
	env = newTestEnv(t, func(c *Config) { c.FrameAncestors = []string{portal} })
	resp, _ := env.do(t, "GET", "/", "", nil)
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.HasSuffix(csp, "frame-ancestors "+portal) || resp.Header.Get("X-Frame-Options") != "" {
		t.Fatalf("frame ancestors: %v", resp.Header)
	}
	// API answers are not the page: no CSP needed there.
	resp, _ = env.do(t, "GET", "/v1/models", keyAlice, nil)
	if resp.Header.Get("Content-Security-Policy") != "" {
		t.Fatalf("API with CSP: %v", resp.Header)
	}
}
