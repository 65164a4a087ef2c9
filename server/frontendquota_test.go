package server

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/runstore"
)

// Issue 34: behind one trusted frontend key (Open WebUI forwarding
// X-OpenWebUI-User-Id), max_threads holds per forwarded user, not for the
// key: one user's chats never use up another's, the key's own requests
// (no user forwarded) count apart, and a thread not updated for
// limits.thread_retention is deleted, which gives its owner room again —
// so a control room using the product as intended does not run into its
// quota. Over real HTTP, on a real agent over SQLite.
func TestThreadQuotaBehindTrustedFrontend(t *testing.T) {
	var ahead atomic.Int64 // how far the server's clock is ahead
	env := sqliteAgentEnvWith(t, filepath.Join(t.TempDir(), "frontend.db"), func(c *Config) {
		c.MaxThreads = 2
		c.ThreadRetention = time.Hour
		c.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	})
	chat := func(userID, chatID string) (*http.Response, []byte) {
		t.Helper()
		hdr := []string{"X-OpenWebUI-Chat-Id", chatID}
		if userID != "" {
			hdr = append(hdr, "X-OpenWebUI-User-Id", userID)
		}
		return env.do(t, "POST", "/v1/chat/completions", keyWebUI, chatBody("capgraph", false, user("What is the beam current of the storage ring?")), hdr...)
	}
	answered := func(what string, resp *http.Response, body []byte) {
		t.Helper()
		if resp.StatusCode != http.StatusOK || !strings.Contains(chatContent(t, body), "401.5") {
			t.Fatalf("%s: %d %s", what, resp.StatusCode, body)
		}
	}
	refused := func(what string, resp *http.Response, body []byte) {
		t.Helper()
		e := apiErrorOf(t, resp, string(body))
		if resp.StatusCode != http.StatusForbidden || *e.Code != "quota_exceeded" || !strings.Contains(e.Message, "max_threads") {
			t.Fatalf("%s: %d %s", what, resp.StatusCode, body)
		}
	}

	for _, c := range []string{"ann-1", "ann-2"} {
		resp, body := chat("ann", c)
		answered("ann's chat "+c, resp, body)
	}
	resp, body := chat("ann", "ann-3")
	refused("ann's third chat", resp, body)
	// A chat she has is no new thread.
	resp, body = chat("ann", "ann-1")
	answered("ann going on in her first chat", resp, body)
	// Ann's quota is hers: Ben and the key itself have their own.
	for _, c := range []string{"ben-1", "ben-2"} {
		resp, body := chat("ben", c)
		answered("ben's chat "+c, resp, body)
	}
	resp, body = chat("", "frontend-1")
	answered("the frontend's own chat", resp, body)

	// Two hours on, every thread is past the retention and is deleted;
	// Ann starts new chats again.
	recordsSettled(t, env)
	ahead.Store(int64(2 * time.Hour))
	n, err := env.srv.expireThreads(context.Background(), env.srv.cfg.Now().Add(-env.srv.cfg.ThreadRetention))
	if err != nil || n != 5 {
		t.Fatalf("expired %d threads (%v), want the 5 made", n, err)
	}
	resp, body = env.do(t, "GET", "/api/threads", keyWebUI, nil, "X-OpenWebUI-User-Id", "ann")
	if got := threadIDs(t, body); resp.StatusCode != http.StatusOK || len(got) != 0 {
		t.Fatalf("ann's threads after the retention: %d %v", resp.StatusCode, got)
	}
	for _, c := range []string{"ann-3", "ann-4"} {
		resp, body := chat("ann", c)
		answered("ann's chat after the retention "+c, resp, body)
	}
	resp, body = chat("ann", "ann-5")
	refused("ann's third chat after the retention", resp, body)

	// A thread updated within the retention stays (the agent's clock, which
	// times the threads, is the real one).
	ahead.Store(0)
	if n, err := env.srv.expireThreads(context.Background(), env.srv.cfg.Now().Add(-env.srv.cfg.ThreadRetention)); err != nil || n != 0 {
		t.Fatalf("expired %d threads updated half an hour ago (%v)", n, err)
	}
}

// Issue 34: limits.thread_retention deletes idle threads, and a thread
// waiting for a human is not idle. Past the retention, a thread whose
// approval can still be answered is kept — the operator's yes then still
// writes, once — and so is a thread with a run still owed an outcome (a
// queued record, then a running one); an answered read goes, and so does a waiting thread once
// its approval expired, or once it was answered. A thread that cannot be
// read is kept, and the others expire all the same. On a real agent over
// SQLite, whose approval model claims every answer is a yes.
func TestThreadRetentionKeepsWhatWaitsForAHuman(t *testing.T) {
	var ahead atomic.Int64 // how far the server's clock is ahead
	e := newOnlyHumanEnv(t, func(c *agent.Config) { c.ApprovalExpiry = 3 * time.Hour }, func(c *Config) {
		c.ThreadRetention = time.Hour
		c.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	})
	ctx := context.Background()
	expire := func(at time.Duration) int {
		t.Helper()
		ahead.Store(int64(at))
		n, err := e.srv.expireThreads(ctx, e.srv.cfg.Now().Add(-e.srv.cfg.ThreadRetention))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	threads := func() []agent.ThreadInfo {
		t.Helper()
		infos, err := e.srv.features.threads.Threads(ctx, agent.ThreadFilter{})
		if err != nil {
			t.Fatal(err)
		}
		return infos
	}
	titleOf := func(info agent.ThreadInfo) string { return info.Metadata[metaClientPrefix+metaTitle] }
	titles := func() []string {
		t.Helper()
		var out []string
		for _, info := range threads() {
			out = append(out, titleOf(info))
		}
		slices.Sort(out)
		return out
	}
	threadTitled := func(prefix string) string {
		t.Helper()
		for _, info := range threads() {
			if strings.HasPrefix(titleOf(info), prefix) {
				return info.ThreadID
			}
		}
		t.Fatalf("no thread titled %q in %v", prefix, titles())
		return ""
	}

	ask, tok := e.askQ1(t, false, setQ1To105)
	e.askQ1(t, false, "Please set the Q1 current to 110 A")
	for _, q := range []string{"What is the beam current?", "And the storage ring's beam current now?"} {
		if got := e.chat(t, false, user(q)); !strings.Contains(got, "401.5") {
			t.Fatalf("%s: %q", q, got)
		}
	}
	queued := runstore.Record{ID: "run-queued", Thread: threadTitled("And the storage ring"), Status: runstore.Queued, Created: time.Now()}
	if _, _, err := e.srv.records.CreateRun(ctx, queued); err != nil {
		t.Fatal(err)
	}
	// A thread whose state this agent cannot read (a damaged row) is not
	// deleted unread, and does not hold up the others.
	damaged := checkpoint.Checkpoint{ThreadID: "damaged", ID: uuid.Must(uuid.NewV7()), RunID: uuid.Must(uuid.NewV7()),
		State: []byte("{not json"), Created: time.Now(), Metadata: map[string]string{metaClientPrefix + metaTitle: "Damaged"}}
	if err := e.store.Put(ctx, damaged); err != nil {
		t.Fatal(err)
	}
	if got := titles(); len(got) != 5 {
		t.Fatalf("threads before the retention: %q", got)
	}
	recordsSettled(t, e.testEnv)

	// Two hours on: the approvals (3 h) can still be answered.
	if n := expire(2 * time.Hour); n != 1 {
		t.Fatalf("expired %d threads, want the answered read alone; left %q", n, titles())
	}
	for _, want := range []string{"And the storage ring", "Damaged", "Please set the Q1", "Set the Q1"} {
		if !slices.ContainsFunc(titles(), func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Fatalf("%q was deleted: left %q", want, titles())
		}
	}
	reply := e.chat(t, false, user(setQ1To105), assistant(ask), user("yes "+tok))
	if w := e.plant.written(); len(w) != 1 || w[0] != 105 {
		t.Fatalf("the yes after the retention: %q, writes %v", reply, w)
	}
	recordsSettled(t, e.testEnv)

	// Four hours on: the other approval expired, the first was answered;
	// the queued run, started now, is still owed its outcome.
	if _, err := e.srv.records.UpdateRun(ctx, queued.ID, runstore.Update{From: []runstore.Status{runstore.Queued}, Status: runstore.Running}); err != nil {
		t.Fatal(err)
	}
	if n := expire(4 * time.Hour); n != 2 {
		t.Fatalf("expired %d threads, want the answered and the expired approval; left %q", n, titles())
	}
	if got := titles(); len(got) != 2 || !strings.HasPrefix(got[0], "And the storage ring") || got[1] != "Damaged" {
		t.Fatalf("left %q, want the thread with the queued run and the damaged one", got)
	}
	if _, err := e.srv.records.UpdateRun(ctx, queued.ID, runstore.Update{From: []runstore.Status{runstore.Running}, Status: runstore.Done}); err != nil {
		t.Fatal(err)
	}
	if n := expire(4 * time.Hour); n != 1 || len(titles()) != 1 {
		t.Fatalf("expired %d once the run ended; left %q", n, titles())
	}
	if w := e.plant.written(); len(w) != 1 {
		t.Fatalf("writes %v", w)
	}
}

// recordsSettled waits until no run record but the test's own says
// running: a run's end is told before its record is written (on one
// process), and a thread whose run is still owed its record is not expired.
func recordsSettled(t *testing.T, env *testEnv) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		open, err := env.srv.records.ListRuns(context.Background(), runstore.Filter{Status: []runstore.Status{runstore.Running}})
		if err != nil {
			t.Fatal(err)
		}
		if len(open) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run records still running: %v", open)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
