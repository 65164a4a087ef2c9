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
	"github.com/capgraph/capgraph/server/internal/native"
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
		scan := capabilities.Define(capabilities.Definition{Name: "slow_scan", Description: "Scan the undulator gap slowly",
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
	var out struct{ Run native.RunInfo }
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
	for _, r := range second.srv.runs.All() {
		recovered = r
	}
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
	if err := second.srv.runs.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	_, body = second.do(t, "GET", "/api/threads/scan", keyAlice, nil)
	if !strings.Contains(string(body), `"status":"answered"`) {
		t.Fatalf("thread after recovery: %s", body)
	}
	recs := second.audit.records(t)
	if len(recs) != 1 || recs[0].Principal != "alice" || recs[0].Tenant != "lab" || recs[0].Capability != "slow_scan" || recs[0].Event != agent.AuditStep || recs[0].Outcome != "" || recs[0].Message != "" {
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

// With a limit of 2 and 5 cut threads, RecoverRuns claims only 2 (the other
// 3 stay claimable by another replica), at most 2 recovered runs go on at
// once, and the periodic recovery picks up the rest until all 5 are done.
func TestRecoverRunsClaimsOnlyWhileThereIsRoom(t *testing.T) {
	be := replicaBackends[0] // memory: the bound is the server's, not the store's
	s1, s2 := be.Open(t)
	w := newScanWorld()
	first, _ := w.server(t, s1, agent.DefaultLeaseTTL, nil)
	threads := []string{"t0", "t1", "t2", "t3", "t4"}
	w.cut(t, first, threads...)
	waitRuns(t, first)
	first.http.Close()

	var (
		mu       sync.Mutex
		inflight int
		most     int
		gate     = make(chan struct{})
		entered  = make(chan struct{}, len(threads))
	)
	w.hold = func(ctx context.Context) {
		mu.Lock()
		inflight++
		most = max(most, inflight)
		mu.Unlock()
		entered <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
		}
		time.Sleep(5 * time.Millisecond) // so that later runs overlap if unbounded
		mu.Lock()
		inflight--
		mu.Unlock()
	}
	b, _ := w.server(t, s1, agent.DefaultLeaseTTL, func(c *Config) { c.MaxTotalRuns = 2; c.RecoverEvery = 20 * time.Millisecond })
	got, err := b.srv.RecoverRuns(context.Background())
	if err != nil || len(got) != 2 {
		t.Fatalf("RecoverRuns with a limit of 2: %v, %v; want 2 threads", got, err)
	}
	for range 2 {
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatal("a recovered run never reached slow_scan")
		}
	}
	// While both run, the server claims nothing more, and the other three
	// threads are still free for another replica to claim.
	if more, err := b.srv.RecoverRuns(context.Background()); err != nil || len(more) != 0 {
		t.Fatalf("RecoverRuns at the limit: %v, %v; want nothing", more, err)
	}
	other, err := agent.New(agent.Config{Registry: newRegistry(t, mustScan(t)), Store: s2})
	if err != nil {
		t.Fatal(err)
	}
	var free []string
	for cr, err := range other.ClaimUnfinished(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		free = append(free, cr.Thread)
		cr.Release()
	}
	if len(free) != len(threads)-2 {
		t.Fatalf("another replica could claim %v; want the %d threads left", free, len(threads)-2)
	}

	close(gate)
	ctx, cancel := context.WithCancel(context.Background())
	loopDone := make(chan struct{})
	go func() { defer close(loopDone); b.srv.recoverLoop(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for int(w.finished.Load()) < len(threads) {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("%d of %d threads finished", w.finished.Load(), len(threads))
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-loopDone
	waitRuns(t, b)
	mu.Lock()
	defer mu.Unlock()
	if most != 2 {
		t.Fatalf("at most %d recovered runs went on at once; want 2", most)
	}
	for _, th := range threads {
		_, body := b.do(t, "GET", "/api/threads/"+th, keyAlice, nil)
		if !strings.Contains(string(body), `"status":"answered"`) {
			t.Errorf("thread %s after recovery: %s", th, body)
		}
	}
}

// mustScan is a slow_scan capability that answers at once, for an agent
// that only claims.
func mustScan(t *testing.T) capabilities.Capability {
	t.Helper()
	scan := capabilities.Define(capabilities.Definition{Name: "slow_scan", Description: "Scan the undulator gap slowly",
		Provides: []string{"SCAN"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use to scan the undulator gap.",
			Examples: []capabilities.ClassifierExample{{Query: "scan the undulator gap", Result: true, Reason: "a scan"}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("SCAN", 12.5, "gap scanned"), nil
		}})
	return scan
}
