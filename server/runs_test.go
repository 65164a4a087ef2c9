package server

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/sse"
)

func BenchmarkChatCompletionStream(b *testing.B) {
	env := newTestEnv(b, nil)
	body, _ := json.Marshal(chatBody("capgraph", true, user("What is the beam current?")))
	b.ReportAllocs()
	for b.Loop() {
		resp, out := env.do(b, "POST", "/v1/chat/completions", keyAlice, body)
		if resp.StatusCode != 200 || !strings.Contains(string(out), "[DONE]") {
			b.Fatalf("%d %s", resp.StatusCode, out)
		}
	}
}

// startFn starts a run of fn directly on the run manager (no record).
func startFn(s *Server, c caller, clientThread, thread string, fn func(ctx context.Context) iter.Seq2[agent.Event, error]) (*run, error) {
	r, err := s.reserve(runSpec{c: c, clientThread: clientThread, thread: thread, id: "run-" + clientThread})
	if err != nil {
		return nil, err
	}
	s.runs.Launch(r.Run, fn)
	return r, nil
}

// flushCounter is a ResponseWriter that counts the flushes reaching the
// connection.
type flushCounter struct {
	*httptest.ResponseRecorder
	flushes int
}

func (f *flushCounter) Flush() { f.flushes++ }

// The frames of the events a follower finds waiting are written in one
// flush, not one per event (a write system call each): a run of 50 token
// events, followed after it ended, reaches the client in a handful of
// flushes, every frame in order.
func TestFollowFlushesTheEventsAtHandTogether(t *testing.T) {
	env := newTestEnv(t, nil)
	c := caller{Principal: Principal{Name: "alice", Tenant: "lab"}}
	r, err := startFn(env.srv, c, "tokens", "internal-tokens", func(ctx context.Context) iter.Seq2[agent.Event, error] {
		return func(yield func(agent.Event, error) bool) {
			for i := range 50 {
				if !yield(agent.Event{Type: agent.EventToken, Text: fmt.Sprintf("t%d ", i)}, nil) {
					return
				}
			}
			yield(agent.Event{Type: agent.EventDone, Status: agent.RunAnswered}, nil)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Follow(context.Background(), 0, env.srv.cfg.Heartbeat, nil, func(agent.Event) {}, nil) {
		t.Fatal("the run did not end")
	}
	w := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	sse := sse.Start(w, time.Now, 0)
	var n int
	if !r.Follow(context.Background(), 0, env.srv.cfg.Heartbeat, sse, func(ev agent.Event) {
		n++
		sse.Frame(strconv.Itoa(ev.Seq), string(ev.Type), ev)
	}, nil) {
		t.Fatal("follow did not see the end")
	}
	body := w.Body.String()
	if n != 51 || strings.Count(body, "event: token") != 50 || !strings.Contains(body, "t0 ") || strings.Index(body, `"t49 "`) < strings.Index(body, `"t0 "`) {
		t.Fatalf("%d events; body has %d token frames", n, strings.Count(body, "event: token"))
	}
	if w.flushes > 3 {
		t.Errorf("%d flushes for 51 frames found waiting; want them flushed together (the headers, the batch)", w.flushes)
	}
}
