package server

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/postgres/pgtest"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/native"
)

// replicaBackends return two handles on one shared store, as two replicas hold:
// memory, and PostgreSQL (under CI=true a missing database fails the test).
var replicaBackends = pgtest.ReplicaBackends()

// scanWorld is one capability, slow_scan, shared by every replica of a
// test: while cutting is set, an execution blocks until its run is
// canceled (as a crash cuts it); otherwise it answers at once.
type scanWorld struct {
	cutting  atomic.Bool
	started  chan string // idempotency key of each blocked execution
	finished atomic.Int32
	// hold, when set, runs before each execution that is not cut answers.
	hold func(ctx context.Context)
}

func newScanWorld() *scanWorld { return &scanWorld{started: make(chan string, 16)} }

// server returns a server whose agent works on store, leasing for ttl.
func (w *scanWorld) server(t *testing.T, store checkpoint.Store, ttl time.Duration, mod func(*Config)) (*testEnv, *agent.Agent) {
	t.Helper()
	scan := capabilities.Define(capabilities.Definition{Name: "slow_scan", Description: "Scan the undulator gap slowly",
		Provides: []string{"SCAN"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use to scan the undulator gap.",
			Examples: []capabilities.ClassifierExample{{Query: "scan the undulator gap", Result: true, Reason: "a scan"}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			if w.cutting.Load() {
				w.started <- st.IdempotencyKey
				<-ctx.Done()
				return capabilities.Output{}, ctx.Err()
			}
			if w.hold != nil {
				w.hold(ctx)
			}
			w.finished.Add(1)
			return capabilities.Result("SCAN", 12.5, "gap scanned: optimum 12.5 mm"), nil
		}})
	reg := newRegistry(t, scan)
	a, err := agent.New(agent.Config{Registry: reg, Store: store, Leases: agent.LeaseConfig{TTL: ttl}})
	if err != nil {
		t.Fatal(err)
	}
	return newTestEnv(t, func(c *Config) {
		c.Runner = a
		if mod != nil {
			mod(c)
		}
	}), a
}

// cut starts a scan on each thread of env as alice and cancels it while
// slow_scan runs, leaving the runs unfinished.
func (w *scanWorld) cut(t *testing.T, env *testEnv, threads ...string) {
	t.Helper()
	w.cutting.Store(true)
	defer w.cutting.Store(false)
	for _, th := range threads {
		env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": th})
		resp, body := env.do(t, "POST", "/api/threads/"+th+"/runs", keyAlice, map[string]any{"input": "Scan the undulator gap"})
		var out struct{ Run native.RunInfo }
		if resp.StatusCode != http.StatusAccepted || json.Unmarshal(body, &out) != nil {
			t.Fatalf("start on %s: %d %s", th, resp.StatusCode, body)
		}
		select {
		case <-w.started:
		case <-time.After(10 * time.Second):
			t.Fatalf("the scan on %s never started", th)
		}
		env.do(t, "POST", "/api/threads/"+th+"/runs/"+out.Run.ID+"/cancel", keyAlice, nil)
		env.do(t, "GET", "/api/threads/"+th+"/runs/"+out.Run.ID+"/events", keyAlice, nil) // until it ended
		if env.srv.cluster != nil {
			// Replicas never resume a run canceled on request: make the
			// record what a crash leaves, running under nobody's lease.
			if _, err := env.srv.records.UpdateRun(context.Background(), out.Run.ID, runstore.Update{Status: runstore.Running}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// cutScan cuts a scan on thread "scan" on a first server over store, as a
// crash leaves it, and returns the thread's internal id.
func (w *scanWorld) cutScan(t *testing.T, store checkpoint.Store, ttl time.Duration) string {
	t.Helper()
	first, a := w.server(t, store, ttl, nil)
	w.cut(t, first, "scan")
	waitRuns(t, first)
	first.http.Close()
	internal, err := a.Unfinished(context.Background())
	if err != nil || len(internal) != 1 {
		t.Fatalf("Unfinished = %v, %v", internal, err)
	}
	return internal[0]
}

// serveInBackground runs env's server with Serve (its claim and recovery
// loops included) until the test ends.
func serveInBackground(t *testing.T, env *testEnv) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- env.srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

// runsOf returns the runs a server started, by status.
func runsOf(s *Server) map[agent.RunStatus]int {
	out := map[agent.RunStatus]int{}
	for _, r := range s.runs.All() {
		st, _, _ := r.Result()
		out[st]++
	}
	return out
}

func waitRuns(t *testing.T, envs ...*testEnv) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, e := range envs {
		if err := e.srv.runs.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// Two servers over one store recovering at once resume each cut thread
// exactly once between them, as audited server runs of the owner, and
// neither starts a run that fails because the other holds the thread.
func TestServersRecoverEachCutRunOnce(t *testing.T) {
	for _, be := range replicaBackends {
		t.Run(be.Name, func(t *testing.T) {
			s1, s2 := be.Open(t)
			w := newScanWorld()
			first, _ := w.server(t, s1, agent.DefaultLeaseTTL, nil)
			threads := []string{"t0", "t1", "t2", "t3", "t4", "t5"}
			w.cut(t, first, threads...)
			waitRuns(t, first)
			first.http.Close()

			// Processes sharing a store leave each other's fresh records
			// alone (RecoverGrace, as capgraph serve sets it): without it,
			// one took the record of a run the other had just started as a
			// crashed one (1 run in 40 on the memory store).
			grace := func(c *Config) { c.RecoverGrace = agent.DefaultLeaseTTL }
			b, _ := w.server(t, s1, agent.DefaultLeaseTTL, grace)
			c, _ := w.server(t, s2, agent.DefaultLeaseTTL, grace)
			var (
				wg    sync.WaitGroup
				got   [2][]string
				errs  [2]error
				start = make(chan struct{})
			)
			for i, e := range []*testEnv{b, c} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					got[i], errs[i] = e.srv.RecoverRuns(context.Background())
				}()
			}
			close(start)
			wg.Wait()
			if errs[0] != nil || errs[1] != nil {
				t.Fatalf("RecoverRuns: %v / %v", errs[0], errs[1])
			}
			waitRuns(t, b, c)
			all := slices.Sorted(slices.Values(append(slices.Clone(got[0]), got[1]...)))
			if len(all) != len(threads) || len(slices.Compact(slices.Clone(all))) != len(threads) {
				t.Fatalf("b recovered %v, c recovered %v; want each of %d threads exactly once", got[0], got[1], len(threads))
			}
			if n := int(w.finished.Load()); n != len(threads) {
				t.Fatalf("slow_scan finished %d times for %d threads", n, len(threads))
			}
			for _, e := range []*testEnv{b, c} {
				for st, n := range runsOf(e.srv) {
					if st != agent.RunAnswered {
						t.Errorf("a recovering server has %d runs with status %q; want only answered runs", n, st)
					}
				}
			}
			audited := map[string]int{}
			for _, e := range []*testEnv{b, c} {
				for _, rec := range e.audit.records(t) {
					if rec.Principal != "alice" || rec.Tenant != "lab" || rec.Capability != "slow_scan" || rec.Event != agent.AuditStep || rec.Outcome != "" || rec.Message != "" {
						t.Errorf("audit record %+v; want alice's slow_scan step, ended without error", rec)
					}
					audited[rec.Thread]++
				}
			}
			if len(audited) != len(threads) {
				t.Fatalf("audited threads %v; want %d, once each", audited, len(threads))
			}
			for th, n := range audited {
				if n != 1 {
					t.Errorf("thread %s audited %d times", th, n)
				}
			}
			for _, th := range threads {
				_, body := b.do(t, "GET", "/api/threads/"+th, keyAlice, nil)
				if !strings.Contains(string(body), `"status":"answered"`) {
					t.Errorf("thread %s after recovery: %s", th, body)
				}
			}
		})
	}
}

// A replica that dies holding a thread's lease leaves the cut run to it
// until the lease expires; a server with RecoverEvery then takes it over
// by itself, as an audited server run.
func TestServerTakesOverAfterTheLeaseTTL(t *testing.T) {
	// Long enough that a loaded machine cannot let the dead replica's lease
	// expire before RecoverRuns is first asked (which must find nothing).
	const ttl = 1500 * time.Millisecond
	for _, be := range replicaBackends {
		t.Run(be.Name, func(t *testing.T) {
			s1, s2 := be.Open(t)
			w := newScanWorld()
			internal := w.cutScan(t, s1, ttl)
			// The dead replica's lease, which nobody renews.
			if _, err := s1.AcquireLease(context.Background(), internal, "dead-replica", ttl); err != nil {
				t.Fatal(err)
			}
			live, _ := w.server(t, s2, ttl, func(c *Config) { c.RecoverEvery = ttl / 3 })
			if got, err := live.srv.RecoverRuns(context.Background()); err != nil || len(got) != 0 {
				t.Fatalf("RecoverRuns under the dead replica's lease: %v, %v; want nothing", got, err)
			}
			serveInBackground(t, live)
			deadline := time.Now().Add(20 * ttl)
			for w.finished.Load() == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("no take-over within %s of a %s lease", 20*ttl, ttl)
				}
				time.Sleep(ttl / 10)
			}
			waitRuns(t, live)
			recs := live.audit.records(t)
			if len(recs) != 1 || recs[0].Principal != "alice" || recs[0].Capability != "slow_scan" || recs[0].Event != agent.AuditStep || recs[0].Outcome != "" || recs[0].Message != "" {
				t.Fatalf("audit of the taken-over run: %+v", recs)
			}
			if st := runsOf(live.srv); st[agent.RunAnswered] != 1 || len(st) != 1 {
				t.Fatalf("runs of the live server: %v; want one answered", st)
			}
			_, body := live.do(t, "GET", "/api/threads/scan", keyAlice, nil)
			if !strings.Contains(string(body), `"status":"answered"`) {
				t.Fatalf("thread after take-over: %s", body)
			}
		})
	}
}

// A run claimed from the queue whose thread another replica holds only a
// moment (its recovery checking the thread, then letting go) starts once
// the thread is free, and RecoverRuns reports it, instead of going back
// to the queue unreported (TestServersRecoverEachCutRunOnce failed 1 run
// in 3 on it).
func TestRecoveredRunWaitsOutABriefHold(t *testing.T) {
	for _, be := range replicaBackends {
		t.Run(be.Name, func(t *testing.T) {
			s1, s2 := be.Open(t)
			w := newScanWorld()
			internal := w.cutScan(t, s1, agent.DefaultLeaseTTL)
			hold, err := s1.AcquireLease(context.Background(), internal, "checking-replica", agent.DefaultLeaseTTL)
			if err != nil {
				t.Fatal(err)
			}
			time.AfterFunc(120*time.Millisecond, func() { _ = s1.ReleaseLease(context.Background(), hold) })
			live, _ := w.server(t, s2, agent.DefaultLeaseTTL, nil)
			got, err := live.srv.RecoverRuns(context.Background())
			if live.srv.cluster == nil {
				// One process alone leaves a held thread to its holder.
				if err != nil || len(got) != 0 {
					t.Fatalf("RecoverRuns under a held lease: %v, %v; want nothing", got, err)
				}
				return
			}
			if err != nil || !slices.Equal(got, []string{internal}) {
				t.Fatalf("RecoverRuns = %v, %v; want %v once the brief hold ends", got, err, internal)
			}
			waitRuns(t, live)
			if n := w.finished.Load(); n != 1 {
				t.Fatalf("slow_scan finished %d times; want once", n)
			}
			if st := runsOf(live.srv); st[agent.RunAnswered] != 1 || len(st) != 1 {
				t.Fatalf("runs of the recovering server: %v; want one answered", st)
			}
		})
	}
}

// A replica killed after its run's turn was answered, before it stored the
// run's last events and ended its record, leaves followers on other
// replicas the answer: the replica that takes the record over stores the
// turn's message and the end, and the record ends done.
func TestTakenOverAnsweredRunGivesFollowersTheAnswer(t *testing.T) {
	r := pgtest.Replicas(t, 2)
	w := newScanWorld()
	first, _ := w.server(t, r[0], agent.DefaultLeaseTTL, nil)
	first.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "scan"})
	resp, body := first.do(t, "POST", "/api/threads/scan/runs", keyAlice, map[string]any{"input": "Scan the undulator gap"})
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("start: %d %s", resp.StatusCode, body)
	}
	waitRuns(t, first)
	first.http.Close()
	// What the killed replica left: the run's record running under its
	// expired lease, none of its events stored.
	b, err := json.Marshal(runInput{Kind: kindResume})
	if err != nil {
		t.Fatal(err)
	}
	sp := runSpec{c: alice, source: "native", clientThread: "scan"}
	if _, created, err := first.srv.records.CreateRun(context.Background(), runstore.Record{ID: "run-lost-events", Thread: internalThreadID(alice, "scan"),
		Status: runstore.Queued, Input: b, Labels: sp.labels(), Owner: "killed-replica", Attempt: 1}); err != nil || !created {
		t.Fatalf("record: %v", err)
	}
	if _, err := first.srv.records.UpdateRun(context.Background(), "run-lost-events", runstore.Update{Status: runstore.Running}); err != nil {
		t.Fatal(err) // running, its lease gone
	}

	live, _ := w.server(t, r[1], agent.DefaultLeaseTTL, nil)
	if got, err := live.srv.RecoverRuns(context.Background()); err != nil || len(got) != 0 {
		t.Fatalf("RecoverRuns = %v, %v; want nothing started (the turn was answered)", got, err)
	}
	if rec, err := live.srv.records.GetRun(context.Background(), "run-lost-events"); err != nil || rec.Status != runstore.Done {
		t.Fatalf("record after RecoverRuns: %+v, %v; want done", rec, err)
	}
	if n := w.finished.Load(); n != 1 {
		t.Fatalf("slow_scan ran %d times; want once (before the kill)", n)
	}
	other, _ := w.server(t, r[0], agent.DefaultLeaseTTL, nil)
	for _, follower := range []*testEnv{live, other} {
		resp, body = follower.do(t, "GET", "/api/threads/scan/runs/run-lost-events/events", keyAlice, nil)
		text := string(body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(text, "event: message") || !strings.Contains(text, "gap scanned") ||
			!strings.Contains(text, `"status":"answered"`) {
			t.Fatalf("a follower's stream of the taken-over run: %d\n%s\nwant the answer's message and the end", resp.StatusCode, text)
		}
	}
	rec, err := live.srv.records.GetRun(context.Background(), "run-lost-events")
	if err != nil || rec.Status != runstore.Done {
		t.Fatalf("record %+v, %v; want done", rec, err)
	}
}

// A recovered run whose thread stays held past a third of the TTL goes back
// to the queue; a client that was following it on this replica follows it
// from the store instead of seeing it fail, and gets its end once the run
// is claimed again, after the holder let go.
func TestRecoveredRunHandedBackKeepsItsFollowers(t *testing.T) {
	const ttl = 900 * time.Millisecond
	r := pgtest.Replicas(t, 2)
	w := newScanWorld()
	internal := w.cutScan(t, r[0], ttl)
	recs, err := r[0].ListRuns(context.Background(), runstore.Filter{Thread: internal, Limit: 1})
	if err != nil || len(recs) != 1 {
		t.Fatalf("records: %v, %v", recs, err)
	}
	runID := recs[0].ID
	// Another replica holds the thread for longer than the recovered run
	// waits for it (TTL/3).
	hold, err := r[0].AcquireLease(context.Background(), internal, "busy-replica", agent.DefaultLeaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	live, _ := w.server(t, r[1], ttl, func(c *Config) { c.RecoverEvery = ttl / 3 })
	recovered := make(chan []string, 1)
	go func() {
		got, _ := live.srv.RecoverRuns(context.Background())
		recovered <- got
	}()
	// A client follows the recovered run on this replica while it waits.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ru, ok := live.srv.runs.ByID(runID); ok && !ru.Following() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the recovered run never started on the live server")
		}
		time.Sleep(2 * time.Millisecond)
	}
	streamed := make(chan string, 1)
	go func() {
		_, body := live.do(t, "GET", "/api/threads/scan/runs/"+runID+"/events", keyAlice, nil)
		streamed <- string(body)
	}()
	if got := <-recovered; len(got) != 0 {
		t.Fatalf("RecoverRuns reported %v; want nothing started while the thread is held", got)
	}
	// The holder lets go; the live server's claim loop takes the run again.
	if err := r[0].ReleaseLease(context.Background(), hold); err != nil {
		t.Fatal(err)
	}
	serveInBackground(t, live)
	var body string
	select {
	case body = <-streamed:
	case <-time.After(20 * time.Second):
		t.Fatal("the follower's stream did not end after the run was claimed again")
	}
	if strings.Contains(body, "event: error") || !strings.Contains(body, `"status":"answered"`) || !strings.Contains(body, "gap scanned") {
		t.Fatalf("the follower's stream:\n%s\nwant the run's answer and its end, no failure", body)
	}
	if n := w.finished.Load(); n != 1 {
		t.Fatalf("slow_scan finished %d times; want once", n)
	}
}
