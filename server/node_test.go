package server

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/capgraph/capgraph/state"
)

// TestNodeClients runs testdata/js/clients.test.mjs (npm openai 6.x and
// @ag-ui/client 1.0, installed by scripts/setup/npm.sh) against a live
// server. In CI (CI=true) a missing node or npm install is a failure.
func TestNodeClients(t *testing.T) {
	dir := filepath.Join("testdata", "js")
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not installed"
	case !fileExists(filepath.Join(dir, "node_modules", "@ag-ui", "client", "package.json")) || !fileExists(filepath.Join(dir, "node_modules", "openai", "package.json")):
		missing = "npm packages are not installed (run: source scripts/setup/npm.sh)"
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
	env := newTestEnv(t, nil)
	cmd := exec.Command(node, "--test", "--test-reporter=spec", "clients.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CAPGRAPH_URL="+env.http.URL, "CAPGRAPH_KEY="+keyAlice, "NODE_ENV=test")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// TestNodeClientsSafety runs testdata/js/safety.test.mjs (the npm openai
// and @ag-ui/client packages) against a server over a real agent with
// writes disabled: every loosening request is refused, nothing is written.
func TestNodeClientsSafety(t *testing.T) {
	dir := filepath.Join("testdata", "js")
	node := nodeOrSkip(t, dir)
	env := newSafetyEnv(t, state.Options{ApprovalMode: state.ApprovalModeSelective})
	cmd := exec.Command(node, "--test", "--test-reporter=spec", "safety.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CAPGRAPH_URL="+env.http.URL, "CAPGRAPH_KEY="+keyAlice, "NODE_ENV=test")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	if w := env.plant.written(); len(w) != 0 {
		t.Fatalf("written: %v", w)
	}
}

// nodeOrSkip returns the node binary when it and the npm packages are
// installed; otherwise it skips (fails under CI=true).
func nodeOrSkip(t *testing.T, dir string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not installed"
	case !fileExists(filepath.Join(dir, "node_modules", "@ag-ui", "client", "package.json")) || !fileExists(filepath.Join(dir, "node_modules", "openai", "package.json")):
		missing = "npm packages are not installed (run: source scripts/setup/npm.sh)"
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
	return node
}

// TestWebPage drives the built-in page in headless Chromium
// (testdata/js/web.test.mjs, playwright-core) against a real agent
// (webenv_test.go). Chromium comes from scripts/setup/chromium.sh; in CI its
// absence is a failure. CAPGRAPH_SCREENSHOT_DIR keeps the screenshots.
func TestWebPage(t *testing.T) {
	dir := filepath.Join("testdata", "js")
	node, chromium := chromiumOrSkip(t, dir)
	env := newWebEnv(t)
	shots := os.Getenv("CAPGRAPH_SCREENSHOT_DIR") // to look at the page
	if shots == "" {
		shots = t.TempDir()
	}
	cmd := exec.Command(node, "--test", "--test-reporter=spec", "web.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CAPGRAPH_URL="+env.http.URL, "CAPGRAPH_KEY="+keyAlice, "CHROMIUM="+chromium, "SCREENSHOT_DIR="+shots)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("web page test failed: %v (screenshots in %s)\n%s", err, shots, out)
	}
	t.Logf("%s", out)
	// What the browser did reached the machine exactly as the page showed:
	// the approved write once (not the rejected or the expired one), the
	// stopped scan canceled.
	if w := env.plant.written(); len(w) != 1 || w[0] != 105 {
		t.Errorf("written %v, want the approved 105 A once", w)
	}
	env.scans.mu.Lock()
	defer env.scans.mu.Unlock()
	if env.scans.started != 1 || env.scans.canceled != 1 {
		t.Errorf("slow scans started %d, canceled %d; want the one scan, stopped", env.scans.started, env.scans.canceled)
	}
}

// chromiumOrSkip returns node and Chromium when they and playwright-core
// are installed; otherwise it skips (fails under CI=true).
func chromiumOrSkip(t *testing.T, dir string) (node, chromium string) {
	t.Helper()
	chromium = os.Getenv("CAPGRAPH_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not installed"
	case !fileExists(chromium):
		missing = chromium + " is not installed (run: source scripts/setup/chromium.sh)"
	case !fileExists(filepath.Join(dir, "node_modules", "playwright-core", "package.json")):
		missing = "npm packages are not installed (run: source scripts/setup/npm.sh)"
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
	return node, chromium
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
