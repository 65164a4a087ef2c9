package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/approvaltoken"
	"github.com/capgraph/capgraph/state"
)

// magnetPlant holds the setpoints two side-effecting capabilities write
// (set_q1, set_q2), and every write that reached it.
type magnetPlant struct {
	mu     sync.Mutex
	writes []string // "Q1=105"
}

func (p *magnetPlant) written() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.writes...)
}

// capability is set_<target>: it writes the value the user gave for its
// target ("… the Q2 current to 80 A").
func (p *magnetPlant) capability(t testing.TB, target string) capabilities.Capability {
	t.Helper()
	re := regexp.MustCompile(`(?i)\b` + target + `\b[^0-9]*?\bto\s+([0-9]+(?:\.[0-9]+)?)`)
	value := func(st capabilities.Step) (float64, error) {
		for _, s := range []string{st.TaskObjective, st.Task} {
			if m := re.FindStringSubmatch(s); m != nil {
				return strconv.ParseFloat(m[1], 64)
			}
		}
		return 0, fmt.Errorf("no value for %s", target)
	}
	name := "set_" + strings.ToLower(target)
	c := capabilities.Define(capabilities.Definition{
		Name: name, Description: "Set the " + target + " quadrupole current to a value", Provides: []string{target + "_WRITE"}, SideEffects: true,
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use to set the " + target + " current.",
			Examples: []capabilities.ClassifierExample{{Query: "Set the " + target + " current to 105 A", Result: true, Reason: "a setpoint change"}}},
		Action: func(st capabilities.Step) (capabilities.Action, error) {
			v, err := value(st)
			return capabilities.Action{Changes: []capabilities.Change{{Target: target, Value: v, Unit: "A"}}, Summary: fmt.Sprintf("set %s to %g A", target, v)}, err
		},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			v, err := value(st)
			if err != nil {
				return capabilities.Output{}, capabilities.NotApplied(err)
			}
			p.mu.Lock()
			p.writes = append(p.writes, fmt.Sprintf("%s=%g", target, v))
			p.mu.Unlock()
			return capabilities.Result(target+"_WRITE", map[string]any{"new": v}, fmt.Sprintf("%s set to %g A", target, v)), nil
		},
	})
	return c
}

// parallelEnv serves the real offline agent over SQLite with two
// side-effecting capabilities a request runs in parallel ("Set the Q1
// current to 105 A and the Q2 current to 80 A": two steps, two approvals).
type parallelEnv struct {
	*testEnv
	agent *agent.Agent
	plant *magnetPlant
}

const setBoth = "Set the Q1 current to 105 A and the Q2 current to 80 A"

func newParallelEnv(t *testing.T) *parallelEnv {
	t.Helper()
	return parallelEnvOn(t, filepath.Join(t.TempDir(), "capgraph.db"), &magnetPlant{}, nil)
}

// parallelEnvOn is newParallelEnv on the SQLite file path, writing to p;
// wrap, when set, wraps the store the agent uses.
func parallelEnvOn(t *testing.T, path string, p *magnetPlant, wrap func(*sqlite.Store) checkpoint.Store) *parallelEnv {
	t.Helper()
	store, err := sqlite.New(sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	var st checkpoint.Store = store
	if wrap != nil {
		st = wrap(store)
	}
	a, err := agent.New(agent.Config{Registry: newRegistry(t, p.capability(t, "Q1"), p.capability(t, "Q2")), Store: st,
		AuditLog: store, Options: state.Options{WritesEnabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	return &parallelEnv{testEnv: newTestEnv(t, func(c *Config) { c.Runner = a }), agent: a, plant: p}
}

// pending returns the approvals the thread waits for, by capability.
func (e *parallelEnv) pending(t *testing.T, clientThread string) map[string]state.Approval {
	t.Helper()
	aps, err := e.agent.PendingApprovals(context.Background(), internalThreadID(alice, clientThread))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]state.Approval{}
	for _, ap := range aps {
		out[ap.Capability] = ap
	}
	return out
}

// asked counts the audit log's asked records of the thread by approval id.
func (e *parallelEnv) asked(t *testing.T, clientThread string) map[string]int {
	t.Helper()
	recs, err := e.agent.Audit(context.Background(), agent.AuditFilter{Thread: internalThreadID(alice, clientThread), Event: agent.AuditAsked})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range recs {
		out[r.ApprovalID]++
	}
	return out
}

// done checks the end of a thread whose two writes were approved: each
// written once, the turn answered, and neither approval answerable again.
func (e *parallelEnv) done(t *testing.T, clientThread string, ids ...string) {
	t.Helper()
	w := e.plant.written()
	slices.Sort(w)
	if !slices.Equal(w, []string{"Q1=105", "Q2=80"}) {
		t.Fatalf("written %v, want Q1=105 and Q2=80 once each", w)
	}
	if _, status, err := e.agent.State(context.Background(), internalThreadID(alice, clientThread)); err != nil || status != agent.RunAnswered {
		t.Fatalf("status %s %v, want answered", status, err)
	}
	for _, id := range ids {
		resp, body := e.do(t, "POST", "/api/threads/"+clientThread+"/approval", keyAlice, map[string]any{"approval_id": id, "approved": true})
		if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), "already answered") {
			t.Fatalf("answering %s again: %d %s", id, resp.StatusCode, body)
		}
	}
	t.Logf("asked per approval: %v", e.asked(t, clientThread))
}

// Two side-effecting steps that run in parallel each get their own
// approval, answered independently in either order (native API by
// approval_id, AG-UI by interruptId, Chat Completions by each card's
// token), or both at once; each write is carried out once.
func TestParallelApprovals(t *testing.T) {
	for _, first := range []string{"set_q1", "set_q2"} {
		t.Run("native, "+first+" first", func(t *testing.T) {
			e := newParallelEnv(t)
			e.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "w"})
			resp, body := e.do(t, "POST", "/api/threads/w/runs", keyAlice, map[string]any{"input": setBoth, "stream": true})
			if resp.StatusCode != http.StatusOK || strings.Count(string(body), "event: approval_required") != 2 {
				t.Fatalf("turn: %d, %d approvals asked: %s", resp.StatusCode, strings.Count(string(body), "event: approval_required"), body)
			}
			asked := e.pending(t, "w")
			if len(asked) != 2 {
				t.Fatalf("pending %v", asked)
			}
			second := map[string]string{"set_q1": "set_q2", "set_q2": "set_q1"}[first]
			for i, cap := range []string{first, second} {
				id := asked[cap].ID
				resp, body := e.do(t, "POST", "/api/threads/w/approval", keyAlice, map[string]any{"approval_id": id, "approved": true, "stream": true})
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("answer %d (%s): %d %s", i+1, cap, resp.StatusCode, body)
				}
				if i == 0 {
					// The other approval is still pending, under its id.
					if p := e.pending(t, "w"); p[second].ID != asked[second].ID || len(p) != 1 {
						t.Fatalf("after the first answer: pending %+v", p)
					}
				}
			}
			e.done(t, "w", asked["set_q1"].ID, asked["set_q2"].ID)
		})
	}
	for _, shownFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("agui, the interrupt's card first %v", shownFirst), func(t *testing.T) {
			testAGUIParallel(t, shownFirst)
		})
	}
	t.Run("chat completions, each card its token", func(t *testing.T) {
		// A Chat Completions answer shows one card at a time: its token
		// answers it, and the answer's reply carries the other card's.
		e := newParallelEnv(t)
		msgs := []map[string]any{user(setBoth)}
		var tokens []string
		for range 3 {
			resp, body := e.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, msgs...))
			var out struct {
				Choices []struct {
					Message struct {
						Content string `json:"content"`
					} `json:"message"`
				} `json:"choices"`
			}
			if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil || len(out.Choices) != 1 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			reply := out.Choices[0].Message.Content
			tok, ok := approvaltoken.Find(reply)
			if !ok {
				break
			}
			tokens = append(tokens, tok)
			msgs = append(msgs, assistant(reply), user("yes "+tok))
		}
		if len(tokens) != 2 || tokens[0] == tokens[1] {
			t.Fatalf("tokens %v, want one per card", tokens)
		}
		th, ok, err := e.srv.threadOfToken(context.Background(), alice, tokens[0])
		if err != nil || !ok {
			t.Fatalf("thread of %s: %v %v", tokens[0], ok, err)
		}
		e.done(t, th)
	})
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("native, both at once, stream %v", stream), func(t *testing.T) {
			// The second answer arrives while the first is carried out: it
			// is queued (recorded, acknowledged), not refused, and carried
			// out when the first answer's run ends.
			e := newParallelEnv(t)
			e.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "w"})
			e.do(t, "POST", "/api/threads/w/runs", keyAlice, map[string]any{"input": setBoth, "stream": true})
			asked := e.pending(t, "w")
			var wg sync.WaitGroup
			codes, bodies := make([]int, 2), make([]string, 2)
			for i, cap := range []string{"set_q1", "set_q2"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, body := e.do(t, "POST", "/api/threads/w/approval", keyAlice, map[string]any{"approval_id": asked[cap].ID, "approved": true, "stream": stream})
					codes[i], bodies[i] = resp.StatusCode, string(body)
				}()
			}
			wg.Wait()
			want := map[bool]int{false: http.StatusAccepted, true: http.StatusOK}[stream]
			if codes[0] != want || codes[1] != want {
				t.Fatalf("codes %v, want %d each: %s\n%s", codes, want, bodies[0], bodies[1])
			}
			e.waitIdle(t, "w")
			e.done(t, "w", asked["set_q1"].ID, asked["set_q2"].ID)
		})
	}
}

// waitIdle waits until the thread's runs have all ended.
func (e *parallelEnv) waitIdle(t *testing.T, clientThread string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		recs, err := e.srv.records.ListRuns(context.Background(), runstore.Filter{Thread: internalThreadID(alice, clientThread),
			Status: []runstore.Status{runstore.Queued, runstore.Running}})
		if err != nil {
			t.Fatal(err)
		}
		if _, busy := e.srv.runs.ActiveOn(internalThreadID(alice, clientThread)); len(recs) == 0 && !busy {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the thread's runs did not end")
}

// cutStore stops the run (cancel) as soon as an answer is stored with its
// checkpoint: what a crash right after the agent took the answer leaves.
type cutStore struct {
	*sqlite.Store
	cancel context.CancelFunc
}

func (s *cutStore) PutTuple(ctx context.Context, t checkpoint.Tuple) error {
	err := s.Store.PutTuple(ctx, t)
	s.cancel()
	return err
}

// Answers to two parallel approvals, the first being carried out and the
// second queued behind it, when the server dies: after the restart both
// are carried out, each write once, whether the first answer had been
// taken or not; a queued answer whose run was canceled on request fails
// with a reason instead of starting the turn again.
func TestQueuedAnswerAfterACrash(t *testing.T) {
	for _, tc := range []string{"first answer not taken", "first answer taken and cut", "first run canceled on request"} {
		t.Run(tc, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "crash.db")
			p := &magnetPlant{}
			ctx, cut := context.WithCancel(context.Background())
			defer cut()
			first := parallelEnvOn(t, path, p, func(s *sqlite.Store) checkpoint.Store { return &cutStore{Store: s, cancel: cut} })
			first.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "w"})
			first.do(t, "POST", "/api/threads/w/runs", keyAlice, map[string]any{"input": setBoth, "stream": true})
			asked := first.pending(t, "w")
			q1, q2 := asked["set_q1"].ID, asked["set_q2"].ID
			thread := internalThreadID(alice, "w")
			if tc != "first answer not taken" {
				// The first answer reaches the agent, which stores it; the
				// run is cut right after.
				for range first.agent.Resume(ctx, thread, agent.Answer{ApprovalID: q1, Approved: new(true), By: "alice"}) {
				}
				if _, status, _ := first.agent.State(context.Background(), thread); status != agent.RunCanceled || len(p.written()) != 0 {
					t.Fatalf("after the cut: %s, written %v", status, p.written())
				}
			}
			yes := true
			rec := crashedRecord(t, first.testEnv, "run-q1", alice, "native", "w", runInput{Kind: kindAnswer,
				Answer: &storedAnswer{ApprovalID: q1, Approved: &yes, By: "alice", Beside: []string{q2}}}, "")
			if tc == "first run canceled on request" {
				if _, err := first.srv.records.UpdateRun(context.Background(), rec.ID, runstore.Update{Status: runstore.Canceled}); err != nil {
					t.Fatal(err)
				}
			}
			in, _ := json.Marshal(runInput{Kind: kindAnswer, Answer: &storedAnswer{ApprovalID: q2, Approved: &yes, By: "alice"}})
			queued, _, err := first.srv.records.CreateRun(context.Background(), runstore.Record{ID: "run-q2", Thread: thread,
				Status: runstore.Queued, Input: in, Labels: runSpec{c: alice, source: "native", clientThread: "w"}.labels()})
			if err != nil {
				t.Fatal(err)
			}
			first.http.Close()

			second := parallelEnvOn(t, path, p, nil)
			if _, err := second.srv.RecoverAllRuns(context.Background()); err != nil {
				t.Fatal(err)
			}
			second.waitIdle(t, "w")
			q2rec, err := second.srv.records.GetRun(context.Background(), queued.ID)
			if err != nil {
				t.Fatal(err)
			}
			if tc == "first run canceled on request" {
				// (One process alone resumes the canceled run at its start,
				// as before, which writes Q1 and asks for Q2 again.)
				if q2rec.Status != runstore.Failed || !strings.Contains(q2rec.Error, "was canceled") || slices.Contains(p.written(), "Q2=80") {
					t.Fatalf("the answer queued behind a canceled run: %s %q, written %v", q2rec.Status, q2rec.Error, p.written())
				}
				return
			}
			if q2rec.Status != runstore.Done && q2rec.Status != runstore.Interrupted {
				t.Fatalf("the queued answer's record: %+v", q2rec)
			}
			second.done(t, "w", q1, q2)
		})
	}
}

// Two replicas answer the two parallel approvals at once, one each: the
// answer that finds the other being carried out waits for it (its run
// waits for the thread's lease, or it is queued and claimed from the
// runs queue), and each write is carried out once.
func TestParallelApprovalsOnTwoReplicas(t *testing.T) {
	p := &magnetPlant{}
	mk := func(st checkpoint.Store) *agent.Agent {
		a, err := agent.New(agent.Config{Registry: newRegistry(t, p.capability(t, "Q1"), p.capability(t, "Q2")), Store: st,
			Options: state.Options{WritesEnabled: true}, Leases: agent.LeaseConfig{TTL: 3 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	reps := serveReplicas(t, pgStores(t, 2), mk, nil)
	a, b := reps[0].env, reps[1].env
	a.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "w"})
	if resp, body := a.do(t, "POST", "/api/threads/w/runs", keyAlice, map[string]any{"input": setBoth, "stream": true}); resp.StatusCode != http.StatusOK {
		t.Fatalf("turn: %d %s", resp.StatusCode, body)
	}
	e := &parallelEnv{testEnv: a, agent: reps[0].agent, plant: p}
	asked := e.pending(t, "w")
	var wg sync.WaitGroup
	for i, env := range []*testEnv{a, b} {
		cap := []string{"set_q1", "set_q2"}[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, body := env.do(t, "POST", "/api/threads/w/approval", keyAlice, map[string]any{"approval_id": asked[cap].ID, "approved": true})
			if resp.StatusCode != http.StatusAccepted {
				t.Errorf("answer to %s: %d %s", cap, resp.StatusCode, body)
			}
		}()
	}
	wg.Wait()
	for _, env := range []*testEnv{a, b} {
		(&parallelEnv{testEnv: env}).waitIdle(t, "w")
	}
	e.done(t, "w", asked["set_q1"].ID, asked["set_q2"].ID)
}

// testAGUIParallel: both cards come as CUSTOM approval_required events;
// the run's RUN_FINISHED names one interrupt. Each card is answered by its
// interruptId, the interrupt's card first or the other one.
func testAGUIParallel(t *testing.T, shownFirst bool) {
	e := newParallelEnv(t)
	in := func(run string) map[string]any {
		return map[string]any{"threadId": "g", "runId": run, "state": map[string]any{}, "tools": []any{}, "context": []any{}, "messages": []any{}}
	}
	turn := in("r1")
	turn["messages"] = []map[string]any{{"id": "u1", "role": "user", "content": setBoth}}
	_, body := e.do(t, "POST", "/agui", keyAlice, turn)
	evs := verifyAGUI(t, string(body))
	var cards []string
	for _, ev := range evs {
		if ev["type"] == "CUSTOM" && ev["name"] == "approval_required" {
			cards = append(cards, ev["value"].(map[string]any)["id"].(string))
		}
	}
	out, _ := evs[len(evs)-1]["outcome"].(map[string]any)
	if len(cards) != 2 || out["type"] != "interrupt" {
		t.Fatalf("cards %v, outcome %v", cards, out)
	}
	shown := out["interrupts"].([]any)[0].(map[string]any)["id"].(string)
	other := cards[0]
	if other == shown {
		other = cards[1]
	}
	order := []string{other, shown}
	if shownFirst {
		order = []string{shown, other}
	}
	for i, id := range order {
		r := in(fmt.Sprintf("r%d", i+2))
		r["resume"] = []map[string]any{{"interruptId": id, "status": "resolved", "payload": map[string]any{"approved": true}}}
		_, body := e.do(t, "POST", "/agui", keyAlice, r)
		evs := verifyAGUI(t, string(body))
		if last := evs[len(evs)-1]; last["type"] != "RUN_FINISHED" {
			t.Fatalf("resume %d (%s): %s", i+1, id, body)
		}
	}
	e.done(t, "g", cards...)
}
