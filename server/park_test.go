package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/native"
)

// flakyReadAgent is a real agent on SQLite whose one capability times out
// on its first call (RETRIABLE) and then answers; the retry waits delay.
func flakyReadAgent(t *testing.T, delay time.Duration, calls *atomic.Int32) *agent.Agent {
	t.Helper()
	read := capabilities.Define(capabilities.Definition{
		Name: "read_beam_current", Description: "Read the beam current of the storage ring",
		Provides: []string{"BEAM_CURRENT"},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			if calls.Add(1) == 1 {
				return capabilities.Output{}, fmt.Errorf("archiver: %w", context.DeadlineExceeded)
			}
			return capabilities.Result("BEAM_CURRENT", map[string]any{"mA": 301.2}, "beam current 301.2 mA"), nil
		},
	})
	store, err := sqlite.New(sqlite.Config{Path: filepath.Join(t.TempDir(), "capgraph.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	a, err := agent.New(agent.Config{Registry: newRegistry(t, read), Store: store,
		RetryPolicy: capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: delay, Jitter: capabilities.JitterNone}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Issue 18: a retry wait longer than ParkAfter holds no run in the
// process (a timer resumes it), and the client streaming the run gets every
// event of it, resumed under the same run id, numbered on.
func TestParkedRetryIsResumedByATimer(t *testing.T) {
	var calls atomic.Int32
	a := flakyReadAgent(t, 800*time.Millisecond, &calls)
	env := newTestEnv(t, func(c *Config) { c.Runner, c.ParkAfter = a, 100*time.Millisecond })
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "beam"})

	type got struct {
		body []byte
		code int
	}
	done := make(chan got, 1)
	go func() {
		req, _ := http.NewRequest("POST", env.http.URL+"/api/threads/beam/runs", strings.NewReader(`{"input":"What is the beam current?","stream":true}`))
		req.Header.Set("Authorization", "Bearer "+keyAlice)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- got{body: []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		done <- got{body: []byte(b.String()), code: resp.StatusCode}
	}()

	// While the retry waits, nothing runs: the thread is free of runs and
	// the thread's last checkpoint is between two steps.
	deadline := time.Now().Add(5 * time.Second)
	for calls.Load() < 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	thread := internalThreadID(caller{Principal: Principal{Name: "alice", Tenant: "lab"}}, "beam")
	var parked bool
	for time.Now().Before(deadline) && calls.Load() == 1 {
		if _, st, err := a.State(context.Background(), thread); err == nil && st == agent.RunCanceled && env.srv.runs.Running() == 0 {
			parked = true
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !parked {
		t.Fatalf("the run did not park during its 800 ms retry wait (calls %d, running %d)", calls.Load(), env.srv.runs.Running())
	}

	var g got
	select {
	case g = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end after the retry")
	}
	if g.code != http.StatusOK {
		t.Fatalf("%d %s", g.code, g.body)
	}
	frames := readSSE(t, strings.NewReader(string(g.body)))
	last := frames[len(frames)-1]
	if last.Event != "end" || !strings.Contains(last.Data, `"status":"answered"`) {
		t.Fatalf("last frame %+v", last)
	}
	var (
		runID   string
		waiting bool
		starts  int
	)
	for i, f := range frames[:len(frames)-1] {
		var ev agent.Event
		if err := json.Unmarshal([]byte(f.Data), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Seq != i+1 {
			t.Fatalf("frame %d has seq %d: the resumed run must number on", i, ev.Seq)
		}
		if runID == "" {
			runID = ev.RunID
		}
		if ev.RunID != runID {
			t.Fatalf("event %d of run %q, want %q throughout", i, ev.RunID, runID)
		}
		if ev.Type == agent.EventDone && ev.Status != agent.RunAnswered {
			t.Fatalf("a done event %+v before the end: the client must not see the park as the end", ev)
		}
		waiting = waiting || ev.Type == agent.EventStatus && strings.Contains(ev.Text, "waiting until")
		if ev.Type == agent.EventRunStart {
			starts++
		}
	}
	if !waiting || starts != 2 || calls.Load() != 2 {
		t.Fatalf("waiting status %v, %d run_start events, %d calls; want the wait said, 2 starts (run, resume), 2 calls", waiting, starts, calls.Load())
	}
	_, body := env.do(t, "GET", "/api/threads/beam/runs/"+runID, keyAlice, nil)
	if !strings.Contains(string(body), `"status":"answered"`) {
		t.Fatalf("run record %s", body)
	}
}

// Canceled while parked, the run ends at once (no timer left to wait
// for), its record canceled.
func TestParkedRunCanceled(t *testing.T) {
	var calls atomic.Int32
	a := flakyReadAgent(t, 30*time.Second, &calls)
	env := newTestEnv(t, func(c *Config) { c.Runner, c.ParkAfter = a, 100*time.Millisecond })
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "beam"})
	_, body := env.do(t, "POST", "/api/threads/beam/runs", keyAlice, map[string]any{"input": "What is the beam current?"})
	var started struct {
		Run native.RunInfo `json:"run"`
	}
	if err := json.Unmarshal(body, &started); err != nil || started.Run.ID == "" {
		t.Fatalf("%s", body)
	}
	thread := internalThreadID(caller{Principal: Principal{Name: "alice", Tenant: "lab"}}, "beam")
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, st, _ := a.State(context.Background(), thread); st == agent.RunCanceled && env.srv.runs.Running() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run did not park")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if resp, body := env.do(t, "POST", "/api/threads/beam/runs/"+started.Run.ID+"/cancel", keyAlice, nil); resp.StatusCode >= 300 {
		t.Fatalf("cancel %d %s", resp.StatusCode, body)
	}
	for {
		_, body = env.do(t, "GET", "/api/threads/beam/runs/"+started.Run.ID, keyAlice, nil)
		if strings.Contains(string(body), `"status":"canceled"`) && strings.Contains(string(body), `"finished":true`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the parked run did not end when canceled: %s", body)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if calls.Load() != 1 {
		t.Fatalf("the capability ran %d times, want 1", calls.Load())
	}
}

// startParked starts a streamed run on thread beam of env and waits until
// it parks; the stream's body comes on the returned channel when it ends.
func startParked(t *testing.T, env *testEnv, a *agent.Agent, calls *atomic.Int32) (runID string, stream <-chan string) {
	t.Helper()
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "beam"})
	req, _ := http.NewRequest("POST", env.http.URL+"/api/threads/beam/runs", strings.NewReader(`{"input":"What is the beam current?","stream":true}`))
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan string, 1)
	go func() {
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		out <- string(b)
	}()
	thread := internalThreadID(caller{Principal: Principal{Name: "alice", Tenant: "lab"}}, "beam")
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, st, _ := a.State(context.Background(), thread); st == agent.RunCanceled && calls.Load() == 1 && env.srv.runs.Running() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run did not park")
		}
		time.Sleep(5 * time.Millisecond)
	}
	recs, err := env.srv.records.ListRuns(context.Background(), runstore.Filter{Thread: thread, Limit: 1})
	if err != nil || len(recs) != 1 {
		t.Fatalf("records %v %v", recs, err)
	}
	return recs[0].ID, out
}

// Issue 27: a parked run is taken over when due like any recorded run; a
// turn the client started on its thread meanwhile replaced it, so it ends
// failed saying so, and its step is not run again.
func TestParkedRunReplacedByALaterTurn(t *testing.T) {
	var calls atomic.Int32
	a := flakyReadAgent(t, 600*time.Millisecond, &calls)
	env := newTestEnv(t, func(c *Config) { c.Runner, c.ParkAfter = a, 100*time.Millisecond })
	runID, stream := startParked(t, env, a, &calls)
	if resp, body := env.do(t, "POST", "/api/threads/beam/runs", keyAlice, map[string]any{"input": "What is the beam current now?", "stream": true}); resp.StatusCode != http.StatusOK ||
		!strings.Contains(string(body), `"status":"answered"`) {
		t.Fatalf("the later turn: %d %s", resp.StatusCode, body)
	}
	var body string
	select {
	case body = <-stream:
	case <-time.After(10 * time.Second):
		t.Fatal("the parked run's stream did not end when its retry was due")
	}
	frames := readSSE(t, strings.NewReader(body))
	last := frames[len(frames)-1]
	if last.Event != "end" || !strings.Contains(last.Data, `"status":"failed"`) || !strings.Contains(body, "replaced this one while it waited for its retry") {
		t.Fatalf("the replaced run's stream: %s", body)
	}
	_, rec := env.do(t, "GET", "/api/threads/beam/runs/"+runID, keyAlice, nil)
	if !strings.Contains(string(rec), `"status":"failed"`) || !strings.Contains(string(rec), "replaced this one") {
		t.Fatalf("the replaced run's record: %s", rec)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("the capability ran %d times; want 2 (the parked run's first try, the later turn's)", n)
	}
}

// Issue 27: the shutdown ends a parked run at once (its stream says so),
// leaves its record unfinished for the next start, and joins every
// goroutine the server started.
func TestShutdownEndsAParkedRun(t *testing.T) {
	var calls atomic.Int32
	a := flakyReadAgent(t, 30*time.Second, &calls)
	env := newTestEnv(t, func(c *Config) { c.Runner, c.ParkAfter = a, 100*time.Millisecond })
	runID, stream := startParked(t, env, a, &calls)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := env.srv.Shutdown(ctx); err != nil || time.Since(start) > 5*time.Second {
		t.Fatalf("Shutdown: %v after %s; want it at once (the run waits for its retry, it does not run)", err, time.Since(start))
	}
	body := <-stream
	if !strings.Contains(body, `"shutdown":true`) {
		t.Fatalf("the parked run's stream: %s", body)
	}
	rec, err := env.srv.records.GetRun(context.Background(), runID)
	if err != nil || rec.Status != runstore.Running {
		t.Fatalf("the parked run's record after the shutdown: %+v %v; want it running, for the next start", rec, err)
	}
	if err := env.srv.background.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}
