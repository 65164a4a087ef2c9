package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"
)

// GET /page.json needs no key (the page shows its name and clock before
// one is entered): capgraph and UTC by default, the application's name,
// logo and zone when configured; GET /logo serves the logo as its type.
func TestPageIdentity(t *testing.T) {
	env := newTestEnv(t, nil)
	resp, body := env.do(t, "GET", "/page.json", "", nil)
	var p pageInfo
	if err := json.Unmarshal(body, &p); resp.StatusCode != http.StatusOK || err != nil || p != (pageInfo{Name: "capgraph", Logo: "favicon.svg", TimeZone: "UTC"}) {
		t.Fatalf("default %d %s", resp.StatusCode, body)
	}
	if resp, _ := env.do(t, "GET", "/logo", "", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("no logo configured: /logo %d", resp.StatusCode)
	}
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	env = newTestEnv(t, func(c *Config) {
		c.Page = Page{Name: "Linac Ops", Logo: []byte(webLogo), LogoType: "image/svg+xml", TimeZone: tokyo}
	})
	_, body = env.do(t, "GET", "/page.json", "", nil)
	if err := json.Unmarshal(body, &p); err != nil || p != (pageInfo{Name: "Linac Ops", Logo: "logo", TimeZone: "Asia/Tokyo"}) {
		t.Fatalf("configured %s", body)
	}
	resp, body = env.do(t, "GET", "/logo", "", nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/svg+xml" || string(body) != webLogo || resp.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("logo %d %v", resp.StatusCode, resp.Header)
	}
	_, err = New(Config{Runner: newScriptedRunner(), Page: Page{Logo: []byte("%PDF-1.7"), LogoType: "application/pdf"}})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "Page.LogoType" {
		t.Fatalf("a PDF logo: %v", err)
	}
}
