package server

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/postgres/pgtest"
	"github.com/capgraph/capgraph/runstore"
)

// replica is one server of a deployment on one PostgreSQL, served with
// Serve (so it listens to the others and claims from the queue) on a
// loopback port.
type replica struct {
	env   *testEnv
	agent *agent.Agent
	store checkpoint.Store
	stop  context.CancelFunc
	done  chan struct{}
}

// serveReplicas starts one server per store handle, each with its own
// agent over reg (made per replica by mkReg) and the principals of
// newTestEnv; mod adjusts replica i's config.
func serveReplicas(t *testing.T, stores []checkpoint.Store, mkAgent func(store checkpoint.Store) *agent.Agent, mod func(i int, c *Config)) []*replica {
	t.Helper()
	var out []*replica
	for i, st := range stores {
		a := mkAgent(st)
		env := newTestEnv(t, func(c *Config) {
			c.Runner = a
			c.Instance = "replica-" + string(rune('a'+i))
			c.RecoverEvery, c.RecoverGrace = time.Second, time.Second
			if mod != nil {
				mod(i, c)
			}
		})
		env.http.Close() // served below with Serve, as capgraph serve does
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		env.http.URL = "http://" + ln.Addr().String()
		ctx, cancel := context.WithCancel(context.Background())
		r := &replica{env: env, agent: a, store: st, stop: cancel, done: make(chan struct{})}
		go func() { defer close(r.done); _ = env.srv.Serve(ctx, ln) }()
		t.Cleanup(func() { cancel(); <-r.done })
		out = append(out, r)
	}
	return out
}

func pgStores(t *testing.T, n int) []checkpoint.Store {
	var out []checkpoint.Store
	for _, s := range pgtest.Replicas(t, n) {
		out = append(out, s)
	}
	return out
}

// agentReplicas starts n servers, each over an agent of its own on a
// replica of one PostgreSQL store, named replica-a, replica-b…; mod sets
// the rest of their configuration.
func agentReplicas(t *testing.T, n int, mod func(*Config)) []*testEnv {
	var envs []*testEnv
	for i, st := range pgStores(t, n) {
		a, err := agent.New(agent.Config{Registry: newRegistry(t), Store: st})
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, newTestEnv(t, func(c *Config) {
			c.Runner = a
			c.Instance = "replica-" + string(rune('a'+i))
			mod(c)
		}))
	}
	return envs
}

// flakyReadAgents makes, for each replica's store, an agent whose one
// capability times out on its first call (RETRIABLE) and then answers; the
// retry waits wait. calls counts the calls across the replicas.
func flakyReadAgents(t *testing.T, calls *atomic.Int32, wait time.Duration) func(checkpoint.Store) *agent.Agent {
	t.Helper()
	read := capabilities.Define(capabilities.Definition{
		Name: "read_beam_current", Description: "Read the beam current of the storage ring", Provides: []string{"BEAM_CURRENT"},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			if calls.Add(1) == 1 {
				return capabilities.Output{}, context.DeadlineExceeded
			}
			return capabilities.Result("BEAM_CURRENT", 301.2, "beam current 301.2 mA"), nil
		}})
	return func(st checkpoint.Store) *agent.Agent {
		a, err := agent.New(agent.Config{Registry: newRegistry(t, read), Store: st, Leases: agent.LeaseConfig{TTL: 3 * time.Second},
			RetryPolicy: capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: wait, Jitter: capabilities.JitterNone}})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
}

// Issue 18: a retry wait longer than ParkAfter goes back to the queue with
// its not-before time; another replica claims it when due and finishes
// it, and a client following the run on the first replica gets every
// event, under the same run id.
func TestParkedRunResumedByAnotherReplica(t *testing.T) {
	var calls atomic.Int32
	mk := flakyReadAgents(t, &calls, 1500*time.Millisecond)
	reps := serveReplicas(t, pgStores(t, 2), mk, func(i int, c *Config) {
		c.ParkAfter = 100 * time.Millisecond
		if i == 0 {
			c.RecoverEvery = 0 // replica a never claims: b must resume the run
		}
	})
	a, b := reps[0].env, reps[1].env
	a.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "beam"})
	resp, body := a.do(t, "POST", "/api/threads/beam/runs", keyAlice, map[string]any{"input": "What is the beam current?", "stream": true})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	frames := readSSE(t, strings.NewReader(string(body)))
	last := frames[len(frames)-1]
	if last.Event != "end" || !strings.Contains(last.Data, `"status":"answered"`) {
		t.Fatalf("last frame %+v", last)
	}
	var runID string
	waiting, answer := false, ""
	for _, f := range frames[:len(frames)-1] {
		var ev agent.Event
		if err := json.Unmarshal([]byte(f.Data), &ev); err != nil {
			t.Fatal(err)
		}
		if runID == "" {
			runID = ev.RunID
		}
		if ev.RunID != runID {
			t.Fatalf("event of run %q, want %q throughout", ev.RunID, runID)
		}
		waiting = waiting || ev.Type == agent.EventStatus && strings.Contains(ev.Text, "waiting until")
		if ev.Type == agent.EventMessage {
			answer = ev.Message.Content
		}
	}
	if !waiting || !strings.Contains(answer, "301.2") || calls.Load() != 2 {
		t.Fatalf("waiting said %v, answer %q, %d calls; want the wait, the answer, 2 calls", waiting, answer, calls.Load())
	}
	rec, err := reps[1].store.(runstore.Store).GetRun(context.Background(), runID)
	if err != nil || rec.Owner != "replica-b" || rec.Status != runstore.Done || rec.Attempt != 2 {
		t.Fatalf("record %+v (%v): want done by replica-b on its second attempt", rec, err)
	}
	// Followed from b too, the run shows the same end.
	_, body = b.do(t, "GET", "/api/threads/beam/runs/"+runID, keyAlice, nil)
	if !strings.Contains(string(body), `"status":"answered"`) {
		t.Fatalf("run on b: %s", body)
	}
}

// Issue 18: RequestsPerMinute is counted in PostgreSQL, so two replicas
// share one principal's budget instead of granting it each.
func TestRequestRateSharedByReplicas(t *testing.T) {
	envs := agentReplicas(t, 2, func(c *Config) { c.RequestsPerMinute = 6 })
	ok, limited := 0, 0
	for i := range 10 {
		resp, body := envs[i%2].do(t, "GET", "/api/threads", keyAlice, nil)
		switch resp.StatusCode {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			limited++
			if resp.Header.Get("Retry-After") == "" {
				t.Fatalf("429 without Retry-After: %s", body)
			}
		default:
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	if ok != 6 || limited != 4 {
		t.Fatalf("%d answered, %d limited across two replicas; want 6 and 4 (one budget of 6 a minute)", ok, limited)
	}
	// Another principal has a budget of its own.
	if resp, body := envs[1].do(t, "GET", "/api/threads", keyBob, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("bob: %d %s", resp.StatusCode, body)
	}
}

// A run acknowledged on a thread whose lease a dead replica still holds
// (it died during a turn) is not failed: nothing ran, so it starts once
// the lease expired, and its streaming client gets the answer.
func TestRunWaitsForADeadReplicasLease(t *testing.T) {
	var calls atomic.Int32
	read := capabilities.Define(capabilities.Definition{
		Name: "read_beam_current", Description: "Read the beam current of the storage ring", Provides: []string{"BEAM_CURRENT"},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			calls.Add(1)
			return capabilities.Result("BEAM_CURRENT", 301.2, "beam current 301.2 mA"), nil
		}})
	mk := func(st checkpoint.Store) *agent.Agent {
		a, err := agent.New(agent.Config{Registry: newRegistry(t, read), Store: st, Leases: agent.LeaseConfig{TTL: 3 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	reps := serveReplicas(t, pgStores(t, 2), mk, nil)
	a := reps[0].env
	a.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "beam"})
	// The replica that "died" holds the thread for two more seconds.
	held, err := reps[1].store.(checkpoint.Leaser).AcquireLease(context.Background(), internalThreadID(alice, "beam"), "vm/dead", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	resp, body := a.do(t, "POST", "/api/threads/beam/runs", keyAlice, map[string]any{"input": "What is the beam current?", "stream": true})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	frames := readSSE(t, strings.NewReader(string(body)))
	last := frames[len(frames)-1]
	if last.Event != "end" || !strings.Contains(last.Data, `"status":"answered"`) || !strings.Contains(string(body), "301.2") {
		t.Fatalf("the run did not wait for the lease and answer: last frame %+v\n%s", last, body)
	}
	if time.Now().Before(held.Expires) {
		t.Errorf("answered before the dead replica's lease expired (%s)", held.Expires)
	}
	if calls.Load() != 1 {
		t.Errorf("the capability ran %d times, want once", calls.Load())
	}
}

// A Chat Completions client that leaves a run parked in the queue (for
// longer than DetachGrace) cancels the queued record, as it cancels a run
// waiting in a goroutine: no replica resumes a run nobody follows.
func TestLeftParkedRunIsCanceledInTheQueue(t *testing.T) {
	var calls atomic.Int32
	const wait = 3 * time.Second
	mk := flakyReadAgents(t, &calls, wait)
	reps := serveReplicas(t, pgStores(t, 1), mk, func(i int, c *Config) {
		c.ParkAfter, c.DetachGrace, c.RecoverEvery = 100*time.Millisecond, 50*time.Millisecond, 200*time.Millisecond
	})
	env := reps[0].env
	ctx, leave := context.WithCancel(context.Background())
	answered := env.postUntil(ctx, "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user("What is the beam current?")))
	// The first call failed and the run waits in the queue: nothing of it
	// runs in the process. Then the client gives up.
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() != 1 || env.srv.runs.Running() != 0 {
		if time.Now().After(deadline) || calls.Load() > 1 {
			t.Fatalf("the run did not park after its first call (%d calls, %d running)", calls.Load(), env.srv.runs.Running())
		}
		time.Sleep(5 * time.Millisecond)
	}
	leave()
	if code := <-answered; code != 0 {
		t.Fatalf("the chat request answered (%d) during the retry wait", code)
	}
	// Past the retry's due time and several claims: nothing resumed it.
	time.Sleep(wait + time.Second)
	if n := calls.Load(); n != 1 {
		t.Fatalf("the capability ran %d times: the run was resumed after its client left", n)
	}
	recs, err := reps[0].store.(runstore.Store).ListRuns(context.Background(), runstore.Filter{Limit: 10})
	if err != nil || len(recs) != 1 || recs[0].Status != runstore.Canceled {
		t.Fatalf("records %+v, %v; want the one run canceled", recs, err)
	}
}

// server.limits.max_threads holds across replicas: near the limit a
// replica reads the owner's count from the store, so threads another
// replica created (or deleted) count, where its own cached count would
// have let a fourth thread through.
func TestThreadLimitSharedByReplicas(t *testing.T) {
	envs := agentReplicas(t, 2, func(c *Config) { c.MaxThreads = 3 })
	a, b := envs[0], envs[1]
	create := func(env *testEnv, id string) int {
		resp, _ := env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": id})
		return resp.StatusCode
	}
	for _, id := range []string{"t1", "t2"} {
		if code := create(a, id); code != http.StatusCreated {
			t.Fatalf("create %s on a: %d", id, code)
		}
	}
	if code := create(b, "t3"); code != http.StatusCreated {
		t.Fatalf("create t3 on b: %d", code)
	}
	if resp, body := a.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "t4"}); resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "quota_exceeded") {
		t.Fatalf("a fourth thread on a: %d %s; want it refused (3 exist across the replicas)", resp.StatusCode, body)
	}
	// A deletion on b frees a place that a sees.
	if resp, body := b.do(t, "DELETE", "/api/threads/t1", keyAlice, nil); resp.StatusCode >= 300 {
		t.Fatalf("delete t1 on b: %d %s", resp.StatusCode, body)
	}
	if code := create(a, "t4"); code != http.StatusCreated {
		t.Fatalf("t4 on a after a deletion on b: %d", code)
	}
}
