package server

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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
