package controlroom_test

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/demo/controlroom"
	"github.com/capgraph/capgraph/demo/controlroom/plant"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/server"
)

// TestWebPageControlRoom drives the built-in page over the control-room
// application as `capgraph serve` runs it (the simulated plant on its own
// clock, offline, SQLite, writes off by default) in headless Chromium:
// server/testdata/js/controlroom.test.mjs. Chromium and the npm packages come
// from scripts/setup; with CI=true their absence is a failure.
func TestWebPageControlRoom(t *testing.T) {
	dir := filepath.Join("..", "..", "server", "testdata", "js")
	chromium := os.Getenv("CAPGRAPH_CHROMIUM")
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
	a, err := agent.New(agent.Config{Registry: reg, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := server.ParseAPIKeys("ops=" + opsKey)
	if err != nil {
		t.Fatal(err)
	}
	examples := make([]string, len(plant.Demo))
	for i, d := range plant.Demo {
		examples[i] = d.Question
	}
	srv, err := server.New(server.Config{Runner: a, Examples: examples, Heartbeat: time.Hour, Auth: server.Auth{Principals: keys}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	shots := os.Getenv("CAPGRAPH_SCREENSHOT_DIR")
	if shots == "" {
		shots = t.TempDir()
	}
	cmd := exec.Command(node, "--test", "--test-reporter=spec", "controlroom.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CAPGRAPH_URL="+hs.URL, "CAPGRAPH_KEY="+opsKey, "CHROMIUM="+chromium, "SCREENSHOT_DIR="+shots)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("control-room page test failed: %v (screenshots in %s)\n%s", err, shots, out)
	}
	t.Logf("%s", out)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
