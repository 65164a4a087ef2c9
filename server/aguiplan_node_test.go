package server

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestNodeAGUIPlanAgrees runs testdata/js/aguiplan.test.mjs (@ag-ui/client)
// against a server over a real agent: at the end of every run the client's
// shared state has the plan GET /api/threads/{id}/plan returns.
func TestNodeAGUIPlanAgrees(t *testing.T) {
	dir := filepath.Join("testdata", "js")
	node := nodeOrSkip(t, dir)
	env := newWebEnv(t)
	cmd := exec.Command(node, "--test", "--test-reporter=spec", "aguiplan.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CAPGRAPH_URL="+env.http.URL, "CAPGRAPH_KEY="+keyAlice, "NODE_ENV=test")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
