package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/chatturn"
	"github.com/capgraph/capgraph/server/internal/turns"
)

// fuzzServer is a server over the real (offline) agent on a memory store,
// with small limits so that the fuzzer reaches them, served through its
// handler without a network.
func fuzzServer(tb testing.TB) *Server {
	tb.Helper()
	read := capabilities.Define(capabilities.Definition{
		Name: "read_beam_current", Description: "Read the beam current of the storage ring", Provides: []string{"BEAM_CURRENT"},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("BEAM_CURRENT", 401.5, "beam current is 401.5 mA"), nil
		},
	})
	reg := capabilities.NewRegistry()
	if err := reg.Register(read); err != nil {
		tb.Fatal(err)
	}
	a, err := agent.New(agent.Config{Registry: reg, Store: memory.NewLatestOnly()})
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := New(Config{
		Runner: a,
		Limits: Limits{
			MaxMessages:       8,
			MaxMessageBytes:   512,
			MaxBodyBytes:      8 << 10,
			MaxConcurrentRuns: 64,
			MaxThreads:        -1,
		},
		Auth: Auth{
			Principals: []Principal{{Name: "alice", KeySHA256: HashKey(keyAlice), Tenant: "lab"},
				{Name: "webui", KeySHA256: HashKey(keyWebUI), Tenant: "lab", TrustedFrontend: true}},
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return srv
}

// serveFuzz sends one request through the handler and checks what every
// answer must be: no 5xx, and a 4xx in the JSON error shape.
func serveFuzz(t *testing.T, srv *Server, method, target string, body []byte, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, "http://localhost"+target, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	srv.Handler().ServeHTTP(w, req)
	if w.Code >= 500 {
		t.Fatalf("%s %s %q: %d %s", method, target, body, w.Code, w.Body)
	}
	if w.Code >= 400 {
		var e struct {
			Error *apierror.Body `json:"error"`
		}
		if json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Error == nil || e.Error.Message == "" {
			t.Fatalf("%s %s %q: %d is not the JSON error shape: %s", method, target, body, w.Code, w.Body)
		}
	}
	return w
}

// FuzzChatRequest: whatever a client posts to /v1/chat/completions, the
// decoder refuses it with a 400 naming what is wrong, or returns a turn
// within the limits whose last message is the user's non-blank input; and
// the whole request through the server (a real agent behind it) is never
// a 5xx. The corpus is in testdata/fuzz/FuzzChatRequest.
func FuzzChatRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"capgraph","messages":[{"role":"user","content":"What is the beam current?"}]}`,
		`{"model":"capgraph","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"beam current?"},{"type":"image_url","image_url":{"url":"x"}}]}]}`,
		`{"model":"capgraph","messages":[{"role":"user","content":"write"},{"role":"assistant","content":"Approval ID: AP-7F3KQ2ZD — reply"},{"role":"user","content":"yes AP-7F3KQ2ZD"}]}`,
		`{"model":"capgraph","messages":[{"role":"user","content":"### Task: Generate a title <chat_history>USER: hi</chat_history>"}]}`,
		`{"model":"capgraph","messages":[]}`, `{"model":"nope","messages":[{"role":"user","content":"x"}]}`,
		`{"model":"capgraph","n":2,"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"capgraph","messages":[{"role":"robot","content":"x"}]}`,
		`{"model":"capgraph","messages":[{"role":"user","content":{"a":1}}]}`,
		`{"model":"capgraph","messages":[{"role":"user","content":"x"}]} {"again":1}`,
		`{"model":"capgraph","messages":[{"role":"user","content":"\u0000\ud800"}]}`, `[]`, `null`, ``, `{"model":`,
		`{"model":"capgraph","messages":[{"role":"user","content":[[[[[[[[]]]]]]]]}]}`,
	} {
		f.Add([]byte(s), "")
	}
	f.Add([]byte(`{"model":"capgraph","messages":[{"role":"user","content":"beam current"}]}`), "c 1/../x")
	f.Add([]byte(`{"model":"capgraph","messages":[{"role":"user","content":"beam current"}]}`), "chat-42")
	srv := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte, chatID string) {
		req := httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(body))
		turn, err := srv.parseChat(req)
		if err != nil {
			var re *apierror.RequestError
			status, _, _, _ := apierror.Status(err)
			if !errors.As(err, &re) || status != http.StatusBadRequest && status != http.StatusNotFound && status != http.StatusRequestEntityTooLarge {
				t.Fatalf("parseChat(%q): %T %v (status %d)", body, err, err, status)
			}
			if strings.Contains(err.Error(), "json: ") || strings.Contains(err.Error(), "Go value") || strings.Contains(err.Error(), "server.") {
				t.Fatalf("parseChat(%q): Go internals in %v", body, err)
			}
		} else {
			last := turn.Msgs[len(turn.Msgs)-1]
			if len(turn.Msgs) > srv.cfg.MaxMessages || last.Role != "user" || strings.TrimSpace(turn.Input) == "" || turn.Input != last.Text {
				t.Fatalf("parseChat(%q) = %+v", body, turn)
			}
			for _, m := range turn.Msgs {
				if len(m.Text) > srv.cfg.MaxMessageBytes {
					t.Fatalf("parseChat(%q): a message of %d bytes", body, len(m.Text))
				}
			}
		}
		hdr := []string{}
		if chatID != "" {
			hdr = []string{"Authorization", "Bearer " + keyWebUI, headerChatID, chatID, headerUserID, "u1"}
		}
		serveFuzz(t, srv, "POST", "/v1/chat/completions", body, hdr...)
	})
}

// FuzzAGUIInput: whatever a client posts to /agui (a RunAgentInput, a
// resume, forwarded options), the server answers a 4xx in the JSON error
// shape before any stream, or an AG-UI stream that starts with RUN_STARTED
// and ends with RUN_FINISHED or RUN_ERROR — never a 5xx. The corpus is in
// testdata/fuzz/FuzzAGUIInput.
func FuzzAGUIInput(f *testing.F) {
	for _, s := range []string{
		`{"threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"What is the beam current?"}]}`,
		`{"threadId":"t1","runId":"r2","messages":[],"resume":[{"interruptId":"approval-1","status":"resolved","payload":{"approved":true}}]}`,
		`{"threadId":"t1","messages":[],"resume":[{"interruptId":"x","status":"cancelled"},{"interruptId":"y"}]}`,
		`{"threadId":"t1","messages":[{"id":"u","role":"user","content":"x"}],"forwardedProps":{"options":{"approval_mode":"bogus"}}}`,
		`{"threadId":"t1","messages":[{"id":"u","role":"user","content":"x"}],"forwardedProps":{"options":{"writes_enabled":true}}}`,
		`{"threadId":"..","messages":[{"id":"u","role":"user","content":"x"}]}`,
		`{"threadId":"t1","runId":"r 1","messages":[{"id":"u","role":"user","content":"x"}]}`,
		`{"threadId":"t1","messages":[{"id":"u","role":"assistant","content":"x"}]}`,
		`{"threadId":"t1","messages":[{"id":"u","role":"user","content":[{"type":"text","text":"beam"}]}],"state":{"a":[1,2]},"tools":[],"context":[]}`,
		`{"threadId":"t1"}`, `{}`, `[]`, ``, `{"threadId":1}`, `{"threadId":"t1","messages":"x"}`,
	} {
		f.Add([]byte(s))
	}
	srv := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		w := serveFuzz(t, srv, "POST", "/agui", body)
		if w.Code != http.StatusOK {
			return
		}
		var types []string
		for _, line := range strings.Split(w.Body.String(), "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("%q: a frame that is not JSON: %s", body, data)
			}
			types = append(types, ev.Type)
		}
		if len(types) < 2 || types[0] != "RUN_STARTED" || (types[len(types)-1] != "RUN_FINISHED" && types[len(types)-1] != "RUN_ERROR") {
			t.Fatalf("%q: stream %v", body, types)
		}
	})
}

// FuzzThreadPaths: whatever method, path and thread id a client uses, no
// answer is a 5xx and every error is in the JSON shape; a thread id is
// refused (400) exactly when it breaks threadIDRule; and the URL the server
// builds for an id it accepts (threadPath) routes back to that very id. The
// corpus is in testdata/fuzz/FuzzThreadPaths.
func FuzzThreadPaths(f *testing.F) {
	for _, s := range [][2]string{
		{"GET", "/api/threads/t1"}, {"GET", "/%c0%ae%c0%ae/%c0%ae%c0%ae/etc/passwd"}, {"PUT", "/v1/chat/completions"},
		{"GET", "/api/threads/a%20b/runs"}, {"DELETE", "/api/threads/..%2F..%2Fetc"}, {"POST", "/api/threads/t1/runs/r1/cancel"},
		{"GET", "/api/threads/t1/runs/run-x/events?after=-1"}, {"GET", "/api/threads?limit=0&cursor=%00"}, {"GET", "/api/audit?cursor=x"},
		{"PATCH", "/api"}, {"GET", "/v1"}, {"GET", "//api//threads"}, {"GET", "/app.js%00"}, {"OPTIONS", "/agui"},
	} {
		f.Add(s[0], s[1], "t1")
	}
	f.Add("GET", "/api/threads", "..")
	f.Add("GET", "/", "a:b.c-d_e")
	f.Add("GET", "/", "a?b#c d")
	srv := fuzzServer(f)
	f.Fuzz(func(t *testing.T, method, target, id string) {
		if !validMethod(method) {
			return // net/http itself refuses these before any handler
		}
		// What a client can put on a request line: no spaces or controls.
		if u, err := url.ParseRequestURI(target); err == nil && u.Host == "" && strings.HasPrefix(target, "/") && validTarget(target) {
			serveFuzz(t, srv, method, target, nil)
		}
		w := serveFuzz(t, srv, "GET", threadPath(id), nil)
		switch {
		case turns.ValidThreadID(id) && w.Code != http.StatusNotFound && w.Code != http.StatusOK: // an earlier input may have made it
			t.Fatalf("GET %s (valid id %q): %d %s", threadPath(id), id, w.Code, w.Body)
		case !turns.ValidThreadID(id) && w.Code != http.StatusBadRequest && w.Code != http.StatusNotFound && w.Code != http.StatusMovedPermanently:
			t.Fatalf("GET %s (invalid id %q): %d %s", threadPath(id), id, w.Code, w.Body)
		}
		if turns.ValidThreadID(id) {
			// The id the server built a URL of routes back to itself.
			b, _ := json.Marshal(map[string]string{"id": id})
			serveFuzz(t, srv, "POST", "/api/threads", b)
			if w := serveFuzz(t, srv, "GET", threadPath(id), nil); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"id":`+string(mustJSON(id))) {
				t.Fatalf("GET %s after creating %q: %d %s", threadPath(id), id, w.Code, w.Body)
			}
		}
	})
}

func mustJSON(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// validTarget reports whether a request target has no spaces or controls.
func validTarget(t string) bool {
	for i := 0; i < len(t); i++ {
		if t[i] <= ' ' || t[i] >= 0x7f {
			return false
		}
	}
	return true
}

// validMethod reports whether m is an HTTP token (what net/http accepts).
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return false
		}
	}
	return true
}

// parseChat reads r as the Chat Completions route does.
func (s *Server) parseChat(r *http.Request) (chatturn.Turn, error) {
	return s.chatCompletions(nil).Parse(r)
}
