package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/native"
	"github.com/capgraph/capgraph/server/internal/transcripts"
	"github.com/capgraph/capgraph/server/internal/turns"
	"github.com/capgraph/capgraph/state"
)

// crashedRecord is the record a server that died right after
// acknowledging a run leaves behind: running, owned by the dead process,
// its input never started.
func crashedRecord(t *testing.T, env *testEnv, id string, c caller, source, clientThread string, in runInput, key string) runstore.Record {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	sp := runSpec{c: c, source: source, clientThread: clientThread}
	rec, created, err := env.srv.records.CreateRun(context.Background(), runstore.Record{ID: id, Thread: internalThreadID(c, clientThread),
		Status: runstore.Running, Input: b, Labels: sp.labels(), Owner: "dead-process", Attempt: 1, Key: key})
	if err != nil || !created {
		t.Fatalf("record %s: %v", id, err)
	}
	return rec
}

func turnInput(env *testEnv, c caller, source, clientThread, input string, meta map[string]string) runInput {
	req := env.srv.turnRequest(c, internalThreadID(c, clientThread), input, nil, env.srv.turnMetadata(c, source, clientThread, meta))
	return runInput{Kind: kindTurn, Turn: &storedTurn{Input: req.Input, By: req.By, Metadata: req.Metadata}}
}

// Issue 13 item 2: after a crash every acknowledged input is answered or
// marked failed with a reason the client can read — runs whose input never
// reached the checkpoints are started from their record, a run a later
// run on its thread replaced and an answer for a thread that is gone are
// marked failed — and a retry of an acknowledged chat request gets the
// recovered run's answer instead of a second run.
func TestAcknowledgedRunsAreAnsweredAfterACrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crash.db")
	first := sqliteAgentEnv(t, path)
	first.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "beam"})
	first.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "older"})
	a := crashedRecord(t, first, "run-a", alice, "native", "beam", turnInput(first, alice, "native", "beam", "What is the beam current?", nil), "")
	older := crashedRecord(t, first, "run-older", alice, "native", "older", turnInput(first, alice, "native", "older", "What is the beam current?", nil), "")
	newer := crashedRecord(t, first, "run-newer", alice, "native", "older", turnInput(first, alice, "native", "older", "And now?", nil), "")
	gone := crashedRecord(t, first, "run-gone", alice, "native", "gone", runInput{Kind: kindAnswer, Answer: &storedAnswer{ApprovalID: "approval-1", Text: "yes"}}, "")
	// A Chat Completions request acknowledged (its record written) just
	// before the crash; the SDK retries it after the restart.
	chatReq, _ := http.NewRequest("POST", "/v1/chat/completions", nil)
	msgs := []transcripts.Msg{{Role: "user", Text: "What is the beam current?"}}
	key, _ := idempotencyKey(chatReq, alice, "chat", "capgraph\x00\x00\x00false\x00"+transcriptDigest(alice, msgs))
	meta := first.srv.turnMetadata(alice, "openai", "chat-crashed", nil)
	meta[metaTranscript] = transcriptDigest(alice, msgs)
	chat := crashedRecord(t, first, "run-chat", alice, "openai", "chat-crashed",
		runInput{Kind: kindTurn, Turn: &storedTurn{Input: "What is the beam current?", By: "alice", Metadata: meta}}, key)
	first.http.Close()

	second := sqliteAgentEnv(t, path)
	started, err := second.srv.RecoverAllRuns(context.Background())
	if err != nil {
		t.Fatalf("RecoverAllRuns: %v", err)
	}
	waitRuns(t, second)
	if len(started) != 3 {
		t.Fatalf("started %v; want the runs of beam, older (the newer one) and the chat", started)
	}
	get := func(thread, run string) native.RunInfo {
		t.Helper()
		resp, body := second.do(t, "GET", "/api/threads/"+thread+"/runs/"+run, keyAlice, nil)
		var ri native.RunInfo
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &ri) != nil {
			t.Fatalf("run %s: %d %s", run, resp.StatusCode, body)
		}
		return ri
	}
	if ri := get("beam", a.ID); !ri.Finished || ri.Status != agent.RunAnswered {
		t.Fatalf("the never-started run: %+v", ri)
	}
	_, body := second.do(t, "GET", "/api/threads/beam/state", keyAlice, nil)
	if !strings.Contains(string(body), "401.5") || !strings.Contains(string(body), "What is the beam current?") {
		t.Fatalf("beam's state: %s", body)
	}
	if ri := get("older", older.ID); ri.Status != agent.RunFailed || !strings.Contains(ri.Error, "a later run on the thread replaced it") {
		t.Fatalf("the replaced run: %+v", ri)
	}
	if ri := get("older", newer.ID); ri.Status != agent.RunAnswered {
		t.Fatalf("the later run: %+v", ri)
	}
	if rec, err := second.srv.records.GetRun(context.Background(), gone.ID); err != nil || rec.Status != runstore.Failed || !strings.Contains(rec.Error, "no longer exists") {
		t.Fatalf("the answer for a deleted thread: %+v, %v", rec, err)
	}
	// The SDK's retry of the acknowledged chat request: the recovered
	// run's answer, no second run.
	resp, body := second.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user("What is the beam current?")))
	if resp.StatusCode != http.StatusOK || resp.Header.Get(turns.HeaderReplayed) != "true" || !strings.Contains(string(body), "401.5") {
		t.Fatalf("retried chat: %d %s %s", resp.StatusCode, resp.Header, body)
	}
	agentState, _, err := second.srv.cfg.Runner.State(context.Background(), chat.Thread)
	if err != nil || agentState.Turn.Number != 1 {
		t.Fatalf("the chat thread ran %d turns (%v); want 1", agentState.Turn.Number, err)
	}
	// Nothing acknowledged is left unanswered.
	open, err := second.srv.records.ListRuns(context.Background(), runstore.Filter{Status: []runstore.Status{runstore.Queued, runstore.Running}})
	if err != nil || len(open) != 0 {
		t.Fatalf("records still open: %+v %v", open, err)
	}
}

// gatedRuns is a RunStore whose CreateRun waits for a gate (or fails).
type gatedRuns struct {
	*memory.Store
	gate chan struct{}
	fail bool
}

func (g *gatedRuns) CreateRun(ctx context.Context, rec runstore.Record) (runstore.Record, bool, error) {
	if g.fail {
		return runstore.Record{}, false, errors.New("database /var/lib/capgraph/state.db is locked")
	}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return runstore.Record{}, false, ctx.Err()
	}
	return g.Store.CreateRun(ctx, rec)
}

// Issue 13 item 2: no acknowledgement — no status line, no stream byte —
// leaves the server before the run's record is written, and a record that
// cannot be written is a 500 (with a reference, not the store's error)
// with nothing run.
func TestNothingIsAcknowledgedBeforeTheRecord(t *testing.T) {
	g := &gatedRuns{Store: memory.New(), gate: make(chan struct{})}
	env := newTestEnv(t, func(c *Config) { c.Runs = g })
	// One thread per request: a streaming request that leaves without
	// reading cancels its run, which may still be stopping when the next
	// request comes (a 409 for that thread, rightly).
	for _, id := range []string{"g", "g-b", "g-c"} {
		env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": id})
	}
	for _, tc := range []struct{ path, body string }{
		{"/api/threads/g/runs", `{"input":"What is the beam current?","stream":true}`},
		{"/api/threads/g-b/runs", `{"input":"What is the beam current? (202)"}`},
		{"/v1/chat/completions", `{"model":"capgraph","stream":true,"messages":[{"role":"user","content":"What is the beam current?"}]}`},
		{"/agui", `{"threadId":"g2","messages":[{"id":"u","role":"user","content":"What is the beam current?"}]}`},
	} {
		answered := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest("POST", env.http.URL+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+keyAlice)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answered <- -1
				return
			}
			resp.Body.Close()
			answered <- resp.StatusCode
		}()
		select {
		case code := <-answered:
			t.Fatalf("%s answered %d before its run was recorded", tc.path, code)
		case <-time.After(300 * time.Millisecond):
		}
		g.gate <- struct{}{}
		if code := <-answered; code != http.StatusOK && code != http.StatusAccepted {
			t.Fatalf("%s after the record: %d", tc.path, code)
		}
	}
	g.fail = true
	before := len(env.runner.runs())
	resp, body := env.do(t, "POST", "/api/threads/g-c/runs", keyAlice, map[string]any{"input": "What is the beam current? (again)"})
	e := apiErrorOf(t, resp, string(body))
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(e.Message, "reference") || strings.Contains(e.Message, "/var/lib") {
		t.Fatalf("record write failed: %d %s", resp.StatusCode, body)
	}
	if len(env.runner.runs()) != before {
		t.Fatal("a run started without its record")
	}
}

// heldEnds is a RunStore whose writes of a run's end wait for a word on
// release: true writes it, false fails it — the process "dies" while the
// record of a run whose client already has its answer is being written.
type heldEnds struct {
	runstore.Store
	holding chan string // the run whose end's write waits
	release chan bool
}

func (h *heldEnds) UpdateRun(ctx context.Context, id string, u runstore.Update) (runstore.Record, error) {
	if !u.Status.Terminal() {
		return h.Store.UpdateRun(ctx, id, u)
	}
	h.holding <- id
	if <-h.release {
		return h.Store.UpdateRun(ctx, id, u)
	}
	return runstore.Record{}, errors.New("the process was killed")
}

// On one process a client gets its run's end before the run's record says
// so (a commit it does not wait for). A repeat of the request meanwhile
// waits for the record and is answered from it. A crash before the record
// is written loses nothing: the thread's last checkpoint was durable before
// the end was reported, so recovery writes the record from it (the answer,
// for the repeat after the restart), and the turn does not run again.
func TestTheEndIsToldBeforeTheRecordIsWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "end.db")
	first := sqliteAgentEnv(t, path)
	held := &heldEnds{Store: first.srv.records, holding: make(chan string, 1), release: make(chan bool)}
	first.srv.records = held
	ask := func(env *testEnv, key, question string) (*http.Response, []byte) {
		return env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user(question)), "Idempotency-Key", key)
	}
	const question = "What is the beam current?"
	answered := make(chan struct{})
	var waited atomic.Bool
	go func() {
		select {
		case <-answered:
		case <-time.After(10 * time.Second):
			waited.Store(true)
			held.release <- true // fail below rather than hang
		}
	}()
	resp, body := ask(first, "ask-1", question)
	close(answered)
	if waited.Load() {
		t.Fatal("the answer waited for the run's end to be written")
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "401.5") {
		t.Fatalf("the answer: %d %s", resp.StatusCode, body)
	}
	// The end's write starts as the run ends, beside the answer's delivery
	// (which of the two comes first is the scheduler's choice); it cannot
	// finish while held, so the answer above did not wait for it.
	var id string
	select {
	case id = <-held.holding:
	case <-time.After(5 * time.Second):
		t.Fatal("the client had its answer, and the run's end was not written: the test does not hold what it means to")
	}
	if rec, err := held.GetRun(context.Background(), id); err != nil || rec.Status != runstore.Running {
		t.Fatalf("the record while its end is written: %+v, %v; want running", rec, err)
	}
	type answer struct {
		resp *http.Response
		body []byte
	}
	repeat := make(chan answer, 1)
	go func() {
		resp, body := ask(first, "ask-1", question)
		repeat <- answer{resp, body}
	}()
	select {
	case a := <-repeat:
		t.Fatalf("the repeat was answered (%d %s) before the record was written", a.resp.StatusCode, a.body)
	case <-time.After(100 * time.Millisecond):
	}
	held.release <- true
	if a := <-repeat; a.resp.StatusCode != http.StatusOK || a.resp.Header.Get(turns.HeaderReplayed) != "true" || !strings.Contains(string(a.body), "401.5") {
		t.Fatalf("the repeat once the record was written: %d %s %s", a.resp.StatusCode, a.resp.Header, a.body)
	}

	// The next question; the process dies while its end is written.
	resp, body = ask(first, "ask-2", question)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "401.5") {
		t.Fatalf("the second answer: %d %s", resp.StatusCode, body)
	}
	id = <-held.holding
	held.release <- false
	waitRuns(t, first)
	first.http.Close()

	second := sqliteAgentEnv(t, path)
	if _, err := second.srv.RecoverAllRuns(context.Background()); err != nil {
		t.Fatalf("RecoverAllRuns: %v", err)
	}
	waitRuns(t, second)
	rec, err := second.srv.records.GetRun(context.Background(), id)
	if err != nil || rec.Status != runstore.Done {
		t.Fatalf("the record after the restart: %+v, %v; want done", rec, err)
	}
	resp, replayed := ask(second, "ask-2", question)
	if resp.StatusCode != http.StatusOK || resp.Header.Get(turns.HeaderReplayed) != "true" || !strings.Contains(string(replayed), "401.5") {
		t.Fatalf("the repeat after the restart: %d %s %s", resp.StatusCode, resp.Header, replayed)
	}
	st, _, err := second.srv.cfg.Runner.State(context.Background(), rec.Thread)
	if err != nil || st.Turn.Number != 1 {
		t.Fatalf("the thread ran %d turns (%v); want 1", st.Turn.Number, err)
	}
}

// threadWatch is a RunStore that notes, as a run's record is written,
// whether its thread was in the checkpoint store then, and lets the
// thread's first checkpoint (heldInit) be written only once a record's
// write has started.
type threadWatch struct {
	runstore.Store
	threads interface {
		State(ctx context.Context, thread string) (state.State, agent.RunStatus, error)
	}
	absentAtRecord []string
	recordStarted  chan struct{}
	startOnce      sync.Once
	inMemory       bool
}

// InMemory says what the wrapped store would (agent.InMemory).
func (w *threadWatch) InMemory() bool { return w.inMemory }

func (w *threadWatch) CreateRun(ctx context.Context, rec runstore.Record) (runstore.Record, bool, error) {
	if _, _, err := w.threads.State(ctx, rec.Thread); errors.Is(err, agent.ErrUnknownThread) {
		w.absentAtRecord = append(w.absentAtRecord, rec.Thread)
	}
	w.startOnce.Do(func() { close(w.recordStarted) })
	return w.Store.CreateRun(ctx, rec)
}

// heldInit is a checkpoint store whose first thread-creating checkpoint
// (graph.Init's: step 0, no parent, nothing next) waits until a run
// record's write has started, or 5 s: a server that made the thread
// before writing the record would wait them out (waitedOut).
type heldInit struct {
	*sqlite.Store
	recordStarted <-chan struct{}
	once          sync.Once
	waitedOut     atomic.Bool
}

func (h *heldInit) Put(ctx context.Context, cp checkpoint.Checkpoint) error {
	h.hold(cp)
	return h.Store.Put(ctx, cp)
}

// PutFirst is how Init writes over a store that has it, as SQLite does.
func (h *heldInit) PutFirst(ctx context.Context, cp checkpoint.Checkpoint) (bool, error) {
	h.hold(cp)
	return h.Store.PutFirst(ctx, cp)
}

func (h *heldInit) hold(cp checkpoint.Checkpoint) {
	if cp.Step == 0 && cp.ParentID == uuid.Nil && len(cp.Next) == 0 {
		h.once.Do(func() {
			select {
			case <-h.recordStarted:
			case <-time.After(5 * time.Second):
				h.waitedOut.Store(true)
			}
		})
	}
}

// A chat turn's new thread is made beside its run's record, not before it
// (an embedded store commits the two together): the record's write starts
// before the thread is in the store — the thread's first checkpoint is
// held until it has — and both are there, counted once, when the answer
// comes. A thread already there is not made again.
func TestANewChatThreadIsMadeBesideItsRecord(t *testing.T) {
	started := make(chan struct{})
	store := &heldInit{Store: openSQLite(t, filepath.Join(t.TempDir(), "beside.db")), recordStarted: started}
	env := agentEnvOver(t, store)
	w := &threadWatch{Store: env.srv.records, threads: env.srv.cfg.Runner, recordStarted: started}
	env.srv.records = w
	resp, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user("What is the beam current?")))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "401.5") {
		t.Fatalf("the answer: %d %s", resp.StatusCode, body)
	}
	if store.waitedOut.Load() {
		t.Fatal("the new thread was made before its run's record was written")
	}
	if len(w.absentAtRecord) != 1 {
		t.Fatalf("threads absent when their record was written: %v; want the new chat's", w.absentAtRecord)
	}
	_, list := env.do(t, "GET", "/api/threads", keyAlice, nil)
	if ths := threadIDs(t, list); len(ths) != 1 {
		t.Fatalf("threads after one new chat: %s", list)
	}
	n, err := env.srv.countThreads(context.Background(), alice)
	if err != nil || n != 1 {
		t.Fatalf("counted %d threads (%v); want 1", n, err)
	}
	// The conversation goes on in its thread: nothing new to make.
	resp, body = env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false,
		user("What is the beam current?"), assistant(chatContent(t, body)), user("And again?")))
	if resp.StatusCode != http.StatusOK || len(w.absentAtRecord) != 1 {
		t.Fatalf("the second turn: %d %s; absent at record %v", resp.StatusCode, body, w.absentAtRecord)
	}
}

// On a store in memory (agent.InMemory) there is no commit to share:
// a new chat's thread is made in place, before its run's record.
func TestANewChatThreadIsMadeInPlaceInMemory(t *testing.T) {
	env := agentEnvOver(t, memory.New())
	w := &threadWatch{Store: env.srv.records, threads: env.srv.cfg.Runner, recordStarted: make(chan struct{}), inMemory: true}
	env.srv.records = w
	for range 3 {
		resp, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user("What is the beam current?")))
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "401.5") {
			t.Fatalf("the answer: %d %s", resp.StatusCode, body)
		}
	}
	if len(w.absentAtRecord) != 0 {
		t.Fatalf("threads absent when their record was written: %v; want none", w.absentAtRecord)
	}
	if n, err := env.srv.countThreads(context.Background(), alice); err != nil || n != 3 {
		t.Fatalf("counted %d threads (%v); want 3", n, err)
	}
}

// deferrableNotes is a RunStore that notes, for each record write, whether
// it was made deferrable (runstore.Deferrable).
type deferrableNotes struct {
	runstore.Store
	mu    sync.Mutex
	notes []string // "create true", "end false", "release true", …
	freed chan struct{}
}

func (d *deferrableNotes) note(what string, ctx context.Context) {
	d.mu.Lock()
	d.notes = append(d.notes, fmt.Sprintf("%s %t", what, runstore.IsDeferrable(ctx)))
	d.mu.Unlock()
}

func (d *deferrableNotes) CreateRun(ctx context.Context, rec runstore.Record) (runstore.Record, bool, error) {
	d.note("create", ctx)
	return d.Store.CreateRun(ctx, rec)
}

func (d *deferrableNotes) UpdateRun(ctx context.Context, id string, u runstore.Update) (runstore.Record, error) {
	what := "end"
	if u.ReleaseKey && len(u.From) == 1 && u.From[0] == u.Status {
		what = "release"
	}
	d.note(what, ctx)
	r, err := d.Store.UpdateRun(ctx, id, u)
	if what == "release" {
		d.freed <- struct{}{}
	}
	return r, err
}

func (d *deferrableNotes) take() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.notes
	d.notes = nil
	return out
}

// The record writes nobody waits on — a run's end, written after the
// answer went out, and the release of the key derived from the request,
// after it was delivered — are deferrable, and so is a new thread's first
// run record, which the thread's write (made beside it) takes along on an
// embedded store; the record of a turn on an existing thread is not: the
// run waits for it and no other write follows.
func TestRecordWritesNobodyWaitsOnAreDeferrable(t *testing.T) {
	env := sqliteAgentEnv(t, filepath.Join(t.TempDir(), "deferrable.db"))
	notes := &deferrableNotes{Store: env.srv.records, freed: make(chan struct{}, 4)}
	env.srv.records = notes
	turn := func(msgs ...map[string]any) string {
		resp, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, msgs...))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		select {
		case <-notes.freed: // the key derived from the request, released once delivered
		case <-time.After(10 * time.Second):
			t.Fatal("the request's key was not released")
		}
		return chatContent(t, body)
	}
	first := turn(user("What is the beam current?"))
	if got, want := notes.take(), []string{"create true", "end true", "release true"}; !slices.Equal(got, want) {
		t.Errorf("a new conversation's record writes (deferrable?) %v, want %v", got, want)
	}
	turn(user("What is the beam current?"), assistant(first), user("And the vacuum in the injector?"))
	if got, want := notes.take(), []string{"create false", "end true", "release true"}; !slices.Equal(got, want) {
		t.Errorf("a follow-up's record writes (deferrable?) %v, want %v", got, want)
	}
}
