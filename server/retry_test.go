package server

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/capgraph/capgraph/server/internal/turns"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/runstore"
)

// interlockEnv serves a real agent whose only capability fails FATAL (a
// tripped interlock), as a control system would.
func interlockEnv(t *testing.T) *testEnv {
	t.Helper()
	read := capabilities.Define(capabilities.Definition{
		Name: "read_beam_current", Description: "Read the beam current of the storage ring",
		Provides: []string{"BEAM_CURRENT"},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			return capabilities.Output{}, errors.New("MPS: interlock SR:MPS:TRIP is active")
		},
		Classify: func(err error, ec capabilities.ErrorContext) capabilities.Classification {
			return capabilities.Classification{Severity: capabilities.Fatal, Kind: "interlock", UserMessage: "the machine protection interlock is tripped"}
		},
	})
	a, err := agent.New(agent.Config{Registry: newRegistry(t, read)})
	if err != nil {
		t.Fatal(err)
	}
	return newTestEnv(t, func(c *Config) { c.Runner = a })
}

// Issue 13 item 8: a turn that ends in a FATAL failure is an answer — 200
// with what happened as the assistant's message, stream or not — so no SDK
// retries it; the Go error (with its channel names) stays in the log.
func TestFatalTurnIsAnAnswer(t *testing.T) {
	env := interlockEnv(t)
	ctx := context.Background()
	c := openaiGoClient(env, keyAlice)
	r, err := c.Chat.Completions.New(ctx, oa.ChatCompletionNewParams{Model: "capgraph",
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("What is the beam current?")}})
	if err != nil {
		t.Fatalf("non-stream: %v", err)
	}
	content := r.Choices[0].Message.Content
	if !strings.Contains(content, "machine protection interlock is tripped") || !strings.Contains(content, "Nothing more was done") || strings.Contains(content, "SR:MPS") {
		t.Fatalf("non-stream answer: %q", content)
	}
	s := c.Chat.Completions.NewStreaming(ctx, oa.ChatCompletionNewParams{Model: "capgraph",
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("What is the beam current now?")}})
	var acc oa.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if s.Err() != nil || !strings.Contains(acc.Choices[0].Message.Content, "machine protection interlock is tripped") {
		t.Fatalf("stream: %v %q", s.Err(), acc.Choices[0].Message.Content)
	}
	// go-openai, which never retries, sees the same answer.
	gr, err := goOpenAIClient(env, keyAlice).CreateChatCompletion(ctx, goopenai.ChatCompletionRequest{Model: "capgraph",
		Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "beam current please"}}})
	if err != nil || !strings.Contains(gr.Choices[0].Message.Content, "interlock is tripped") {
		t.Fatalf("go-openai: %v %+v", err, gr)
	}
}

// countingServer serves env's handler on a listener of its own, counting
// the chat requests that reach it.
func countingServer(t *testing.T, env *testEnv) (url string, chats *atomic.Int32) {
	t.Helper()
	chats = &atomic.Int32{}
	h := env.srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" {
			chats.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL, chats
}

// releaseAfter lets the scripted runner's slow runs finish once n chat
// requests have arrived (the client timed out and retried).
func releaseAfter(env *testEnv, chats *atomic.Int32, n int32) {
	go func() {
		deadline := time.Now().Add(30 * time.Second)
		for chats.Load() < n && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		env.runner.Release()
	}()
}

// droppingServer is countingServer whose first drop chat requests lose
// their connection 300 ms in, before any byte of the answer reached the
// client (a proxy timing out, a network fault): the server saw the client
// go, the client sees a connection error and retries.
func droppingServer(t *testing.T, env *testEnv, drop int32) (url string, chats *atomic.Int32) {
	t.Helper()
	chats = &atomic.Int32{}
	h := env.srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			h.ServeHTTP(w, r)
			return
		}
		if chats.Add(1) > drop {
			h.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 300*time.Millisecond)
		defer cancel()
		h.ServeHTTP(httptest.NewRecorder(), r.WithContext(ctx))
		panic(http.ErrAbortHandler) // the connection closes without an answer
	}))
	t.Cleanup(ts.Close)
	return ts.URL, chats
}

// Issue 13 item 8: openai-go retries a request whose connection dropped;
// the retry joins the first request's run (the run goes on for
// DetachGrace after its client left), so however often the SDK retries,
// one run answers.
func TestOpenAIGoRetriesJoinTheFirstRun(t *testing.T) {
	for _, stream := range []bool{false, true} {
		env := newTestEnv(t, nil)
		url, chats := droppingServer(t, env, 2)
		c := oa.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey(keyAlice), option.WithMaxRetries(6))
		releaseAfter(env, chats, 3)
		params := oa.ChatCompletionNewParams{Model: "capgraph", Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("slow please")}}
		var content string
		if stream {
			s := c.Chat.Completions.NewStreaming(context.Background(), params)
			var acc oa.ChatCompletionAccumulator
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			if s.Err() != nil {
				t.Fatalf("stream: %v after %d requests", s.Err(), chats.Load())
			}
			content = acc.Choices[0].Message.Content
		} else {
			r, err := c.Chat.Completions.New(context.Background(), params)
			if err != nil {
				t.Fatalf("non-stream: %v after %d requests", err, chats.Load())
			}
			content = r.Choices[0].Message.Content
		}
		if !strings.Contains(content, "Done after waiting.") || chats.Load() < 3 {
			t.Fatalf("stream %v: %q after %d requests", stream, content, chats.Load())
		}
		if n := len(env.runner.runs()); n != 1 {
			t.Fatalf("stream %v: %d requests started %d runs; want 1", stream, chats.Load(), n)
		}
	}
}

// The same with the npm openai SDK (testdata/js/retry.test.mjs): its
// retries after timeouts start no second run.
func TestNodeOpenAIRetriesJoinTheFirstRun(t *testing.T) {
	dir := filepath.Join("testdata", "js")
	node := nodeOrSkip(t, dir)
	env := newTestEnv(t, nil)
	url, chats := countingServer(t, env)
	releaseAfter(env, chats, 3)
	cmd := exec.Command(node, "--test", "--test-reporter=spec", "retry.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CAPGRAPH_URL="+url, "CAPGRAPH_KEY="+keyAlice, "NODE_ENV=test")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test failed: %v\n%s", err, out)
	}
	if n := len(env.runner.runs()); n != 1 || chats.Load() < 3 {
		t.Fatalf("%d chat requests started %d runs; want 1\n%s", chats.Load(), n, out)
	}
}

// Issue 13 item 8: a repeated identical request whose first request never
// got its answer (the client timed out, the run finished without it) gets
// that run's answer, marked Idempotent-Replayed, within
// Config.DuplicateWindow, and no second run. Once an answer was delivered
// the same words are a new question (a regenerate, the same question in a
// new chat), as they are after the window. An Idempotency-Key names the
// run explicitly, on the native API too, for as long as its record is kept.
func TestRepeatedRequestsAreAnsweredFromTheFirstRun(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	env := newTestEnv(t, func(c *Config) { c.Now = clock })
	body := chatBody("capgraph", false, user("slow please"))
	// The first request gives up before the answer (an SDK timeout).
	giveUpOnChat(t, env, body)
	env.runner.Release() // the run finishes without it
	waitRuns(t, env)
	resp, again := env.do(t, "POST", "/v1/chat/completions", keyAlice, body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get(turns.HeaderReplayed) != "true" || !strings.Contains(string(again), "Done after waiting.") {
		t.Fatalf("the retry: %d %v %s (%d runs)", resp.StatusCode, resp.Header, again, len(env.runner.runs()))
	}
	if n := len(env.runner.runs()); n != 1 {
		t.Fatalf("%d runs; want 1", n)
	}
	// That answer was delivered: the same words again are a new question.
	if resp, _ := env.do(t, "POST", "/v1/chat/completions", keyAlice, body); resp.Header.Get(turns.HeaderReplayed) != "" || len(env.runner.runs()) != 2 {
		t.Fatalf("a request after a delivered answer was replayed (%d runs)", len(env.runner.runs()))
	}
	// An answered request, asked again at once: a new run too.
	read := chatBody("capgraph", false, user("What is the beam current?"))
	env.do(t, "POST", "/v1/chat/completions", keyAlice, read)
	if resp, _ := env.do(t, "POST", "/v1/chat/completions", keyAlice, read); resp.Header.Get(turns.HeaderReplayed) != "" || len(env.runner.runs()) != 4 {
		t.Fatalf("the same question twice: %d runs, want 4", len(env.runner.runs()))
	}
	// Idempotency-Key: the same key is the same run, however long after.
	k := []string{"Idempotency-Key", "order-7"}
	env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user("Read SR:DCCT")), k...)
	now = now.Add(time.Hour)
	resp, b2 := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user("Read SR:DCCT")), k...)
	if resp.Header.Get(turns.HeaderReplayed) != "true" || len(env.runner.runs()) != 5 || !strings.Contains(string(b2), "500 mA") {
		t.Fatalf("Idempotency-Key repeat: %v %s, %d runs", resp.Header, b2, len(env.runner.runs()))
	}
	// Another principal's key is its own.
	if resp, _ := env.do(t, "POST", "/v1/chat/completions", keyBob, chatBody("capgraph", false, user("Read SR:DCCT")), k...); resp.Header.Get(turns.HeaderReplayed) != "" || len(env.runner.runs()) != 6 {
		t.Fatal("bob's request was answered from alice's run")
	}
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "idem"})
	resp, a := env.do(t, "POST", "/api/threads/idem/runs", keyAlice, map[string]any{"input": "slow please"}, k...)
	resp2, c := env.do(t, "POST", "/api/threads/idem/runs", keyAlice, map[string]any{"input": "slow please"}, k...)
	waitRuns(t, env) // a native run is accepted (202) before its goroutine calls the agent
	if resp.StatusCode != http.StatusAccepted || resp2.StatusCode != http.StatusAccepted || resp2.Header.Get(turns.HeaderReplayed) != "true" ||
		runID(t, a) != runID(t, c) || len(env.runner.runs()) != 7 {
		t.Fatalf("native Idempotency-Key: %s / %s, %d runs", a, c, len(env.runner.runs()))
	}
}

// A negative DuplicateWindow (server.limits.duplicate_window: never) turns
// the replay off: the retry of a request whose client gave up before the
// answer is a new run, not the first run's answer.
func TestNegativeDuplicateWindowReplaysNothing(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.DuplicateWindow = -1 })
	body := chatBody("capgraph", false, user("slow please"))
	giveUpOnChat(t, env, body)
	env.runner.Release() // this run, and the retry's own, finish
	waitRuns(t, env)
	resp, _ := env.do(t, "POST", "/v1/chat/completions", keyAlice, body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get(turns.HeaderReplayed) != "" || len(env.runner.runs()) != 2 {
		t.Fatalf("the retry: %d, replayed %q, %d runs; want a new run", resp.StatusCode, resp.Header.Get(turns.HeaderReplayed), len(env.runner.runs()))
	}
}

// waitFollowers waits until env's one run has n requests following it.
func waitFollowers(t *testing.T, env *testEnv, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var got []int
		for _, r := range env.srv.runs.All() {
			got = append(got, r.Followers())
		}
		if len(got) == 1 && got[0] == n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the run never had %d followers", n)
}

func runID(t *testing.T, body []byte) string {
	t.Helper()
	i := strings.Index(string(body), `"id":"run-`)
	if i < 0 {
		t.Fatalf("no run id in %s", body)
	}
	return string(body[i+6 : i+6+40])
}

// Issue 13 item 8: an Idempotency-Key names one request. Sent again with a
// different request — another question, other options, another answer —
// it is a 422 naming the header, on every API, and neither the first
// request's answer nor a second run; sent again with the same request it
// is still answered from the first run.
func TestIdempotencyKeyReusedWithAnotherRequest(t *testing.T) {
	env := newTestEnv(t, nil)
	refused := func(what string, resp *http.Response, body []byte, runs int) {
		t.Helper()
		e := apiErrorOf(t, resp, string(body))
		if resp.StatusCode != http.StatusUnprocessableEntity || *e.Code != "idempotency_key_reused" || e.Param == nil || *e.Param != "Idempotency-Key" ||
			resp.Header.Get(turns.HeaderReplayed) != "" || strings.Contains(string(body), "500 mA") {
			t.Fatalf("%s: %d %s", what, resp.StatusCode, body)
		}
		if n := len(env.runner.runs()); n != runs {
			t.Fatalf("%s: %d runs, want %d", what, n, runs)
		}
	}
	k := []string{"Idempotency-Key", "order-8"}
	env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user("Read SR:DCCT")), k...)
	resp, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user("What is the vacuum in sector 3?")), k...)
	refused("chat, another question", resp, body, 1)
	resp, body = env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", true, user("Read SR:DCCT")), k...)
	refused("chat, streamed this time", resp, body, 1)
	if resp, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user("Read SR:DCCT")), k...); resp.Header.Get(turns.HeaderReplayed) != "true" || !strings.Contains(string(body), "500 mA") {
		t.Fatalf("the same request again: %d %s", resp.StatusCode, body)
	}

	r := []string{"Idempotency-Key", "resp-8"}
	env.do(t, "POST", "/v1/responses", keyAlice, map[string]any{"model": "capgraph", "input": "Read SR:DCCT"}, r...)
	resp, body = env.do(t, "POST", "/v1/responses", keyAlice, map[string]any{"model": "capgraph", "input": "Read SR:VAC"}, r...)
	refused("responses, another question", resp, body, 2)

	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "idem8"})
	n := []string{"Idempotency-Key", "native-8"}
	if resp, body := env.do(t, "POST", "/api/threads/idem8/runs", keyAlice, map[string]any{"input": "Read SR:DCCT"}, n...); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("native: %d %s", resp.StatusCode, body)
	}
	waitRuns(t, env)
	resp, body = env.do(t, "POST", "/api/threads/idem8/runs", keyAlice, map[string]any{"input": "Read SR:VAC"}, n...)
	refused("native, another input", resp, body, 3)
	resp, body = env.do(t, "POST", "/api/threads/idem8/runs", keyAlice, map[string]any{"input": "Read SR:DCCT", "options": map[string]any{"approval_mode": "all_capabilities"}}, n...)
	refused("native, other options", resp, body, 3)
	if resp, body := env.do(t, "POST", "/api/threads/idem8/runs", keyAlice, map[string]any{"input": "Read SR:DCCT"}, n...); resp.StatusCode != http.StatusAccepted || resp.Header.Get(turns.HeaderReplayed) != "true" {
		t.Fatalf("native, the same request again: %d %s", resp.StatusCode, body)
	}
}

// An answer replayed to a repeated request is the same completion as the
// first response: the same id and creation time (a client that logs or
// dedupes by id sees one answer), streamed or not.
func TestReplayedAnswerKeepsItsCompletionID(t *testing.T) {
	env := newTestEnv(t, nil)
	k := []string{"Idempotency-Key", "same-answer-1"}
	body := chatBody("capgraph", false, user("Read SR:DCCT"))
	_, first := env.do(t, "POST", "/v1/chat/completions", keyAlice, body, k...)
	resp, again := env.do(t, "POST", "/v1/chat/completions", keyAlice, body, k...)
	var a, b struct {
		ID      string
		Created int64
	}
	if json.Unmarshal(first, &a) != nil || json.Unmarshal(again, &b) != nil || resp.Header.Get(turns.HeaderReplayed) != "true" {
		t.Fatalf("first %s; again %v %s", first, resp.Header, again)
	}
	if a.ID == "" || a.ID != b.ID || a.Created != b.Created {
		t.Fatalf("first completion %s at %d, replayed as %s at %d; want the same", a.ID, a.Created, b.ID, b.Created)
	}
	ks := []string{"Idempotency-Key", "same-answer-2"}
	streamed := chatBody("capgraph", true, user("Read SR:DCCT"))
	_, s1 := env.do(t, "POST", "/v1/chat/completions", keyAlice, streamed, ks...)
	_, s2 := env.do(t, "POST", "/v1/chat/completions", keyAlice, streamed, ks...)
	id := func(b []byte) string {
		_, rest, _ := strings.Cut(string(b), `"id":"`)
		v, _, _ := strings.Cut(rest, `"`)
		return v
	}
	if id(s1) == "" || id(s1) != id(s2) || id(s1) == a.ID || strings.Count(string(s2), `"id":"`+id(s1)+`"`) < 2 {
		t.Fatalf("streamed: first %q, replayed %q (the other run's %q):\n%s", id(s1), id(s2), a.ID, s2)
	}
	if !strings.HasPrefix(a.ID, "chatcmpl-") {
		t.Fatalf("completion id %q", a.ID)
	}
}

// A chat client whose run a cancel request stops (the operator's page, the
// native API) gets an answer saying so, not an empty message.
func TestCanceledChatRunSaysSo(t *testing.T) {
	for _, stream := range []bool{false, true} {
		env := newTestEnv(t, nil)
		done := make(chan []byte, 1)
		go func() {
			_, b := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", stream, user("slow please")))
			done <- b
		}()
		var ru *run
		deadline := time.Now().Add(10 * time.Second)
		for ru == nil {
			if time.Now().After(deadline) {
				t.Fatal("the chat run never started")
			}
			for _, r := range env.srv.runs.All() {
				ru = r
			}
			time.Sleep(5 * time.Millisecond)
		}
		resp, body := env.do(t, "POST", "/api/threads/"+ru.ClientThread+"/runs/"+ru.ID+"/cancel", keyAlice, nil)
		if resp.StatusCode >= 300 {
			t.Fatalf("cancel: %d %s", resp.StatusCode, body)
		}
		var b []byte
		select {
		case b = <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("no answer after the cancel")
		}
		if !strings.Contains(string(b), "canceled before it finished") {
			t.Fatalf("stream %v: the answer of the canceled run: %s", stream, b)
		}
	}
}

// giveUpOnChat sends a chat request as alice and gives up on it before the
// answer (an SDK timeout), then waits until the server saw the client go.
func giveUpOnChat(t *testing.T, env *testEnv, body any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, "POST", env.http.URL+"/v1/chat/completions", strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(turns.HeaderRetryCount, "0") // an SDK, which repeats the request (its run outlives it)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("the slow request answered")
	}
	cancel()
	waitFollowers(t, env, 0)
}

// heldReleases holds every key release (Server.delivered) until released,
// and records the order of the record writes.
type heldReleases struct {
	runstore.Store
	held chan struct{}
	mu   sync.Mutex
	log  []string
}

func (h *heldReleases) note(s string) {
	h.mu.Lock()
	h.log = append(h.log, s)
	h.mu.Unlock()
}

func (h *heldReleases) UpdateRun(ctx context.Context, id string, u runstore.Update) (runstore.Record, error) {
	if u.ReleaseKey && u.Status == runstore.Done {
		<-h.held
		defer h.note("released")
	}
	return h.Store.UpdateRun(ctx, id, u)
}

func (h *heldReleases) CreateRun(ctx context.Context, rec runstore.Record) (runstore.Record, bool, error) {
	h.note("created")
	return h.Store.CreateRun(ctx, rec)
}

// An answered request's key is released after its response has ended (the
// client does not wait for that commit), and the same request sent while
// the release is still being written waits for it: a new question, a new
// run, never the first run's answer replayed.
func TestAnsweredKeyReleasedAfterTheResponse(t *testing.T) {
	h := &heldReleases{Store: memory.New(), held: make(chan struct{})}
	env := newTestEnv(t, func(c *Config) { c.Runs = h })
	read := chatBody("capgraph", false, user("What is the beam current?"))
	// The answer arrives while its key's release is held.
	if resp, b := env.do(t, "POST", "/v1/chat/completions", keyAlice, read); resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "500 mA") {
		t.Fatalf("the first request: %d %s", resp.StatusCode, b)
	}
	second := make(chan *http.Response, 1)
	go func() {
		resp, _ := env.do(t, "POST", "/v1/chat/completions", keyAlice, read)
		second <- resp
	}()
	select {
	case resp := <-second:
		t.Fatalf("the same request was answered (%d, replayed %q) before the first one's key was released", resp.StatusCode, resp.Header.Get(turns.HeaderReplayed))
	case <-time.After(200 * time.Millisecond):
	}
	close(h.held)
	resp := <-second
	if resp.StatusCode != http.StatusOK || resp.Header.Get(turns.HeaderReplayed) != "" || len(env.runner.runs()) != 2 {
		t.Fatalf("the same request after the release: %d, replayed %q, %d runs; want a new run", resp.StatusCode, resp.Header.Get(turns.HeaderReplayed), len(env.runner.runs()))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if want := []string{"created", "released", "created"}; !slices.Equal(h.log[:3], want) {
		t.Errorf("record writes %v; want %v first", h.log, want)
	}
}
