package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/server/internal/native"
)

// Issue 13 item 1: thread metadata is bounded in keys, bytes and alphabet
// (the 0.9 MB of metadata per thread is refused), and nothing of a
// refused request is kept.
func TestThreadMetadataLimits(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.MaxMetadataKeys = 4; c.MaxMetadataBytes = 64 })
	big := strings.Repeat("x", 900_000)
	many := map[string]string{}
	for i := range 5 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	for _, tc := range []struct {
		meta map[string]string
		says string
	}{
		{map[string]string{"title": big}, "exceed the limit of 64"},
		{many, "5 keys exceed the limit of 4"},
		{map[string]string{"a b": "v"}, "a metadata key is 1 to 64 characters"},
		{map[string]string{"": "v"}, "a metadata key"},
		{map[string]string{"k": "a\x00b"}, "NUL"},
		{map[string]string{"k": "\xc0\xae"}, ""}, // JSON turns invalid UTF-8 into U+FFFD: accepted as text
	} {
		resp, body := env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "m", "metadata": tc.meta})
		if tc.says == "" {
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("%v: %d %s", tc.meta, resp.StatusCode, body)
			}
			env.do(t, "DELETE", "/api/threads/m", keyAlice, nil)
			continue
		}
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), tc.says) {
			t.Errorf("metadata %.40v: %d %.300s", tc.meta, resp.StatusCode, body)
		}
	}
	if resp, _ := env.do(t, "GET", "/api/threads/m", keyAlice, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a refused thread exists: %d", resp.StatusCode)
	}
	if resp, body := env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "ok", "metadata": map[string]string{"title": "Beam", "area": "SR"}}); resp.StatusCode != http.StatusCreated {
		t.Fatalf("within the limits: %d %s", resp.StatusCode, body)
	}
}

// Issue 13 item 1: PATCH /api/threads/{id} cannot grow a thread's metadata
// past the limits one request at a time (each PATCH within its own limit
// of 16 keys used to add to the last: 960 keys, 485 KB after 60), nor add
// a key POST would refuse; a change that removes stays possible.
func TestThreadMetadataLimitsHoldAcrossPatches(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.MaxMetadataKeys = 20; c.MaxMetadataBytes = 4 << 10 })
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "p", "metadata": map[string]string{"title": "Beam"}})
	patch := func(set map[string]any) (int, string) {
		resp, body := env.do(t, "PATCH", "/api/threads/p", keyAlice, map[string]any{"metadata": set})
		return resp.StatusCode, string(body)
	}
	refusedAt := -1
	for i := range 60 {
		set := map[string]any{}
		for j := range 16 {
			set[fmt.Sprintf("k%d_%d", i, j)] = strings.Repeat("v", 200)
		}
		code, body := patch(set)
		if code != http.StatusOK {
			if code != http.StatusBadRequest || !strings.Contains(body, "the thread's metadata after this change: 33 keys exceed the limit of 20") {
				t.Fatalf("patch %d: %d %s", i, code, body)
			}
			refusedAt = i
			break
		}
	}
	if refusedAt != 1 {
		t.Fatalf("the patch that passes the limits was patch %d, want 1", refusedAt)
	}
	_, body := env.do(t, "GET", "/api/threads/p", keyAlice, nil)
	var th apiThread
	if err := json.Unmarshal(body, &th); err != nil || len(th.Metadata) != 17 || metadataSize(th.Metadata) > 4<<10 {
		t.Fatalf("after the refused patch: %d keys, %d bytes (%v)", len(th.Metadata), metadataSize(th.Metadata), err)
	}
	if code, body := patch(map[string]any{"a b": "v"}); code != http.StatusBadRequest || !strings.Contains(body, "a metadata key is 1 to 64 characters") {
		t.Fatalf("a key POST refuses: %d %s", code, body)
	}
	// Over the limits (a lowered limit, an older thread): removing is allowed,
	// adding is not.
	env.srv.cfg.MaxMetadataKeys = 10
	if code, body := patch(map[string]any{"k0_0": nil, "k0_1": ""}); code != http.StatusOK {
		t.Fatalf("removing over the limit: %d %s", code, body)
	}
	if code, body := patch(map[string]any{"more": "x"}); code != http.StatusBadRequest {
		t.Fatalf("adding over the limit: %d %s", code, body)
	}
	if code, body := patch(map[string]any{"title": "Beam current"}); code != http.StatusBadRequest {
		t.Fatalf("a longer value over the limit: %d %s", code, body)
	}
}

// Issue 13 item 1: an owner's threads are bounded (403 quota_exceeded
// beyond, on every API that makes threads), other owners are not touched,
// and deleting makes room; over the store, the count survives a restart.
func TestThreadLimitPerOwner(t *testing.T) {
	for _, store := range []string{"memory index", "sqlite"} {
		t.Run(store, func(t *testing.T) {
			mod := func(c *Config) { c.MaxThreads = 3 }
			var env *testEnv
			path := filepath.Join(t.TempDir(), "limit.db")
			if store == "sqlite" {
				env = sqliteAgentEnvWith(t, path, mod)
			} else {
				env = newTestEnv(t, mod)
			}
			for i := range 3 {
				if resp, body := env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": fmt.Sprintf("t%d", i)}); resp.StatusCode != http.StatusCreated {
					t.Fatalf("thread %d: %d %s", i, resp.StatusCode, body)
				}
			}
			// An existing thread is no new thread.
			if resp, body := env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "t0"}); resp.StatusCode != http.StatusOK {
				t.Fatalf("existing: %d %s", resp.StatusCode, body)
			}
			refused := func(what string, resp *http.Response, body []byte) {
				t.Helper()
				e := apiErrorOf(t, resp, string(body))
				if resp.StatusCode != http.StatusForbidden || *e.Code != "quota_exceeded" || !strings.Contains(e.Message, "max_threads") {
					t.Fatalf("%s beyond the limit: %d %s", what, resp.StatusCode, body)
				}
			}
			resp, body := env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "t3"})
			refused("native", resp, body)
			resp, body = env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user("a new chat")))
			refused("chat", resp, body)
			resp, body = env.do(t, "POST", "/agui", keyAlice, map[string]any{"threadId": "g1", "messages": []any{map[string]any{"id": "u", "role": "user", "content": "hi"}}})
			refused("agui", resp, body)
			if resp, body := env.do(t, "POST", "/api/threads", keyBob, map[string]any{"id": "t3"}); resp.StatusCode != http.StatusCreated {
				t.Fatalf("bob is limited by alice's threads: %d %s", resp.StatusCode, body)
			}
			if resp, _ := env.do(t, "DELETE", "/api/threads/t1", keyAlice, nil); resp.StatusCode != http.StatusNoContent {
				t.Fatal("delete")
			}
			if resp, body := env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "t3"}); resp.StatusCode != http.StatusCreated {
				t.Fatalf("after a delete: %d %s", resp.StatusCode, body)
			}
			if store == "sqlite" {
				env.http.Close()
				again := sqliteAgentEnvWith(t, path, mod)
				resp, body := again.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "t4"})
				refused("after a restart", resp, body)
			}
		})
	}
}

// Issue 27: the thread limit holds exactly under concurrent creations: 16
// creations at once leave the owner with max_threads threads, never more —
// on a server that knows the owner's count, and on one that must read it
// from the store first (after a restart), where each creation once took
// the count it read and the limit was overshot.
func TestThreadLimitExactUnderConcurrency(t *testing.T) {
	for _, tc := range []struct {
		name    string
		restart bool
	}{{"count known", false}, {"count read after a restart", true}} {
		t.Run(tc.name, func(t *testing.T) {
			const limit, before, concurrent = 20, 10, 16
			path := filepath.Join(t.TempDir(), "exact.db")
			mod := func(c *Config) { c.MaxThreads = limit }
			env := sqliteAgentEnvWith(t, path, mod)
			for i := range before {
				if resp, body := env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": fmt.Sprintf("pre%d", i)}); resp.StatusCode != http.StatusCreated {
					t.Fatalf("thread %d: %d %s", i, resp.StatusCode, body)
				}
			}
			if tc.restart {
				env.http.Close()
				env = sqliteAgentEnvWith(t, path, mod)
				// A store under load: the reads of the count overlap.
				env.srv.features.threads = slowCount{env.srv.features.threads}
			}
			var (
				wg               sync.WaitGroup
				created, refused atomic.Int32
			)
			for i := range concurrent {
				wg.Go(func() {
					resp, body := env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": fmt.Sprintf("c%d", i)})
					switch resp.StatusCode {
					case http.StatusCreated:
						created.Add(1)
					case http.StatusForbidden:
						refused.Add(1)
					default:
						t.Errorf("thread c%d: %d %s", i, resp.StatusCode, body)
					}
				})
			}
			wg.Wait()
			if created.Load() != limit-before || refused.Load() != concurrent-(limit-before) {
				t.Fatalf("%d created and %d refused of %d concurrent creations with %d of %d threads made; want %d created", created.Load(), refused.Load(), concurrent, before, limit, limit-before)
			}
			n, err := env.srv.countThreads(context.Background(), caller{Principal: env.srv.cfg.Principals[0]})
			if err != nil || n != limit {
				t.Fatalf("the store holds %d threads of alice (%v), want %d", n, err, limit)
			}
		})
	}
}

// slowCount is a ThreadStore whose listings by owner (the thread count)
// take a while.
type slowCount struct{ ThreadStore }

func (l slowCount) Threads(ctx context.Context, f checkpoint.ThreadFilter) ([]checkpoint.ThreadInfo, error) {
	if f.ThreadID == "" {
		time.Sleep(50 * time.Millisecond)
	}
	return l.ThreadStore.Threads(ctx, f)
}

// sqliteAgentEnvWith is sqliteAgentEnv with more configuration.
func sqliteAgentEnvWith(t *testing.T, path string, mod func(*Config)) *testEnv {
	t.Helper()
	base := sqliteAgentEnv(t, path)
	base.http.Close()
	cfg := base.srv.cfg
	mod(&cfg)
	env := newTestEnv(t, func(c *Config) { *c = cfg })
	return env
}

// Issue 13 item 1: every list is paged — threads (from the memory index
// and from the store) and a thread's runs — with a cursor that visits
// each item once, and refuses a limit beyond Config.MaxPageSize.
func TestListsArePaged(t *testing.T) {
	for _, store := range []string{"memory index", "sqlite"} {
		t.Run(store, func(t *testing.T) {
			mod := func(c *Config) { c.MaxPageSize = 50 }
			var env *testEnv
			if store == "sqlite" {
				env = sqliteAgentEnvWith(t, filepath.Join(t.TempDir(), "pages.db"), mod)
			} else {
				env = newTestEnv(t, mod)
			}
			want := map[string]bool{}
			for i := range 7 {
				id := fmt.Sprintf("p%d", i)
				want[id] = true
				env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": id})
			}
			seen := map[string]int{}
			cursor, pages := "", 0
			for {
				resp, body := env.do(t, "GET", "/api/threads?limit=3&cursor="+cursor, keyAlice, nil)
				var page struct {
					Threads    []apiThread `json:"threads"`
					HasMore    bool        `json:"has_more"`
					NextCursor string      `json:"next_cursor"`
				}
				if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &page) != nil || len(page.Threads) > 3 {
					t.Fatalf("page %d: %d %s", pages, resp.StatusCode, body)
				}
				pages++
				for _, th := range page.Threads {
					seen[th.ID]++
				}
				if !page.HasMore {
					break
				}
				if pages > 10 || page.NextCursor == "" {
					t.Fatalf("paging does not end: %s", body)
				}
				cursor = page.NextCursor
			}
			if len(seen) != len(want) {
				t.Fatalf("pages listed %v; want %v", seen, want)
			}
			for id, n := range seen {
				if n != 1 || !want[id] {
					t.Fatalf("thread %s listed %d times", id, n)
				}
			}
			for _, q := range []string{"limit=0", "limit=51", "limit=x", "cursor=not-a-cursor"} {
				if resp, body := env.do(t, "GET", "/api/threads?"+q, keyAlice, nil); resp.StatusCode != http.StatusBadRequest {
					t.Errorf("?%s: %d %s", q, resp.StatusCode, body)
				}
			}
			// A thread's runs, newest first, a page at a time.
			for i := range 5 {
				resp, body := env.do(t, "POST", "/api/threads/p0/runs", keyAlice, map[string]any{"input": fmt.Sprintf("What is the beam current? (%d)", i), "stream": true})
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("run %d: %d %s", i, resp.StatusCode, body)
				}
			}
			var ids []string
			cursor = ""
			for range 5 {
				_, body := env.do(t, "GET", "/api/threads/p0/runs?limit=2&cursor="+cursor, keyAlice, nil)
				var page struct {
					Runs       []native.RunInfo `json:"runs"`
					NextCursor string           `json:"next_cursor"`
				}
				if err := json.Unmarshal(body, &page); err != nil {
					t.Fatal(err)
				}
				for _, r := range page.Runs {
					if !r.Finished || r.Status != agent.RunAnswered || r.Thread != "p0" {
						t.Fatalf("run %+v", r)
					}
					ids = append(ids, r.ID)
				}
				if page.NextCursor == "" {
					break
				}
				cursor = page.NextCursor
			}
			if len(ids) != 5 {
				t.Fatalf("listed runs %v; want 5", ids)
			}
			// Bob sees none of them.
			if resp, _ := env.do(t, "GET", "/api/threads/p0/runs", keyBob, nil); resp.StatusCode != http.StatusNotFound {
				t.Fatalf("bob lists alice's runs: %d", resp.StatusCode)
			}
		})
	}
}
