package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/mcp"
	"github.com/capgraph/capgraph/runstore"
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
	return newMCPEnvCaps(t, opts, mod, readBeamCurrent(t))
}

// newMCPEnvCaps is newMCPEnvWith with caps beside the Q1 plant's.
func newMCPEnvCaps(t *testing.T, opts state.Options, mod func(*Config), caps ...capabilities.Capability) *mcpEnv {
	t.Helper()
	p := &q1Plant{}
	reg := newRegistry(t, append([]capabilities.Capability{p.capability(t)}, caps...)...)
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

// answersOverMCP lets the ask tool answer approvals.
func answersOverMCP(c *Config) { c.MCPAnswersApprovals = true }

// By default an MCP client does not answer an approval: the words of a
// tool call are its model's. The result names the approval and where a
// person answers it; a "yes" through the tool runs nothing and is not
// read; the person's answer through the API carries the write out once.
// The tools say so.
func TestMCPApprovalIsAPersonsByDefault(t *testing.T) {
	env := newMCPEnv(t, state.Options{WritesEnabled: true})
	alice, err := env.client(t, keyAlice)
	if err != nil {
		t.Fatal(err)
	}
	for tl, err := range alice.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tl.Name == mcp.ToolAsk && (strings.Contains(tl.Description, "yes to proceed") || !strings.Contains(tl.Description, "not answered through this tool")) {
			t.Errorf("ask's description invites an answer: %s", tl.Description)
		}
	}
	out, text, _ := ask(t, alice, map[string]any{"question": "Set the Q1 current to 105 A", "thread_id": "q1"})
	if out.Approval == nil || !strings.Contains(text, "APPROVAL NEEDED: set Q1 to 105 A") || !strings.Contains(text, "/api/threads/q1/approval") ||
		strings.Contains(text, `"yes"`) {
		t.Fatalf("%+v\n%s", out, text)
	}
	for _, yes := range []string{"yes", "Yes, go ahead", "approve"} {
		again, text, isErr := ask(t, alice, map[string]any{"question": yes, "thread_id": "q1", "request_id": "yes-" + yes})
		if isErr || again.Approval == nil || again.Approval.ID != out.Approval.ID || again.Status != string(agent.RunInterrupted) ||
			!strings.Contains(text, "waits for a person's approval") {
			t.Fatalf("%q through MCP: %v %+v\n%s", yes, isErr, again, text)
		}
	}
	if w := env.plant.written(); len(w) != 0 {
		t.Fatalf("written on an MCP client's yes: %v", w)
	}
	recs, err := env.agent.Audit(context.Background(), agent.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Event == agent.AuditApproved || r.Event == agent.AuditRejected {
			t.Fatalf("decided through MCP: %+v", r)
		}
	}
	resp, body := env.do(t, "POST", "/api/threads/q1/approval", keyAlice, map[string]any{"approval_id": out.Approval.ID, "approved": true, "stream": true})
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"status":"answered"`) {
		t.Fatalf("alice's answer through the API: %d %s", resp.StatusCode, body)
	}
	if w := env.plant.written(); len(w) != 1 || w[0] != 105 {
		t.Fatalf("writes %v", w)
	}
	// The thread goes on over MCP once nothing waits.
	if out, text, _ := ask(t, alice, map[string]any{"question": "What is the beam current?", "thread_id": "q1"}); out.Status != string(agent.RunAnswered) || !strings.Contains(text, "401.5 mA") {
		t.Fatalf("after the approval: %+v\n%s", out, text)
	}
}

// With approval.mcp_answers on, an approval surfaces as a tool result
// asking for the answer; the next ask on the thread answers it. Another
// tenant cannot answer it.
func TestMCPApproval(t *testing.T) {
	env := newMCPEnvWith(t, state.Options{WritesEnabled: true}, answersOverMCP)
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

// A call with a request_id is carried out once: repeated (a client's
// retry after a timeout), it gets the first call's answer — the same
// thread, the same approval, the same result — and nothing is asked or
// written again. The key is the caller's own, and is bound to its
// question.
func TestMCPRequestIDAnswersARepeatOnce(t *testing.T) {
	env := newMCPEnvWith(t, state.Options{WritesEnabled: true}, answersOverMCP)
	alice, err := env.client(t, keyAlice)
	if err != nil {
		t.Fatal(err)
	}
	change := map[string]any{"question": "Set the Q1 current to 105 A", "request_id": "4f1c0a6e-set-q1"}
	first, firstText, isErr := ask(t, alice, change)
	if isErr || first.Approval == nil || first.ThreadID == "" || first.Replayed {
		t.Fatalf("first call: %+v\n%s", first, firstText)
	}
	again, againText, isErr := ask(t, alice, change)
	if isErr || !again.Replayed || again.ThreadID != first.ThreadID || again.Approval == nil || again.Approval.ID != first.Approval.ID || againText != firstText {
		t.Fatalf("repeat of the first call: %+v\n%s\nfirst: %+v\n%s", again, againText, first, firstText)
	}
	if ids := mcpThreads(t, alice); !slices.Equal(ids, []string{first.ThreadID}) {
		t.Fatalf("a repeat opened another conversation: %v", ids)
	}

	yes := map[string]any{"question": "yes", "thread_id": first.ThreadID, "request_id": "4f1c0a6e-yes"}
	done, doneText, isErr := ask(t, alice, yes)
	if isErr || done.Status != string(agent.RunAnswered) || done.Replayed || !strings.Contains(doneText, "Q1 from 92 → 105 A") {
		t.Fatalf("yes: %+v\n%s", done, doneText)
	}
	for range 3 {
		again, againText, isErr := ask(t, alice, yes)
		if isErr || !again.Replayed || again.Status != done.Status || againText != doneText {
			t.Fatalf("repeat of the yes: %v %+v\n%s", isErr, again, againText)
		}
	}
	if w := env.plant.written(); len(w) != 1 || w[0] != 105 {
		t.Fatalf("writes %v: the write ran again", w)
	}
	recs, err := env.agent.Audit(context.Background(), agent.AuditFilter{Event: agent.AuditApproved})
	if err != nil || len(recs) != 1 {
		t.Fatalf("approvals audited %d (%v): one was answered", len(recs), err)
	}

	// The key names one request: another question, or the same one in
	// another thread, with it is refused, and changes nothing.
	for _, args := range []map[string]any{
		{"question": "Set the Q1 current to 110 A", "thread_id": first.ThreadID, "request_id": "4f1c0a6e-yes"},
		{"question": "yes", "thread_id": "elsewhere", "request_id": "4f1c0a6e-yes"},
		{"question": "Set the Q1 current to 105 A", "thread_id": first.ThreadID, "request_id": "4f1c0a6e-set-q1"},
	} {
		if _, text, isErr := ask(t, alice, args); !isErr || !strings.Contains(text, "request_id") || !strings.Contains(text, "new request_id") {
			t.Errorf("%v: %v %s", args, isErr, text)
		}
	}
	if ids := mcpThreads(t, alice); !slices.Equal(ids, []string{first.ThreadID}) {
		t.Fatalf("a refused call opened a conversation: %v", ids)
	}
	// Another tenant's key with the same request_id asks for itself.
	carol, err := env.client(t, keyCarol)
	if err != nil {
		t.Fatal(err)
	}
	theirs, text, isErr := ask(t, carol, change)
	if isErr || theirs.Replayed || theirs.Approval == nil || theirs.Approval.ID == first.Approval.ID {
		t.Fatalf("carol's call with alice's request_id: %+v\n%s", theirs, text)
	}

	// Keys no client should send.
	for _, id := range []string{strings.Repeat("k", 256), "a\nb", "a\x00b"} {
		if _, text, isErr := ask(t, alice, map[string]any{"question": "What is the beam current?", "request_id": id}); !isErr || !strings.Contains(text, "request_id") {
			t.Errorf("request_id %q: %v %s", id, isErr, text)
		}
	}
	if w := env.plant.written(); len(w) != 1 {
		t.Fatalf("writes %v", w)
	}
}

// A client that gives up on a call with a request_id (its timeout) does
// not stop the run: the repeat of the call gets its answer, and the
// capability ran once. Without a request_id, leaving stops the run.
func TestMCPRequestIDOutlivesTheCallersTimeout(t *testing.T) {
	var calls atomic.Int32
	gate := make(chan struct{}, 1) // each send lets a capability call go on
	slow := capabilities.Define(capabilities.Definition{
		Name: "read_beam_current", Description: "Read the beam current of the storage ring", Provides: []string{"BEAM_CURRENT"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use for questions about the beam current.",
			Examples: []capabilities.ClassifierExample{{Query: "what is the beam current?", Result: true, Reason: "asks for the beam current"}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			calls.Add(1)
			select {
			case <-gate:
			case <-ctx.Done():
				return capabilities.Output{}, ctx.Err()
			}
			return capabilities.Result("BEAM_CURRENT", 401.5, "beam current is 401.5 mA"), nil
		},
	})
	env := newMCPEnvCaps(t, state.Options{}, nil, slow)
	t.Cleanup(func() { close(gate) }) // before the server closes: no call is left waiting
	alice, err := env.client(t, keyAlice)
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"question": "What is the beam current?", "request_id": "beam-7"}
	giveUp := env.callAndGiveUp(t, args, func() bool { return calls.Load() == 1 })
	giveUp()
	waitFollowers(t, env.testEnv, 0) // the caller left; the run goes on
	// The repeat comes while the run still waits in its capability, and
	// joins it.
	got := make(chan struct{})
	var (
		out  mcp.AskOutput
		text string
	)
	go func() {
		defer close(got)
		out, text, _ = ask(t, alice, args)
	}()
	waitFollowers(t, env.testEnv, 1)
	gate <- struct{}{}
	<-got
	if out.Status != string(agent.RunAnswered) || !out.Replayed || !strings.Contains(text, "401.5 mA") {
		t.Fatalf("the repeat: %+v\n%s", out, text)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the capability ran %d times", n)
	}
	if ids := mcpThreads(t, alice); len(ids) != 1 {
		t.Fatalf("threads %v", ids)
	}

	// Without a request_id the call cannot be repeated: leaving stops
	// its run at once (the grace is 10 s).
	giveUp = env.callAndGiveUp(t, map[string]any{"question": "What is the beam current?"}, func() bool { return calls.Load() == 2 })
	giveUp()
	waitNoRuns(t, env.srv, 5*time.Second)
}

// callAndGiveUp calls ask with args as alice in the background until
// started reports the run under way, and returns the client giving up:
// its request canceled, its connection dropped, as a timeout drops it.
func (e *mcpEnv) callAndGiveUp(t *testing.T, args map[string]any, started func() bool) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan string, 1)
	go func() {
		body, _ := postMCP(ctx, e.testEnv, args)
		left <- body
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !started() {
		if time.Now().After(deadline) {
			t.Fatal("the run never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return func() {
		cancel()
		if got := <-left; strings.Contains(got, "401.5") {
			t.Fatalf("the call that gave up got an answer: %s", got)
		}
	}
}

// postMCP calls ask with args as alice under ctx, in one plain JSON-RPC
// request (a stateless server needs no session; the SDK's client cannot
// drop one call's stream), and returns the response's body.
func postMCP(ctx context.Context, env *testEnv, args map[string]any) (string, error) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": mcp.ToolAsk, "arguments": args}})
	req, _ := http.NewRequestWithContext(ctx, "POST", env.http.URL+"/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// A repeated call whose run a restart ended keeps no answer in its record:
// the repeat says the run failed, with the record's reason, or that the
// request was carried out and where its answer is — and runs nothing.
func TestMCPRequestIDOfARunTheRestartEnded(t *testing.T) {
	env := newMCPEnv(t, state.Options{})
	alice, err := env.client(t, keyAlice)
	if err != nil {
		t.Fatal(err)
	}
	c := caller{Principal: Principal{Name: "alice", Tenant: "lab"}}
	ctx := context.Background()
	for _, rec := range []runstore.Record{
		{ID: "run-ended-failed", Key: explicitKey(c, "mcp", "cut-1"), Status: runstore.Failed, Error: "the run failed before the server restarted"},
		{ID: "run-ended-done", Key: explicitKey(c, "mcp", "cut-2"), Status: runstore.Done},
	} {
		rec.Thread, rec.Labels = "t-internal", map[string]string{labelThread: "shift"}
		if _, created, err := env.srv.records.CreateRun(ctx, rec); err != nil || !created {
			t.Fatalf("%v %v", created, err)
		}
	}
	_, text, isErr := ask(t, alice, map[string]any{"question": "What is the beam current?", "request_id": "cut-1"})
	if !isErr || !strings.Contains(text, "failed before the server restarted") {
		t.Fatalf("cut-1: %v %s", isErr, text)
	}
	out, text, isErr := ask(t, alice, map[string]any{"question": "What is the beam current?", "request_id": "cut-2"})
	if isErr || !out.Replayed || out.ThreadID != "shift" || !strings.Contains(text, "carried out before (run run-ended-done") {
		t.Fatalf("cut-2: %v %+v %s", isErr, out, text)
	}
	if ids := mcpThreads(t, alice); len(ids) != 0 {
		t.Fatalf("a repeat ran: threads %v", ids)
	}
}
