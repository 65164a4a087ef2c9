package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"strings"
	"testing"
)

// The page's start-up data needs a key like every other API route, and
// carries the configured demo questions.
func TestInfo(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.Examples = []string{"What is the beam current?"} })
	if resp, _ := env.do(t, http.MethodGet, "/api/info", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a key: %d, want 401", resp.StatusCode)
	}
	resp, body := env.do(t, http.MethodGet, "/api/info", keyAlice, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var got info
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Examples) != 1 || got.Examples[0] != "What is the beam current?" || len(got.Models) != 1 || got.Models[0] != "capgraph" {
		t.Errorf("info = %+v", got)
	}
}

// The page's libraries are the npm packages' files, unchanged: each file
// in web/vendor has the SHA-256 listed in web/vendor/README.md (which
// scripts/vendor-web.sh reproduces), and every script, style sheet and icon
// the page loads is one of its own files (no CDN).
func TestVendoredFiles(t *testing.T) {
	readme, err := fs.ReadFile(webFiles, "web/vendor/README.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([0-9a-f]{64})  (\S+)$`).FindAllStringSubmatch(string(readme), -1) {
		listed[m[2]] = m[1]
	}
	files, err := fs.Glob(webFiles, "web/vendor/*")
	if err != nil {
		t.Fatal(err)
	}
	code := 0
	for _, f := range files {
		name := path.Base(f)
		if !strings.HasSuffix(name, ".js") && !strings.HasSuffix(name, ".css") {
			continue
		}
		code++
		b, err := fs.ReadFile(webFiles, f)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if want, ok := listed[name]; !ok || hex.EncodeToString(sum[:]) != want {
			t.Errorf("%s: SHA-256 %x, README lists %q", name, sum, want)
		}
	}
	if code != len(listed) || code < 4 {
		t.Errorf("%d library files, %d listed", code, len(listed))
	}
	for _, lic := range []string{"marked.LICENSE", "dompurify.LICENSE", "uplot.LICENSE"} {
		if _, err := fs.Stat(webFiles, "web/vendor/"+lic); err != nil {
			t.Errorf("licence %s: %v", lic, err)
		}
	}
	page, err := fs.ReadFile(webFiles, "web/index.html")
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"#]+)"`).FindAllStringSubmatch(string(page), -1)
	if len(refs) < 6 {
		t.Fatalf("index.html refers to %d files", len(refs))
	}
	for _, r := range refs {
		if strings.Contains(r[1], "//") || strings.Contains(r[1], ":") {
			t.Errorf("index.html loads %q from elsewhere", r[1])
		} else if _, err := fs.Stat(webFiles, "web/"+r[1]); err != nil {
			t.Errorf("index.html refers to %q: %v", r[1], err)
		}
	}
}
