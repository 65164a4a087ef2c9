package server

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/capgraph/capgraph/server/internal/turns"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
)

// heldRead is read_beam_current whose executions wait until released;
// started says when one began.
type heldRead struct {
	runs    atomic.Int32
	started chan struct{}
	release chan struct{}
}

func (h *heldRead) capability(t *testing.T) capabilities.Capability {
	c := capabilities.Define(capabilities.Definition{
		Name: "read_beam_current", Description: "Read the beam current of the storage ring", Provides: []string{"BEAM_CURRENT"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use for questions about the beam current.",
			Examples: []capabilities.ClassifierExample{{Query: "what is the beam current?", Result: true, Reason: "asks for the beam current"}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			h.runs.Add(1)
			h.started <- struct{}{}
			select {
			case <-h.release:
			case <-ctx.Done():
				return capabilities.Output{}, ctx.Err()
			}
			return capabilities.Result("BEAM_CURRENT", 377.4, "beam current is 377.4 mA"), nil
		}})
	return c
}

// replicaGrace is the DetachGrace of heldRead.replicas.
const replicaGrace = time.Second

// giveUpOnceStarted makes a request with call, as a client that gives up
// (its timeout) once the read has started, and returns when call has.
func (h *heldRead) giveUpOnceStarted(t *testing.T, call func(ctx context.Context)) {
	t.Helper()
	ctx, giveUp := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { call(ctx); close(done) }()
	select {
	case <-h.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the read never started")
	}
	giveUp()
	<-done
}

// replicas serves two replicas over one PostgreSQL store, with agents
// reading through h and a DetachGrace of replicaGrace.
func (h *heldRead) replicas(t *testing.T) (a, b *testEnv) {
	mk := func(st checkpoint.Store) *agent.Agent {
		a, err := agent.New(agent.Config{Registry: newRegistry(t, h.capability(t)), Store: st})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	reps := serveReplicas(t, pgStores(t, 2), mk, func(i int, c *Config) { c.DetachGrace = replicaGrace })
	return reps[0].env, reps[1].env
}

// postChat sends a Chat Completions request as an SDK does (an optional
// Idempotency-Key) under ctx; the error is the client's (ctx ended).
func postChat(ctx context.Context, env *testEnv, body map[string]any, idem string) (*http.Response, string, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, "POST", env.http.URL+"/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	req.Header.Set("Content-Type", "application/json")
	// As the OpenAI SDKs send on every attempt: a client that repeats the
	// request when it gives up (its run outlives it by DetachGrace).
	req.Header.Set(turns.HeaderRetryCount, "0")
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp, string(out), err
}

// Issue 18 with SDK retries: a Chat Completions request repeated (the
// same conversation re-sent, or the same Idempotency-Key) through the load
// balancer to another replica joins the first request's run while it goes
// on — also when the first client gave up, for longer than DetachGrace —
// and replays its answer once it has ended: the capability runs once.
func TestRepeatedChatOnAnotherReplica(t *testing.T) {
	for _, tc := range []struct {
		name   string
		idem   string
		stream bool
	}{
		{"conversation re-sent", "", false},
		{"conversation re-sent, streaming", "", true},
		{"Idempotency-Key", "retry-7f3a", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &heldRead{started: make(chan struct{}, 4), release: make(chan struct{})}
			a, b := h.replicas(t)
			req := map[string]any{"model": "capgraph", "stream": tc.stream, "messages": []map[string]any{user("What is the beam current right now?")}}

			// The first attempt reaches a, which starts the read; the
			// client gives up (its timeout) and retries through b.
			h.giveUpOnceStarted(t, func(ctx context.Context) { postChat(ctx, a, req, tc.idem) })
			type reply struct {
				resp *http.Response
				body string
				err  error
			}
			second := make(chan reply, 1)
			go func() {
				resp, body, err := postChat(context.Background(), b, req, tc.idem)
				second <- reply{resp, body, err}
			}()
			// Past a's DetachGrace with nobody following there: the run
			// must go on, since the retry follows it on b.
			time.Sleep(2 * replicaGrace)
			close(h.release)
			r := <-second
			if r.err != nil || r.resp.StatusCode != http.StatusOK || !strings.Contains(r.body, "377.4") {
				t.Fatalf("retry on b: %v %v %s", r.err, r.resp, r.body)
			}
			if n := h.runs.Load(); n != 1 {
				t.Fatalf("the read ran %d times, want once", n)
			}
			// Re-sent again after the run ended, to the other replica: its answer.
			resp, body, err := postChat(context.Background(), a, req, tc.idem)
			if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body, "377.4") || resp.Header.Get(turns.HeaderReplayed) != "true" {
				t.Fatalf("replay on a: %v %v %s", err, resp, body)
			}
			if n := h.runs.Load(); n != 1 {
				t.Fatalf("the read ran %d times after the replay, want once", n)
			}
		})
	}
}

// The same over MCP: a call repeated with its request_id through another
// replica joins the first call's run, after the first client dropped its
// connection and past the first replica's DetachGrace, and a repeat after
// the run ended gets its answer from the record: the read runs once.
func TestRepeatedMCPCallOnAnotherReplica(t *testing.T) {
	h := &heldRead{started: make(chan struct{}, 4), release: make(chan struct{})}
	a, b := h.replicas(t)
	args := map[string]any{"question": "What is the beam current right now?", "request_id": "0b9e-beam-now"}

	h.giveUpOnceStarted(t, func(ctx context.Context) { postMCP(ctx, a, args) })
	type reply struct {
		body string
		err  error
	}
	second := make(chan reply, 1)
	go func() {
		body, err := postMCP(context.Background(), b, args)
		second <- reply{body, err}
	}()
	time.Sleep(2 * replicaGrace)
	close(h.release)
	r := <-second
	if r.err != nil || !strings.Contains(r.body, "377.4") || !strings.Contains(r.body, `"replayed":true`) {
		t.Fatalf("repeat on b: %v %s", r.err, r.body)
	}
	if n := h.runs.Load(); n != 1 {
		t.Fatalf("the read ran %d times, want once", n)
	}
	body, err := postMCP(context.Background(), a, args)
	if err != nil || !strings.Contains(body, "377.4") || !strings.Contains(body, `"replayed":true`) {
		t.Fatalf("repeat on a after the end: %v %s", err, body)
	}
	if n := h.runs.Load(); n != 1 {
		t.Fatalf("the read ran %d times after the repeat, want once", n)
	}
}
