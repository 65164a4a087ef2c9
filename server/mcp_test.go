package server

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/mcp"
	"github.com/capgraph/capgraph/state"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// /mcp driven by the official MCP Go SDK's client, as a desktop assistant
// or an IDE would, against an offline agent that reads the beam current
// (read_beam_current) and writes the Q1 setpoint (set_q1, side effects).

const keyCarol = "sk-carol-0123456789" // another tenant

type mcpEnv struct {
	*testEnv
	agent *agent.Agent
	plant *q1Plant
}

func newMCPEnv(t *testing.T, opts state.Options) *mcpEnv {
	t.Helper()
	return newMCPEnvWith(t, opts, nil)
}

// newMCPEnvWith is newMCPEnv with mod applied to the server's config.
func newMCPEnvWith(t *testing.T, opts state.Options, mod func(*Config)) *mcpEnv {
	t.Helper()
	p := &q1Plant{}
	reg := newRegistry(t, p.capability(t), readBeamCurrent(t))
	store, err := sqlite.New(sqlite.Config{Path: filepath.Join(t.TempDir(), "capgraph.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	a, err := agent.New(agent.Config{Registry: reg, Store: store, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	env := newTestEnv(t, func(c *Config) {
		c.Runner = a
		c.Examples = []string{"What is the beam current?"}
		c.Principals = append(c.Principals, Principal{Name: "carol", KeySHA256: HashKey(keyCarol), Tenant: "other-lab"})
		if mod != nil {
			mod(c)
		}
	})
	return &mcpEnv{testEnv: env, agent: a, plant: p}
}

// bearer adds a key to every request of an MCP client.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.key != "" {
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (e *mcpEnv) client(t *testing.T, key string) (*sdk.ClientSession, error) {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "test-assistant", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: e.http.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{key}}}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func ask(t *testing.T, cs *sdk.ClientSession, args map[string]any) (mcp.AskOutput, string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: mcp.ToolAsk, Arguments: args})
	if err != nil {
		t.Fatalf("ask %v: %v", args, err)
	}
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	var out mcp.AskOutput
	if !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("structured content %s: %v", b, err)
		}
	}
	return out, strings.Join(text, "\n"), res.IsError
}

func mcpThreads(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: mcp.ToolListThreads, Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("list_threads: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out mcp.ThreadsOutput
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, th := range out.Threads {
		ids = append(ids, th.ID)
	}
	return ids
}

func TestMCPAskTheAgent(t *testing.T) {
	env := newMCPEnv(t, state.Options{})
	cs, err := env.client(t, keyAlice)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for tl, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
		if tl.Name == mcp.ToolAsk {
			b, _ := json.Marshal(tl.InputSchema)
			if !strings.Contains(string(b), `"required":["question"]`) || !strings.Contains(tl.Description, `"What is the beam current?"`) {
				t.Errorf("ask: %s\n%s", b, tl.Description)
			}
		}
	}
	if !slices.Equal(names, []string{mcp.ToolAsk, mcp.ToolListThreads}) {
		t.Fatalf("tools %v", names)
	}

	out, text, isErr := ask(t, cs, map[string]any{"question": "What is the beam current?"})
	if isErr || out.Status != string(agent.RunAnswered) || out.ThreadID == "" || !strings.Contains(text, "401.5 mA") {
		t.Fatalf("answer %+v\n%s", out, text)
	}
	// A follow-up in the same thread reuses what the first turn found.
	out2, text, _ := ask(t, cs, map[string]any{"question": "show its history over the last hour", "thread_id": out.ThreadID})
	if out2.ThreadID != out.ThreadID || !strings.Contains(text, "401.5 mA") {
		t.Fatalf("follow-up %+v\n%s", out2, text)
	}
	if ids := mcpThreads(t, cs); !slices.Equal(ids, []string{out.ThreadID}) {
		t.Fatalf("alice's threads %v", ids)
	}
	// The thread is the native API's too.
	resp, body := env.do(t, "GET", "/api/threads/"+out.ThreadID+"/state", keyAlice, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "show its history") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}

	// A client that asks for progress hears what the turn is doing.
	var mu sync.Mutex
	var heard []string
	pc := sdk.NewClient(&sdk.Implementation{Name: "test-assistant", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			heard = append(heard, r.Params.Message)
			mu.Unlock()
		}})
	pcs, err := pc.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: env.http.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{keyAlice}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pcs.Close()
	params := &sdk.CallToolParams{Name: mcp.ToolAsk, Arguments: map[string]any{"question": "What is the beam current?"}}
	params.SetProgressToken("beam-1")
	if res, err := pcs.CallTool(context.Background(), params); err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	mu.Lock()
	got := strings.Join(heard, " | ")
	mu.Unlock()
	if !strings.Contains(got, "read_beam_current") {
		t.Errorf("progress heard: %q", got)
	}

	// Bad questions are tool errors the client can correct, not failures.
	if _, text, isErr := ask(t, cs, map[string]any{"question": "   "}); !isErr || !strings.Contains(text, "the question is empty") {
		t.Fatalf("empty question: %v %s", isErr, text)
	}
	if _, text, isErr := ask(t, cs, map[string]any{"question": "hi", "thread_id": "a/b"}); !isErr || !strings.Contains(text, "thread_id") {
		t.Fatalf("bad thread id: %v %s", isErr, text)
	}
	if _, text, isErr := ask(t, cs, map[string]any{"thread_id": "x"}); !isErr || !strings.Contains(text, "question") {
		t.Fatalf("no question: %v %s", isErr, text)
	}
}

// Another tenant's key sees none of the first one's threads: not in its
// list, and the same thread id names a thread of its own.
func TestMCPTenantsAreSeparate(t *testing.T) {
	env := newMCPEnv(t, state.Options{})
	alice, err := env.client(t, keyAlice)
	if err != nil {
		t.Fatal(err)
	}
	carol, err := env.client(t, keyCarol)
	if err != nil {
		t.Fatal(err)
	}
	out, _, _ := ask(t, alice, map[string]any{"question": "What is the vacuum pressure in sector 3?", "thread_id": "shift-notes"})
	if out.ThreadID != "shift-notes" {
		t.Fatalf("%+v", out)
	}
	if ids := mcpThreads(t, carol); len(ids) != 0 {
		t.Fatalf("carol sees %v", ids)
	}
	aliceThread := internalThreadID(caller{Principal: Principal{Name: "alice", Tenant: "lab"}}, "shift-notes")
	before, _, err := env.agent.State(context.Background(), aliceThread)
	if err != nil {
		t.Fatal(err)
	}
	out, text, _ := ask(t, carol, map[string]any{"question": "read it again", "thread_id": "shift-notes"})
	if strings.Contains(text, "VAC") || out.ThreadID != "shift-notes" {
		t.Fatalf("carol got alice's context: %s", text)
	}
	after, _, _ := env.agent.State(context.Background(), aliceThread)
	if len(after.Messages) != len(before.Messages) {
		t.Fatalf("carol's question landed in alice's thread (%d → %d messages)", len(before.Messages), len(after.Messages))
	}
	if ids := mcpThreads(t, alice); !slices.Equal(ids, []string{"shift-notes"}) {
		t.Fatalf("alice's threads %v", ids)
	}

	// No key, a wrong key: no session at all.
	if _, err := env.client(t, ""); err == nil {
		t.Fatal("connected without a key")
	}
	if _, err := env.client(t, "sk-wrong-0123456789"); err == nil {
		t.Fatal("connected with a wrong key")
	}
	resp, _ := env.do(t, "POST", "/mcp", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Accept", "application/json, text/event-stream")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key: %d", resp.StatusCode)
	}
	// Stateless: no session stream to open, and no session to delete.
	for _, m := range []string{"GET", "DELETE"} {
		if resp, body := env.do(t, m, "/mcp", keyAlice, nil, "Accept", "text/event-stream"); resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("%s /mcp: %d %s", m, resp.StatusCode, body)
		}
	}
}

// An approval surfaces as a tool result asking for the answer; the next ask
// on the thread answers it. Another tenant cannot answer it.
func TestMCPApproval(t *testing.T) {
	env := newMCPEnv(t, state.Options{WritesEnabled: true})
	alice, err := env.client(t, keyAlice)
	if err != nil {
		t.Fatal(err)
	}
	carol, err := env.client(t, keyCarol)
	if err != nil {
		t.Fatal(err)
	}
	out, text, _ := ask(t, alice, map[string]any{"question": "Set the Q1 current to 105 A", "thread_id": "q1"})
	if out.Status != string(agent.RunInterrupted) || out.Approval == nil || !strings.Contains(text, "APPROVAL NEEDED") || !strings.Contains(text, "set Q1 to 105 A") ||
		!strings.Contains(text, `thread_id "q1"`) {
		t.Fatalf("%+v\n%s", out, text)
	}
	// Carol's "yes" on the same thread id is a turn in her own thread.
	ask(t, carol, map[string]any{"question": "yes", "thread_id": "q1"})
	if w := env.plant.written(); len(w) != 0 {
		t.Fatalf("written by another tenant's yes: %v", w)
	}
	out, text, _ = ask(t, alice, map[string]any{"question": "yes", "thread_id": "q1"})
	if out.Status != string(agent.RunAnswered) || out.Approval != nil || !strings.Contains(text, "Q1 from 92 → 105 A") {
		t.Fatalf("%+v\n%s", out, text)
	}
	if w := env.plant.written(); len(w) != 1 || w[0] != 105 {
		t.Fatalf("writes %v", w)
	}
	recs, err := env.agent.Audit(context.Background(), agent.AuditFilter{Event: agent.AuditApproved})
	if err != nil || len(recs) != 1 || recs[0].ApprovedBy != "alice" {
		t.Fatalf("audit %+v %v", recs, err)
	}

	// Anything but a yes or a no decides nothing: the question is asked
	// again; "no" cancels.
	out, _, _ = ask(t, alice, map[string]any{"question": "Set the Q1 current to 110 A", "thread_id": "q1"})
	if out.Approval == nil {
		t.Fatalf("%+v", out)
	}
	again, text, _ := ask(t, alice, map[string]any{"question": "hmm, what is that?", "thread_id": "q1"})
	if again.Approval == nil || again.Approval.ID != out.Approval.ID || again.Status != string(agent.RunInterrupted) ||
		!strings.Contains(text, "neither a yes nor a no") {
		t.Fatalf("an unclear answer: %+v\n%s", again, text)
	}
	if w := env.plant.written(); len(w) != 1 {
		t.Fatalf("written after an unclear answer: %v", w)
	}
	if out, text, _ = ask(t, alice, map[string]any{"question": "no", "thread_id": "q1"}); out.Approval != nil || !strings.Contains(text, "Nothing was done") {
		t.Fatalf("no: %+v\n%s", out, text)
	}
	if w := env.plant.written(); len(w) != 1 {
		t.Fatalf("written after no: %v", w)
	}
}
