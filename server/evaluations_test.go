package server

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/eval"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
)

// recordedEvaluations lists what eval.Record kept in a store's record log,
// as package wiring's lister does.
type recordedEvaluations struct{ log checkpoint.RecordLog }

func (e recordedEvaluations) RecentEvaluations(ctx context.Context, limit int) ([]any, error) {
	runs, err := eval.Recent(ctx, e.log, "", limit)
	out := make([]any, len(runs))
	for i, r := range runs {
		out[i] = r
	}
	return out, err
}

// evaluationsEnv serves a server whose SQLite store holds two recorded
// evaluation runs of the control room's suite: one passed, then one with
// a failed case.
func evaluationsEnv(t *testing.T) *testEnv {
	t.Helper()
	store, err := sqlite.New(sqlite.Config{Path: filepath.Join(t.TempDir(), "capgraph.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	start := time.Date(2026, 11, 27, 21, 30, 0, 0, time.UTC)
	for i, passed := range []bool{true, false} {
		r := &eval.Report{Suite: "controlroom", Started: start.Add(time.Duration(i) * time.Hour), Passed: passed, Cases: []eval.CaseResult{
			{ID: "read/vacuum-sector-3", Runs: []eval.RunResult{{Passed: true}}},
			{ID: "write/q1-approved", Runs: []eval.RunResult{{Passed: passed}}},
		}}
		if err := eval.Record(context.Background(), store, r); err != nil {
			t.Fatal(err)
		}
	}
	return newTestEnv(t, func(c *Config) { c.Evaluations = recordedEvaluations{store} })
}

// GET /api/evaluations lists the recorded runs, newest first, limited; a
// bad limit is a 400 naming it; a server without a lister lists none.
func TestEvaluationsAPI(t *testing.T) {
	env := evaluationsEnv(t)
	var got struct {
		Evaluations []eval.Summary `json:"evaluations"`
	}
	resp, body := env.do(t, "GET", "/api/evaluations", keyAlice, nil)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got.Evaluations) != 2 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if e := got.Evaluations[0]; e.Passed || e.Suite != "controlroom" || e.Cases != 2 || len(e.Failed) != 1 || e.Failed[0] != "write/q1-approved" {
		t.Errorf("the newest run: %+v", e)
	}
	if !got.Evaluations[1].Passed {
		t.Errorf("the older run: %+v", got.Evaluations[1])
	}
	if resp, body := env.do(t, "GET", "/api/evaluations?limit=1", keyAlice, nil); resp.StatusCode != http.StatusOK || strings.Count(string(body), `"suite"`) != 1 {
		t.Errorf("limit 1: %d %s", resp.StatusCode, body)
	}
	if resp, body := env.do(t, "GET", "/api/evaluations?limit=1000", keyAlice, nil); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"limit"`) {
		t.Errorf("limit 1000: %d %s", resp.StatusCode, body)
	}
	if resp, _ := env.do(t, "GET", "/api/evaluations", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a key: %d", resp.StatusCode)
	}
	plain := newTestEnv(t, nil)
	if resp, body := plain.do(t, "GET", "/api/evaluations", keyAlice, nil); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"evaluations":[]`) {
		t.Errorf("no lister: %d %s", resp.StatusCode, body)
	}
}

// TestWebPageEvaluations: the page lists the recorded evaluation runs
// under the conversations (testdata/js/evaluations.test.mjs, Chromium).
func TestWebPageEvaluations(t *testing.T) {
	dir := filepath.Join("testdata", "js")
	node, chromium := chromiumOrSkip(t, dir)
	env := evaluationsEnv(t)
	shots := os.Getenv("CAPGRAPH_SCREENSHOT_DIR")
	if shots == "" {
		shots = t.TempDir()
	}
	cmd := exec.Command(node, "--test", "--test-reporter=spec", "evaluations.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CAPGRAPH_URL="+env.http.URL, "CAPGRAPH_KEY="+keyAlice, "CHROMIUM="+chromium, "SCREENSHOT_DIR="+shots)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("web page test failed: %v (screenshots in %s)\n%s", err, shots, out)
	}
	t.Logf("%s", out)
}
