package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
)

// A run cut by a cancel is resumed by the next server on the same store as
// a server run of its owner: audited under alice, visible, answered.
func TestRecoverRunsThroughTheServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "recover.db")
	var mu sync.Mutex
	calls := 0
	started := make(chan struct{}, 1)
	envOn := func() *testEnv {
		store, err := sqlite.New(sqlite.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = store.Close() })
		scan, err := capabilities.Define(capabilities.Definition{Name: "slow_scan", Description: "Scan the undulator gap slowly",
			Provides: []string{"SCAN"},
			ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use to scan the undulator gap.",
				Examples: []capabilities.ClassifierExample{{Query: "scan the undulator gap", Result: true, Reason: "a scan"}}},
			Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
				mu.Lock()
				calls++
				first := calls == 1
				mu.Unlock()
				if first { // the first execution is cut
					started <- struct{}{}
					<-ctx.Done()
					return capabilities.Output{}, ctx.Err()
				}
				return capabilities.Result("SCAN", 12.5, "gap scanned: optimum 12.5 mm"), nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		reg := newRegistry(t, scan)
		a, err := agent.New(agent.Config{Registry: reg, Store: store})
		if err != nil {
			t.Fatal(err)
		}
		return newTestEnv(t, func(c *Config) { c.Runner = a })
	}
	first := envOn()
	first.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "scan"})
	resp, body := first.do(t, "POST", "/api/threads/scan/runs", keyAlice, map[string]any{"input": "Scan the undulator gap"})
	var out struct{ Run runInfo }
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(body, &out) != nil {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the scan never started")
	}
	first.do(t, "POST", "/api/threads/scan/runs/"+out.Run.ID+"/cancel", keyAlice, nil)
	first.do(t, "GET", "/api/threads/scan/runs/"+out.Run.ID+"/events", keyAlice, nil) // until it ended
	first.http.Close()

	second := envOn()
	threads, err := second.srv.RecoverRuns(context.Background())
	if err != nil || len(threads) != 1 {
		t.Fatalf("recovered %v %v", threads, err)
	}
	// The owner can follow the recovered run like any run of hers (the
	// stream ends with the run); another principal cannot.
	var recovered *run
	second.srv.runs.mu.Lock()
	for _, r := range second.srv.runs.runs {
		recovered = r
	}
	second.srv.runs.mu.Unlock()
	if recovered == nil || recovered.ClientThread != "scan" || recovered.Owner.Principal.Name != "alice" {
		t.Fatalf("recovered run %+v; want alice's run on scan", recovered)
	}
	resp, body = second.do(t, "GET", "/api/threads/scan/runs/"+recovered.ID+"/events", keyAlice, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"slow_scan"`) || !strings.Contains(string(body), `"answered"`) {
		t.Fatalf("following the recovered run: %d %s", resp.StatusCode, body)
	}
	if resp, _ := second.do(t, "GET", "/api/threads/scan/runs/"+recovered.ID, keyBob, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("bob looking at alice's recovered run: %d; want 404", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := second.srv.runs.wait(ctx); err != nil {
		t.Fatal(err)
	}
	_, body = second.do(t, "GET", "/api/threads/scan", keyAlice, nil)
	if !strings.Contains(string(body), `"status":"answered"`) {
		t.Fatalf("thread after recovery: %s", body)
	}
	recs := second.audit.records(t)
	if len(recs) != 1 || recs[0].Principal != "alice" || recs[0].Tenant != "lab" || recs[0].Capability != "slow_scan" || recs[0].Outcome != "ok" {
		t.Fatalf("audit of the recovered run: %+v", recs)
	}
	// Nothing is left to recover.
	if threads, err := second.srv.RecoverRuns(context.Background()); err != nil || len(threads) != 0 {
		t.Fatalf("second recovery %v %v", threads, err)
	}
	// A runner that cannot list unfinished runs says so.
	if _, err := newTestEnv(t, nil).srv.RecoverRuns(context.Background()); !errors.Is(err, ErrNoRecovery) {
		t.Fatalf("scripted runner: %v", err)
	}
}
