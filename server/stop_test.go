package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"github.com/capgraph/capgraph/server/internal/turns"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
)

// hungAgentEnv serves a real agent whose read_beam_current never returns
// on its first call — it ignores its context too — and answers on the
// next ones. entered receives a value when a call hangs.
type hungAgentEnv struct {
	*testEnv
	entered chan struct{}
	calls   atomic.Int32
}

func newHungAgentEnv(t *testing.T, mod func(*Config)) *hungAgentEnv {
	t.Helper()
	he := &hungAgentEnv{entered: make(chan struct{}, 4)}
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	read := capabilities.Define(capabilities.Definition{
		Name: "read_beam_current", Description: "Read the beam current of the storage ring",
		Provides: []string{"BEAM_CURRENT"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use for questions about the beam current.",
			Examples: []capabilities.ClassifierExample{{Query: "what is the beam current?", Result: true, Reason: "asks for the beam current"}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			if he.calls.Add(1) == 1 {
				he.entered <- struct{}{}
				<-never // a read that never comes back, whatever its context says
			}
			return capabilities.Result("BEAM_CURRENT", 401.5, "beam current is 401.5 mA"), nil
		},
	})
	a, err := agent.New(agent.Config{Registry: newRegistry(t, read)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	he.testEnv = newTestEnv(t, func(c *Config) {
		c.Runner = a
		if mod != nil {
			mod(c)
		}
	})
	return he
}

// liveRuns counts the server's runs that have not ended.
func liveRuns(s *Server) int {
	n := 0
	for _, r := range s.runs.All() {
		if !r.IsFinished() {
			n++
		}
	}
	return n
}

// waitNoRuns waits up to limit for every run to end and returns how long
// it took, failing the test past it.
func waitNoRuns(t *testing.T, s *Server, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for liveRuns(s) > 0 {
		if time.Since(start) > limit {
			t.Fatalf("a run still goes on %s after its client left", limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

// openHung sends body to path as the trusted frontend (Open WebUI, chat
// "c-1"), with hdr, and returns once the run hangs in the capability; the
// returned cancel is the client leaving.
func (he *hungAgentEnv) openHung(t *testing.T, path string, body any, hdr ...string) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, "POST", he.http.URL+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+keyWebUI)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(headerUserID, "u-1")
	req.Header.Set(headerChatID, "c-1")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, _ = bufio.NewReader(resp.Body).WriteTo(discard{})
			resp.Body.Close()
		}
	}()
	select {
	case <-he.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the run never reached the capability")
	}
	return cancel
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Stop stops (issue 33): a client that cannot repeat its request leaving —
// Open WebUI's stop button closes the stream, an AG-UI client's stop aborts
// its request — ends the run within a second, though the capability it is
// in never returns, and the thread takes the next question at once. The
// detach grace (10 s by default) is not waited for.
func TestClientLeavingStopsTheRunAtOnce(t *testing.T) {
	chat := chatBody("capgraph", true, user("What is the beam current of the storage ring?"))
	agui := map[string]any{"threadId": "c-1", "runId": "r1",
		"messages": []map[string]any{{"id": "u1", "role": "user", "content": "What is the beam current of the storage ring?"}}}
	for _, tc := range []struct {
		name, path string
		body       any
	}{{"chat completions", "/v1/chat/completions", chat}, {"ag-ui", "/agui", agui}} {
		t.Run(tc.name, func(t *testing.T) {
			he := newHungAgentEnv(t, nil)
			leave := he.openHung(t, tc.path, tc.body)
			leave()
			if took := waitNoRuns(t, he.srv, 5*time.Second); took > time.Second {
				t.Fatalf("the run ended %s after its client left; want within 1s", took)
			}
			// The thread is usable at once: the next question is answered.
			resp, body := he.do(t, "POST", "/v1/chat/completions", keyWebUI, chatBody("capgraph", false, user("What is the beam current of the storage ring now?")),
				headerUserID, "u-1", headerChatID, "c-1")
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "401.5") {
				t.Fatalf("the next question on the thread: %d %s", resp.StatusCode, body)
			}
		})
	}
}

// An SDK that retries (it sends X-Stainless-Retry-Count on every attempt)
// or a request with an Idempotency-Key may come back after its
// connection dropped: its run goes on for the detach grace, for the
// repeat to join it, and is canceled after it when nobody came back.
func TestRepeatableClientLeavingKeepsTheGrace(t *testing.T) {
	const grace = 2 * time.Second
	for _, hdr := range [][]string{{turns.HeaderRetryCount, "0"}, {"Idempotency-Key", "k-1"}} {
		t.Run(hdr[0], func(t *testing.T) {
			he := newHungAgentEnv(t, func(c *Config) { c.DetachGrace = grace })
			leave := he.openHung(t, "/v1/chat/completions", chatBody("capgraph", true, user("What is the beam current of the storage ring?")), hdr...)
			left := time.Now()
			leave()
			time.Sleep(time.Second)
			if liveRuns(he.srv) != 1 {
				t.Fatal("the run of a request that can be repeated ended before the detach grace")
			}
			waitNoRuns(t, he.srv, grace+5*time.Second)
			if took := time.Since(left); took < grace {
				t.Fatalf("the run ended %s after its client left; want after the grace (%s)", took, grace)
			}
		})
	}
}
