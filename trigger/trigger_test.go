package trigger_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/internal/outcometest"
	"github.com/capgraph/capgraph/state"
	"github.com/capgraph/capgraph/trigger"
)

var secret = []byte("0123456789abcdef-trigger-secret")

// countingStarter counts the runs it is asked to start and starts them.
type countingStarter struct {
	inner trigger.Starter
	n     atomic.Int32
}

func (c *countingStarter) Start(ctx context.Context, owner trigger.Owner, req agent.TurnRequest) (string, error) {
	c.n.Add(1)
	return c.inner.Start(ctx, owner, req)
}

// rig is a real agent (memory store, offline nodes) over the outcome plant
// (set_magnet_current) and a beam reader, behind the trigger handler on a
// loopback server.
type rig struct {
	t       *testing.T
	url     string
	agent   *agent.Agent
	store   *memory.Store
	plant   *outcometest.Plant
	reads   *atomic.Int32
	starter *countingStarter
	now     time.Time
}

func newRig(t *testing.T, triggers ...trigger.Trigger) *rig {
	t.Helper()
	plant := outcometest.New()
	caps, err := plant.Capabilities()
	if err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int32
	read := capabilities.Define(capabilities.Definition{
		Name: "read_beam_current", Description: "Read the beam current of the storage ring", Provides: []string{"BEAM_CURRENT"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use for questions about the beam current.",
			Examples: []capabilities.ClassifierExample{{Query: "what is the beam current?", Result: true, Reason: "asks for the beam current"}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			reads.Add(1)
			return capabilities.Result("BEAM_CURRENT", 401.5, "beam current is 401.5 mA"), nil
		},
	})
	reg := capabilities.NewRegistry()
	for _, c := range append(caps, read) {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	store := memory.New()
	a, err := agent.New(agent.Config{Registry: reg, Store: store, Options: state.Options{WritesEnabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	r := &rig{t: t, agent: a, store: store, plant: plant, reads: &reads, now: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)}
	r.starter = &countingStarter{inner: trigger.RunnerStarter(a, nil)}
	h, err := trigger.New(trigger.Config{Triggers: triggers, Starter: r.starter, Now: func() time.Time { return r.now }})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /api/triggers/{name}", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

// call posts body to the trigger, signed with key at ts ("" key: unsigned).
func (r *rig) call(name, body string, key []byte, ts time.Time) (int, http.Header, string) {
	r.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.url+"/api/triggers/"+name, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != nil {
		req.Header.Set(trigger.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
		req.Header.Set(trigger.HeaderSignature, trigger.Sign(key, ts, []byte(body)))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// wait waits for the thread's run to end and returns its last message.
func (r *rig) wait(thread string) (agent.RunStatus, *state.Message) {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		s, st, err := r.agent.State(context.Background(), thread)
		if err == nil && (st == agent.RunAnswered || st == agent.RunInterrupted || st == agent.RunFailed) {
			var last *state.Message
			for i := range s.Messages {
				if s.Messages[i].Role == state.RoleAssistant {
					last = &s.Messages[i]
				}
			}
			return st, last
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.t.Fatalf("thread %s did not end", thread)
	return "", nil
}

func (r *rig) threads() int {
	r.t.Helper()
	ts, err := r.store.Threads(context.Background(), checkpoint.ThreadFilter{})
	if err != nil {
		r.t.Fatal(err)
	}
	return len(ts)
}

var alarm = trigger.Trigger{Name: "beam_alarm", Secret: secret, Input: "Alarm {{.alarm}} on {{.device}}: what is the beam current?",
	AllowedCapabilities: []string{"read_beam_current"}}

// A call without a signature, with a wrong one, signed with another
// secret, or replayed from long ago gets 401 and nothing runs: no run is
// started, no thread exists, no capability is called.
func TestBadSignatureIsRefusedAndNothingRuns(t *testing.T) {
	r := newRig(t, alarm)
	body := `{"alarm": "BEAM_LOSS", "device": "SR:DCCT"}`
	for _, tc := range []struct {
		name string
		key  []byte
		ts   time.Time
		want string
	}{
		{"unsigned", nil, r.now, "not signed"},
		{"another secret", []byte("fedcba9876543210-not-the-secret"), r.now, "does not match"},
		{"replayed", secret, r.now.Add(-time.Hour), "replay"},
	} {
		code, _, out := r.call("beam_alarm", body, tc.key, tc.ts)
		if code != http.StatusUnauthorized || !strings.Contains(out, tc.want) {
			t.Errorf("%s: %d %s, want 401 saying %q", tc.name, code, out, tc.want)
		}
	}
	// A signature of another body (the payload altered on the way).
	req, _ := http.NewRequest(http.MethodPost, r.url+"/api/triggers/beam_alarm", strings.NewReader(`{"alarm": "NONE", "device": "SR:DCCT"}`))
	req.Header.Set(trigger.HeaderTimestamp, strconv.FormatInt(r.now.Unix(), 10))
	req.Header.Set(trigger.HeaderSignature, trigger.Sign(secret, r.now, []byte(body)))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("altered payload: %v %v", resp, err)
	}
	if n := r.starter.n.Load(); n != 0 || r.threads() != 0 || r.reads.Load() != 0 {
		t.Fatalf("after refused calls: %d runs started, %d threads, %d reads; want none", n, r.threads(), r.reads.Load())
	}
}

// A signed call: 202 with the run id and thread at once; the run's input
// is the payload in the template, and it answers with the trigger's
// capability.
func TestSignedCallStartsARun(t *testing.T) {
	r := newRig(t, alarm)
	code, _, out := r.call("beam_alarm", `{"alarm": "BEAM_LOSS", "device": "SR:DCCT"}`, secret, r.now.Add(-time.Minute))
	var acc trigger.Accepted
	if code != http.StatusAccepted || json.Unmarshal([]byte(out), &acc) != nil || acc.RunID == "" || !strings.HasPrefix(acc.Thread, "trigger-beam_alarm-") {
		t.Fatalf("%d %s, want 202 with a run id and thread", code, out)
	}
	st, msg := r.wait(acc.Thread)
	if st != agent.RunAnswered || msg == nil || msg.Kind != state.KindAnswer || !strings.Contains(msg.Content, "401.5") {
		t.Fatalf("run: %s %+v", st, msg)
	}
	s, _, _ := r.agent.State(context.Background(), acc.Thread)
	if s.Messages[0].Content != "Alarm BEAM_LOSS on SR:DCCT: what is the beam current?" {
		t.Fatalf("input %q", s.Messages[0].Content)
	}
	if r.reads.Load() != 1 {
		t.Fatalf("%d reads", r.reads.Load())
	}
}

// A trigger's run cannot use a capability outside its list: asked for a
// change, it is refused and nothing is written. With the write capability
// listed and writes on, the approval policy applies: the run waits for a
// human, nothing written.
func TestTriggerRunCannotUseOtherCapabilities(t *testing.T) {
	change := trigger.Trigger{Name: "ramp", Secret: secret, Input: "Set the {{.magnet}} current to {{.amps}} A", AllowedCapabilities: []string{"read_beam_current"}}
	approve := trigger.Trigger{Name: "ramp_approved", Secret: secret, Input: "Set the {{.magnet}} current to {{.amps}} A",
		AllowedCapabilities: []string{outcometest.Capability}, Writes: true}
	r := newRig(t, change, approve)
	code, _, out := r.call("ramp", `{"magnet": "Q1", "amps": 105}`, secret, r.now)
	var acc trigger.Accepted
	if code != http.StatusAccepted || json.Unmarshal([]byte(out), &acc) != nil {
		t.Fatalf("%d %s", code, out)
	}
	st, msg := r.wait(acc.Thread)
	if st != agent.RunAnswered || msg == nil || msg.Kind == state.KindAnswer || !strings.Contains(msg.Content, "not allowed to use") {
		t.Fatalf("run: %s %+v, want a refusal", st, msg)
	}
	code, _, out = r.call("ramp_approved", `{"magnet": "Q1", "amps": 105}`, secret, r.now)
	if code != http.StatusAccepted || json.Unmarshal([]byte(out), &acc) != nil {
		t.Fatalf("%d %s", code, out)
	}
	if st, _ := r.wait(acc.Thread); st != agent.RunInterrupted {
		t.Fatalf("run with writes: %s, want waiting for approval", st)
	}
	if w := r.plant.Writes(); len(w) != 0 {
		t.Fatalf("written: %v", w)
	}
}

// Bad calls get a clear 4xx naming what is wrong, and start nothing; past
// the rate limit, 429 with Retry-After.
func TestBadCallsAndRateLimit(t *testing.T) {
	limited := alarm
	limited.RatePerMinute = 2
	r := newRig(t, limited)
	for _, tc := range []struct {
		name, trigger, body string
		code                int
		says                string
	}{
		{"unknown trigger", "no_such", `{}`, http.StatusNotFound, `no trigger "no_such"`},
		{"not an object", "beam_alarm", `[1, 2]`, http.StatusBadRequest, "JSON object"},
		{"not JSON", "beam_alarm", `alarm=1`, http.StatusBadRequest, "JSON object"},
		{"missing key", "beam_alarm", `{"alarm": "BEAM_LOSS"}`, http.StatusBadRequest, `it has no "device"`},
	} {
		code, _, out := r.call(tc.trigger, tc.body, secret, r.now)
		var p struct{ Error string }
		if json.Unmarshal([]byte(out), &p); code != tc.code || !strings.Contains(p.Error, tc.says) {
			t.Errorf("%s: %d %s, want %d saying %q", tc.name, code, out, tc.code, tc.says)
		}
	}
	if n := r.starter.n.Load(); n != 0 {
		t.Fatalf("%d runs started by bad calls", n)
	}
	body := `{"alarm": "BEAM_LOSS", "device": "SR:DCCT"}`
	for i := range 2 {
		if code, _, out := r.call("beam_alarm", body, secret, r.now); code != http.StatusAccepted {
			t.Fatalf("call %d: %d %s", i+1, code, out)
		}
	}
	code, hdr, out := r.call("beam_alarm", body, secret, r.now)
	if code != http.StatusTooManyRequests || hdr.Get("Retry-After") != "30" {
		t.Fatalf("third call in a minute: %d (Retry-After %q) %s, want 429 after 30 s", code, hdr.Get("Retry-After"), out)
	}
	r.now = r.now.Add(31 * time.Second)
	if code, _, out := r.call("beam_alarm", body, secret, r.now); code != http.StatusAccepted {
		t.Fatalf("after the wait: %d %s", code, out)
	}
}
