package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/approvaltoken"
	"github.com/capgraph/capgraph/server/internal/native"
	"github.com/capgraph/capgraph/server/internal/openai"
)

func TestAuthRequired(t *testing.T) {
	env := newTestEnv(t, nil)
	routes := []struct{ method, path string }{
		{"GET", "/v1/models"},
		{"GET", "/v1/models/capgraph"},
		{"POST", "/v1/chat/completions"},
		{"GET", "/api/threads"},
		{"POST", "/api/threads"},
		{"POST", "/agui"},
	}
	for _, rt := range routes {
		for _, key := range []string{"", "sk-wrong"} {
			resp, body := env.do(t, rt.method, rt.path, key, `{}`)
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "invalid_api_key") {
				t.Errorf("%s %s key %q: %d %s", rt.method, rt.path, key, resp.StatusCode, body)
			}
		}
	}
	if resp, _ := env.do(t, "GET", "/healthz", "", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz %d", resp.StatusCode)
	}
	if resp, _ := env.do(t, "GET", "/v1/models", keyBob, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("models with key %d", resp.StatusCode)
	}
}

func TestForeignThreadIsNotFound(t *testing.T) {
	env := newTestEnv(t, nil)
	resp, body := env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "ops-1"})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create %d %s", resp.StatusCode, body)
	}
	resp, body = env.do(t, "POST", "/api/threads/ops-1/runs", keyAlice, map[string]any{"input": "What is the beam current?"})
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("run %d %s", resp.StatusCode, body)
	}
	var started struct{ Run native.RunInfo }
	if err := json.Unmarshal(body, &started); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ method, path string }{
		{"GET", "/api/threads/ops-1"},
		{"GET", "/api/threads/ops-1/state"},
		{"GET", "/api/threads/ops-1/plan"},
		{"DELETE", "/api/threads/ops-1"},
		{"POST", "/api/threads/ops-1/runs"},
		{"GET", "/api/threads/ops-1/runs/" + started.Run.ID},
		{"GET", "/api/threads/ops-1/runs/" + started.Run.ID + "/events"},
		{"POST", "/api/threads/ops-1/runs/" + started.Run.ID + "/cancel"},
	} {
		resp, body := env.do(t, p.method, p.path, keyBob, `{"input":"x"}`)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("bob %s %s: %d %s", p.method, p.path, resp.StatusCode, body)
		}
	}
	_, body = env.do(t, "GET", "/api/threads", keyBob, nil)
	if strings.Contains(string(body), "ops-1") {
		t.Fatalf("bob lists alice's thread: %s", body)
	}
	// Bob may use the same client id: he gets his own thread.
	if resp, _ := env.do(t, "POST", "/api/threads", keyBob, map[string]any{"id": "ops-1"}); resp.StatusCode != http.StatusCreated {
		t.Fatalf("bob create %d", resp.StatusCode)
	}
	if internalThreadID(caller{Principal: Principal{Name: "alice", Tenant: "lab"}}, "ops-1") == internalThreadID(caller{Principal: Principal{Name: "bob", Tenant: "lab"}}, "ops-1") {
		t.Fatal("same internal thread for two principals")
	}
}

func TestBodyLimit(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.MaxBodyBytes = 1024 })
	big := chatBody("capgraph", false, user(strings.Repeat("x", 2000)))
	for _, path := range []string{"/v1/chat/completions", "/api/threads", "/agui"} {
		resp, body := env.do(t, "POST", path, keyAlice, big)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
}

func TestMessageLimits(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.MaxMessages = 3; c.MaxMessageBytes = 100 })
	aguiMsgs := func(n int) []map[string]any {
		var out []map[string]any
		for i := range n {
			out = append(out, map[string]any{"id": itoa(i), "role": "user", "content": "a"})
		}
		return out
	}
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "lim"})
	tests := []struct {
		name string
		path string // default /v1/chat/completions
		body any
		want string
	}{
		{"agui too many", "/agui", map[string]any{"threadId": "t", "messages": aguiMsgs(4)}, "messages"},
		{"agui too long", "/agui", map[string]any{"threadId": "t", "messages": []map[string]any{{"id": "u", "role": "user", "content": strings.Repeat("y", 101)}}}, "messages"},
		{"native input too long", "/api/threads/lim/runs", map[string]any{"input": strings.Repeat("y", 101)}, "input"},
		{"native approval text too long", "/api/threads/lim/approval", map[string]any{"approval_id": "a", "text": strings.Repeat("y", 101)}, "text"},
		{"too many", "", chatBody("capgraph", false, user("a"), assistant("b"), user("c"), assistant("d"), user("e")), "messages"},
		{"too long", "", chatBody("capgraph", false, user(strings.Repeat("y", 101))), "messages[0].content"},
		{"last not user", "", chatBody("capgraph", false, user("a"), assistant("b")), "messages[1].role"},
		{"no messages", "", chatBody("capgraph", false), "messages"},
		{"bad content", "", chatBody("capgraph", false, map[string]any{"role": "user", "content": 42}), "messages[0].content"},
		{"n>1", "", map[string]any{"model": "capgraph", "n": 2, "messages": []any{user("a")}}, "n"},
		{"bad json", "", `{"model":`, "body"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = "/v1/chat/completions"
			}
			resp, body := env.do(t, "POST", path, keyAlice, tc.body)
			var e struct{ Error apierror.Body }
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusBadRequest || e.Error.Param == nil || *e.Error.Param != tc.want {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
		})
	}
}

func TestTooManyRuns(t *testing.T) {
	env := newTestEnv(t, func(c *Config) {
		c.Principals[0].MaxConcurrentRuns = 1
		c.RetryAfter = 7 * time.Second
	})
	defer env.runner.Release()
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "a"})
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "b"})
	if resp, body := env.do(t, "POST", "/api/threads/a/runs", keyAlice, map[string]any{"input": "slow please"}); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("first %d %s", resp.StatusCode, body)
	}
	resp, body := env.do(t, "POST", "/api/threads/b/runs", keyAlice, map[string]any{"input": "hello"})
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "7" {
		t.Fatalf("second %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	resp, _ = env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user("hello")))
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("chat %d", resp.StatusCode)
	}
	// Another principal is not limited by alice's runs.
	if resp, _ := env.do(t, "POST", "/v1/chat/completions", keyBob, chatBody("capgraph", false, user("hello"))); resp.StatusCode != http.StatusOK {
		t.Fatalf("bob %d", resp.StatusCode)
	}
	// The same thread cannot run twice at once.
	resp, _ = env.do(t, "POST", "/api/threads/a/runs", keyBob, map[string]any{"input": "x"})
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("bob on alice's thread %d", resp.StatusCode)
	}
}

// MaxTotalRuns bounds all principals together.
func TestTooManyRunsOnTheServer(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.MaxTotalRuns = 1 })
	defer env.runner.Release()
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "a"})
	if resp, body := env.do(t, "POST", "/api/threads/a/runs", keyAlice, map[string]any{"input": "slow please"}); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("first %d %s", resp.StatusCode, body)
	}
	resp, body := env.do(t, "POST", "/v1/chat/completions", keyBob, chatBody("capgraph", false, user("hello")))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "too_many_runs") {
		t.Fatalf("bob %d %s", resp.StatusCode, body)
	}
}

func TestIdentityHeadersOnlyFromTrustedKeys(t *testing.T) {
	env := newTestEnv(t, nil)
	hdr := []string{"X-OpenWebUI-Chat-Id", "chat-42", "X-OpenWebUI-User-Id", "u-7"}
	for i := range 2 {
		// Different messages: the same one again would be a retry of the
		// first request (answered from its run, TestRetriedChatRequest…).
		msg := fmt.Sprintf("hello %d", i)
		env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user(msg)), hdr...)
		env.do(t, "POST", "/v1/chat/completions", keyWebUI, chatBody("capgraph", false, user(msg)), hdr...)
	}
	runs := env.runner.runs()
	if len(runs) != 4 {
		t.Fatalf("runs %d", len(runs))
	}
	// alice's two requests: two fresh threads, no forwarded user.
	if runs[0].Thread == runs[2].Thread || runs[0].Metadata["user"] != "" || runs[0].Metadata["owner"] != "alice" {
		t.Fatalf("untrusted headers were used: %+v %+v", runs[0], runs[2])
	}
	// webui's: one thread for the chat, the forwarded user recorded.
	if runs[1].Thread != runs[3].Thread || runs[1].Metadata["user"] != "u-7" || runs[1].Metadata["owner"] != "webui" {
		t.Fatalf("trusted headers were not used: %+v %+v", runs[1], runs[3])
	}
}

// approvalRound asks for a write and returns the approval message.
func approvalRound(t *testing.T, env *testEnv, key string) string {
	t.Helper()
	resp, body := env.do(t, "POST", "/v1/chat/completions", key, chatBody("capgraph", false, user("write 1.5 A to SR:HCM1")))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	var cc openai.Completion
	if err := json.Unmarshal(body, &cc); err != nil {
		t.Fatal(err)
	}
	msg := cc.Choices[0].Message.Content
	if _, ok := approvaltoken.Find(msg); !ok || !strings.Contains(msg, "SR:HCM1") {
		t.Fatalf("no approval request: %q", msg)
	}
	return msg
}

func chatContent(t *testing.T, body []byte) string {
	t.Helper()
	var cc openai.Completion
	if err := json.Unmarshal(body, &cc); err != nil || len(cc.Choices) == 0 {
		t.Fatalf("%v %s", err, body)
	}
	return cc.Choices[0].Message.Content
}

func TestApprovalOverChatCompletions(t *testing.T) {
	t.Run("yes resumes once, a replay repeats the answer", func(t *testing.T) {
		env := newTestEnv(t, nil)
		ask := approvalRound(t, env, keyAlice)
		hist := chatBody("capgraph", false, user("write 1.5 A to SR:HCM1"), assistant(ask), user("yes"))
		_, b1 := env.do(t, "POST", "/v1/chat/completions", keyAlice, hist)
		_, b2 := env.do(t, "POST", "/v1/chat/completions", keyAlice, hist, "X-Stainless-Retry-Count", "1")
		if env.runner.writes() != 1 || len(env.runner.resumes()) != 1 {
			t.Fatalf("writes %d resumes %d", env.runner.writes(), len(env.runner.resumes()))
		}
		if c1, c2 := chatContent(t, b1), chatContent(t, b2); c1 != "SR:HCM1 is now 1.5 A." || c2 != c1 {
			t.Fatalf("first %q replay %q", c1, c2)
		}
		recs := env.audit.records(t)
		var write *agent.AuditRecord
		for i := range recs {
			if recs[i].Capability == "channel_write" {
				write = &recs[i]
			}
		}
		if write == nil || write.Principal != "alice" || write.Event != agent.AuditStep || write.Outcome != "" || write.Digest == argsDigest(nil) {
			t.Fatalf("audit %+v", recs)
		}
	})
	t.Run("no cancels", func(t *testing.T) {
		env := newTestEnv(t, nil)
		ask := approvalRound(t, env, keyAlice)
		_, b := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user("write"), assistant(ask), user("no")))
		if env.runner.writes() != 0 || !strings.Contains(chatContent(t, b), "Cancelled") {
			t.Fatalf("writes %d: %s", env.runner.writes(), b)
		}
	})
	t.Run("another principal's token is refused", func(t *testing.T) {
		env := newTestEnv(t, nil)
		ask := approvalRound(t, env, keyAlice)
		resp, _ := env.do(t, "POST", "/v1/chat/completions", keyBob, chatBody("capgraph", false, user("write"), assistant(ask), user("yes")))
		if resp.StatusCode != http.StatusOK || env.runner.writes() != 0 || len(env.runner.resumes()) != 0 {
			t.Fatalf("bob resumed alice's approval: %d writes %d", resp.StatusCode, env.runner.writes())
		}
		// Alice's approval is still pending and works for her.
		env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user("write"), assistant(ask), user("yes")))
		if env.runner.writes() != 1 {
			t.Fatalf("writes %d", env.runner.writes())
		}
	})
	t.Run("a yes with an expired token answers nothing", func(t *testing.T) {
		var offset atomic.Int64 // the test's clock runs ahead by this much
		env := newTestEnv(t, func(c *Config) {
			c.ApprovalTTL = time.Minute
			c.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		})
		ask := approvalRound(t, env, keyAlice)
		offset.Store(int64(2 * time.Minute))
		_, b := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user("write 1.5 A to SR:HCM1"), assistant(ask), user("yes")))
		if env.runner.writes() != 0 || len(env.runner.runs()) != 1 || len(env.runner.resumes()) != 0 || !strings.Contains(chatContent(t, b), "expired") {
			t.Fatalf("writes %d runs %d resumes %d: %s", env.runner.writes(), len(env.runner.runs()), len(env.runner.resumes()), b)
		}
		// Anything else is a new question.
		env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user("write 1.5 A to SR:HCM1"), assistant(ask), user("what is the beam current?")))
		if env.runner.writes() != 0 || len(env.runner.runs()) != 2 {
			t.Fatalf("writes %d runs %d", env.runner.writes(), len(env.runner.runs()))
		}
	})
}

func TestConfigValidation(t *testing.T) {
	r := newScriptedRunner()
	tests := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"no runner", Config{}, "Runner"},
		{"public without keys", Config{Runner: r, Addr: "0.0.0.0:8080"}, "Addr"},
		{"all interfaces without keys", Config{Runner: r, Addr: ":8080"}, "Addr"},
		{"bad digest", Config{Runner: r, Auth: Auth{Principals: []Principal{{Name: "a", KeySHA256: "abc"}}}}, "Principals[0].KeySHA256"},
		{"no name", Config{Runner: r, Auth: Auth{Principals: []Principal{{KeySHA256: HashKey("k")}}}}, "Principals[0].Name"},
		{"same key twice", Config{Runner: r, Auth: Auth{Principals: []Principal{{Name: "a", KeySHA256: HashKey("k")}, {Name: "b", KeySHA256: HashKey("k")}}}}, "Principals[1].KeySHA256"},
		{"empty model id", Config{Runner: r, Models: []Model{{}}}, "Models[0].ID"},
		{"negative recovery interval", Config{Runner: r, Cluster: Cluster{RecoverEvery: -time.Second}}, "RecoverEvery"},
		{"all interfaces, no names", Config{Runner: r, Addr: "0.0.0.0:8080", Auth: Auth{Principals: []Principal{{Name: "a", KeySHA256: HashKey("k")}}}}, "AllowedHosts"},
		{"any host without keys", Config{Runner: r, Auth: Auth{AllowedHosts: []string{"*"}}}, "AllowedHosts"},
		{"a URL as host", Config{Runner: r, Auth: Auth{AllowedHosts: []string{"capgraph.example.org", "https://capgraph.example.org"}}}, "AllowedHosts[1]"},
		{"any origin without keys", Config{Runner: r, Auth: Auth{CORSOrigins: []string{"*"}}}, "CORSOrigins[0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("err = %v", err)
			}
		})
	}
	for _, ok := range []Config{
		{Runner: r},
		{Runner: r, Addr: "localhost:9000"},
		{Runner: r, Addr: "[::1]:9000"},
		{Runner: r, Addr: "0.0.0.0:8080", Auth: Auth{AllowedHosts: []string{"capgraph.example.org"}, Principals: []Principal{{Name: "a", KeySHA256: HashKey("k")}}}},
		{Runner: r, Addr: ":8080", Auth: Auth{AllowedHosts: []string{"*"}, Principals: []Principal{{Name: "a", KeySHA256: HashKey("k")}}}},
		{Runner: r, Addr: "0.0.0.0:8080", Auth: Auth{Principals: []Principal{{Name: "a", KeySHA256: HashKey("k")}}}, Artifacts: Artifacts{PublicURL: "https://capgraph.example.org"}},
		{Runner: r, Addr: "10.0.0.5:8080", Auth: Auth{Principals: []Principal{{Name: "a", KeySHA256: HashKey("k")}}}},
	} {
		if _, err := New(ok); err != nil {
			t.Errorf("%+v: %v", ok.Addr, err)
		}
	}
}

// New fills its defaults into copies: the caller's principals and origins
// are as given afterwards, so one Config can build several servers (the
// replicas of a test, a restart) and be compared with what was read.
func TestNewLeavesTheCallersConfigAlone(t *testing.T) {
	principals := []Principal{{Name: "a", KeySHA256: HashKey("k")}}
	cors := []string{"HTTPS://Chat.Example.org"}
	frames := []string{"HTTPS://Portal.Example.org"}
	hosts := []string{"capgraph.example.org"}
	cfg := Config{Runner: newScriptedRunner(), Auth: Auth{Principals: principals, CORSOrigins: cors, FrameAncestors: frames, AllowedHosts: hosts}}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.cfg.Principals[0].Tenant; got != "default" {
		t.Fatalf("the server's principal has tenant %q, want default", got)
	}
	if got := srv.cfg.CORSOrigins[0]; got != "https://chat.example.org" {
		t.Fatalf("the server's origin is %q, want it in lower case", got)
	}
	if principals[0].Tenant != "" || cors[0] != "HTTPS://Chat.Example.org" || frames[0] != "HTTPS://Portal.Example.org" || hosts[0] != "capgraph.example.org" {
		t.Errorf("New wrote into the caller's slices: %+v %q %q %q", principals, cors, frames, hosts)
	}
}

// CAPGRAPH_API_KEYS keys meet the rule of the YAML file's keys
// (apikey.Check): a 1-character key is refused, naming the entry but not
// repeating the key.
func TestParseAPIKeys(t *testing.T) {
	const k1, k2 = "sk-first-0123456789", "sk-second-0123456789"
	tests := []struct {
		in      string
		names   []string
		wantErr string
	}{
		{"", nil, ""},
		{k1, []string{"key1"}, ""},
		{"ops=" + k1 + ", webui = " + k2 + " ,", []string{"ops", "webui"}, ""},
		{"a=" + k1 + ",a=" + k2, nil, "duplicate name"},
		{"=" + k1, nil, "empty name or key"},
		{"a=", nil, "empty name or key"},
		{"k", nil, "entry 1 (key1): the key is 1 characters; use at least 16"},
		{"ops=" + k1 + ",ci=short", nil, "entry 2 (ci): the key is 5 characters"},
		{"ops=sk-0123456789\tabcdef", nil, "control or a non-ASCII character"},
	}
	for _, tc := range tests {
		ps, err := ParseAPIKeys(tc.in)
		if (err != nil) != (tc.wantErr != "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Fatalf("%q: err %v, want %q", tc.in, err, tc.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "short") {
			t.Fatalf("%q: the error repeats the key: %v", tc.in, err)
		}
		var names []string
		for _, p := range ps {
			names = append(names, p.Name)
		}
		if strings.Join(names, ",") != strings.Join(tc.names, ",") {
			t.Fatalf("%q: names %v", tc.in, names)
		}
	}
	ps, _ := ParseAPIKeys("ops=" + k1)
	if ps[0].KeySHA256 != HashKey(k1) || ps[0].Tenant != "default" {
		t.Fatalf("%+v", ps[0])
	}
}
