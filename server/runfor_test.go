package server

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/state"
)

// A turn run for an owner (a schedule's, under capgraph serve) is one of
// the server's runs, the owner's: its stream is an agent run's, the owner
// finds the thread in its list and answers the write's approval with its
// key — the write runs once — and no other key sees or answers it.
func TestRunForIsTheOwnersRun(t *testing.T) {
	env := newMCPEnv(t, state.Options{WritesEnabled: true})
	ctx := context.Background()
	req := agent.TurnRequest{Thread: "schedule-q1_morning", Input: "Set the Q1 current to 105 A", By: "schedule:q1_morning",
		Metadata: map[string]string{"schedule": "q1_morning"}}
	var (
		types []agent.EventType
		last  agent.Event
	)
	for ev, err := range env.srv.RunFor(ctx, Owner{Tenant: "lab", Principal: "alice"}, req) {
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		types, last = append(types, ev.Type), ev
	}
	if last.Type != agent.EventDone || last.Status != agent.RunInterrupted || types[0] != agent.EventRunStart {
		t.Fatalf("events %v, last %+v", types, last)
	}
	resp, body := env.do(t, "GET", "/api/threads", keyAlice, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"id":"schedule-q1_morning"`) || !strings.Contains(string(body), `"status":"interrupted"`) {
		t.Fatalf("alice's threads: %d %s", resp.StatusCode, body)
	}
	resp, body = env.do(t, "GET", "/api/threads/schedule-q1_morning/state", keyAlice, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "set Q1 to 105 A") {
		t.Fatalf("state: %d %s", resp.StatusCode, body)
	}
	st, _, err := env.agent.State(ctx, internalThreadID(caller{Principal: Principal{Name: "alice", Tenant: "lab"}}, "schedule-q1_morning"))
	if err != nil || st.Turn.PendingApproval == nil {
		t.Fatalf("pending approval: %v %+v", err, st.Turn.PendingApproval)
	}
	ap := st.Turn.PendingApproval.ID

	// Bob (the same tenant, another key) neither lists nor answers it.
	if _, body := env.do(t, "GET", "/api/threads", keyBob, nil); strings.Contains(string(body), "schedule-q1_morning") {
		t.Fatalf("bob lists it: %s", body)
	}
	if resp, body := env.do(t, "POST", "/api/threads/schedule-q1_morning/approval", keyBob, map[string]any{"approval_id": ap, "approved": true}); resp.StatusCode < 400 {
		t.Fatalf("bob answered: %d %s", resp.StatusCode, body)
	}
	if w := env.plant.written(); len(w) != 0 {
		t.Fatalf("written before alice answered: %v", w)
	}
	resp, body = env.do(t, "POST", "/api/threads/schedule-q1_morning/approval", keyAlice, map[string]any{"approval_id": ap, "approved": true, "stream": true})
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"status":"answered"`) {
		t.Fatalf("alice's answer: %d %s", resp.StatusCode, body)
	}
	if w := env.plant.written(); len(w) != 1 || w[0] != 105 {
		t.Fatalf("writes %v", w)
	}
	recs, err := env.agent.Audit(ctx, agent.AuditFilter{Event: agent.AuditApproved})
	if err != nil || len(recs) != 1 || recs[0].ApprovedBy != "alice" {
		t.Fatalf("audit %+v %v", recs, err)
	}

	// A consumer that stops reading stops only its stream: the run is
	// the server's and ends as it would.
	for range env.srv.RunFor(ctx, Owner{Tenant: "lab", Principal: "alice"}, agent.TurnRequest{Thread: "schedule-beam", Input: "What is the beam current?"}) {
		break
	}
	waitRuns(t, env.testEnv)
	if _, status, err := env.agent.State(ctx, internalThreadID(caller{Principal: Principal{Name: "alice", Tenant: "lab"}}, "schedule-beam")); err != nil || status != agent.RunAnswered {
		t.Fatalf("the run left by its consumer: %v %v", status, err)
	}

	// An owner no key names is refused before anything runs.
	for _, err := range env.srv.RunFor(ctx, Owner{Tenant: "lab", Principal: "mallory"}, agent.TurnRequest{Thread: "schedule-x", Input: "What is the beam current?"}) {
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "mallory") {
			t.Fatalf("an unknown owner: %v", err)
		}
	}
}

// A key's capabilities narrowed in the configuration while its write waits
// for approval hold when the approval is answered: the server started
// again with alice limited to reading, her yes does not carry the write out.
func TestNarrowedKeyHoldsWhenItsApprovalIsAnswered(t *testing.T) {
	p := &q1Plant{}
	store, err := sqlite.New(sqlite.Config{Path: filepath.Join(t.TempDir(), "narrow.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	a, err := agent.New(agent.Config{Registry: newRegistry(t, p.capability(t), readBeamCurrent(t)), Store: store, Options: state.Options{WritesEnabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	before := newTestEnv(t, func(c *Config) { c.Runner = a })
	before.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "q1"})
	if resp, body := before.do(t, "POST", "/api/threads/q1/runs", keyAlice, map[string]any{"input": "Set the Q1 current to 105 A", "stream": true}); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "approval_required") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	st, _, err := a.State(context.Background(), internalThreadID(caller{Principal: Principal{Name: "alice", Tenant: "lab"}}, "q1"))
	if err != nil || st.Turn.PendingApproval == nil {
		t.Fatalf("pending: %v", err)
	}
	before.http.Close()

	after := newTestEnv(t, func(c *Config) {
		c.Runner = a
		for i := range c.Principals {
			if c.Principals[i].Name == "alice" {
				c.Principals[i].AllowedCapabilities = []string{"read_beam_current"}
			}
		}
	})
	resp, body := after.do(t, "POST", "/api/threads/q1/approval", keyAlice, map[string]any{"approval_id": st.Turn.PendingApproval.ID, "approved": true, "stream": true})
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "not allowed") {
		t.Fatalf("the answer: %d %s", resp.StatusCode, body)
	}
	if w := p.written(); len(w) != 0 {
		t.Fatalf("written by a key no longer allowed to: %v", w)
	}
}
