package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/state"
)

// askQ1 starts "Set the Q1 current to <to> A" on env's thread and returns
// the approval the run stopped at.
func askQ1(t *testing.T, env *testEnv, thread, to string) state.Approval {
	t.Helper()
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": thread})
	resp, body := env.do(t, "POST", "/api/threads/"+thread+"/runs", keyAlice, map[string]any{"input": "Set the Q1 current to " + to + " A", "stream": true})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	for _, f := range readSSE(t, strings.NewReader(string(body))) {
		var ev agent.Event
		if json.Unmarshal([]byte(f.Data), &ev) == nil && ev.Type == agent.EventApprovalRequired && ev.Approval != nil {
			return *ev.Approval
		}
	}
	t.Fatalf("no approval asked: %s", body)
	return state.Approval{}
}

// runOf returns the run id of a native run's event stream.
func runOf(t *testing.T, body []byte) string {
	t.Helper()
	for _, f := range readSSE(t, strings.NewReader(string(body))) {
		var ev agent.Event
		if json.Unmarshal([]byte(f.Data), &ev) == nil && ev.RunID != "" {
			return ev.RunID
		}
	}
	t.Fatalf("no run id in %s", body)
	return ""
}

// Issue 18: "approvals are answered on any replica". An approval asked on
// replica a is answered on replica b: b runs the resumed turn, the write
// passes b's execution gate (its write switch, the user's intent, the
// approved action's digest) and is carried out once, with its approval
// and its execution in the shared audit log. Answering it again on a —
// approving or rejecting — is refused as already answered, and writes
// nothing. A replica whose configuration disables writes refuses an
// approval it is given, though the replica that asked allowed writes.
// events lists the records' events.
func events(recs []agent.AuditEntry) string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Event
	}
	return strings.Join(out, " ")
}

func TestApprovalAnsweredOnAnotherReplica(t *testing.T) {
	p := &q1Plant{}
	writes := []bool{true, true, false} // replica c's configuration disables writes
	n := 0
	mk := func(st checkpoint.Store) *agent.Agent {
		a, err := agent.New(agent.Config{Registry: newRegistry(t, p.capability(t), readBeamCurrent(t)), Store: st,
			Options: state.Options{WritesEnabled: writes[n]}})
		n++
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	reps := serveReplicas(t, pgStores(t, 3), mk, nil)
	a, b, c := reps[0].env, reps[1].env, reps[2].env
	ctx := context.Background()

	ap := askQ1(t, a, "q1", "105")
	if ap.ActionDigest == "" || len(p.written()) != 0 {
		t.Fatalf("approval %+v, written %v: want a digest and nothing written yet", ap, p.written())
	}
	resp, body := b.do(t, "POST", "/api/threads/q1/approval", keyAlice, map[string]any{"approval_id": ap.ID, "approved": true, "stream": true})
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "92 → 105 A") || !strings.Contains(string(body), `"status":"answered"`) {
		t.Fatalf("answer on b: %d %s", resp.StatusCode, body)
	}
	if w := p.written(); !slices.Equal(w, []float64{105}) {
		t.Fatalf("written %v, want [105] once", w)
	}
	runID := runOf(t, body)
	rec, err := reps[1].store.(runstore.Store).GetRun(ctx, runID)
	if err != nil || rec.Owner != "replica-b" || rec.Status != runstore.Done {
		t.Fatalf("run %s: %+v (%v); want done by replica-b", runID, rec, err)
	}
	// The audit log every replica shares: planned and asked by the run on
	// a, then approved (before the write), started and ended, by the run
	// on b.
	recs, err := reps[0].agent.Audit(ctx, agent.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if events(recs) != "planned asked approved started ended" {
		t.Fatalf("audit records %s, want planned asked approved started ended: %+v", events(recs), recs)
	}
	apr, ex := recs[2], recs[4]
	if apr.Event != agent.AuditApproved || apr.ApprovalID != ap.ID || apr.ApprovedBy != "alice" || apr.Digest != ap.ActionDigest || apr.Run != runID {
		t.Errorf("approval record %+v; want approved %s by alice, digest %s, run %s", apr.AuditRecord, ap.ID, ap.ActionDigest, runID)
	}
	if ex.Outcome != capabilities.OutcomeConfirmed || ex.Digest != ap.ActionDigest || ex.Run != runID || ex.ResultSummary != "Q1 from 92 → 105 A" {
		t.Errorf("execution record %+v; want executed, digest %s, run %s", ex.AuditRecord, ap.ActionDigest, runID)
	}

	// The same approval answered again on a: refused, nothing runs.
	for _, approved := range []bool{true, false} {
		resp, body = a.do(t, "POST", "/api/threads/q1/approval", keyAlice, map[string]any{"approval_id": ap.ID, "approved": approved, "stream": true})
		if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), "already answered") {
			t.Errorf("second answer (approved %v) on a: %d %s; want 409 already answered", approved, resp.StatusCode, body)
		}
	}
	if w := p.written(); !slices.Equal(w, []float64{105}) {
		t.Fatalf("written %v after the repeated answers, want [105] once", w)
	}
	if recs, _ := reps[0].agent.Audit(ctx, agent.AuditFilter{}); len(recs) != 5 {
		t.Fatalf("%d audit records after the repeated answers, want 5", len(recs))
	}

	// The same answer delivered to a and b at once (a frontend's retry
	// racing its first attempt): one write; the other answer waits for
	// the thread or is told it was answered.
	ap3 := askQ1(t, a, "q3", "107")
	var wg sync.WaitGroup
	codes, bodies := make([]int, 2), make([]string, 2)
	for i, env := range []*testEnv{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, body := env.do(t, "POST", "/api/threads/q3/approval", keyAlice, map[string]any{"approval_id": ap3.ID, "approved": true, "stream": true})
			codes[i], bodies[i] = resp.StatusCode, string(body)
		}()
	}
	wg.Wait()
	if w := p.written(); !slices.Equal(w, []float64{105, 107}) {
		t.Fatalf("written %v after racing answers, want [105 107]; replies %d %s / %d %s", w, codes[0], bodies[0], codes[1], bodies[1])
	}
	for i := range codes {
		if codes[i] != http.StatusOK && codes[i] != http.StatusConflict {
			t.Errorf("racing answer %d: %d %s", i, codes[i], bodies[i])
		}
	}

	// Replica c's write switch is off: the approval given there (asked on
	// a, where writes are on) is refused where the write would execute.
	ap2 := askQ1(t, a, "q2", "110")
	resp, body = c.do(t, "POST", "/api/threads/q2/approval", keyAlice, map[string]any{"approval_id": ap2.ID, "approved": true, "stream": true})
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Writes are disabled") {
		t.Fatalf("answer on c: %d %s", resp.StatusCode, body)
	}
	if w := p.written(); !slices.Equal(w, []float64{105, 107}) {
		t.Fatalf("written %v: replica c wrote with its switch off", w)
	}
	recs, _ = reps[0].agent.Audit(ctx, agent.AuditFilter{Event: agent.AuditRefused})
	if len(recs) != 1 || recs[0].Reason != agent.RefusedWritesDisabled || recs[0].ApprovalID != ap2.ID {
		t.Fatalf("refusal records %+v; want one writes_disabled for %s", recs, ap2.ID)
	}
}
