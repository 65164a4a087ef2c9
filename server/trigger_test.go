package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/trigger"
)

var triggerSecret = []byte("0123456789abcdef-trigger")

// triggerConfig mounts one trigger, "beam_alarm", whose runs are
// owner's, on cfg.
func triggerConfig(t *testing.T, cfg *Config, owner trigger.Owner) {
	t.Helper()
	cfg.Triggers = func(start StartFunc) http.Handler {
		h, err := trigger.New(trigger.Config{
			Triggers: []trigger.Trigger{{Name: "beam_alarm", Secret: triggerSecret, Input: "{{.what}} please", Owner: owner,
				AllowedCapabilities: []string{"channel_read"}}},
			Starter: trigger.StarterFunc(func(ctx context.Context, o trigger.Owner, req agent.TurnRequest) (string, error) {
				return start(ctx, Owner{Tenant: o.Tenant, Principal: o.Principal}, req)
			}),
		})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
}

// postTrigger posts a signed call to beam_alarm on url and returns the
// answer's status and body.
func postTrigger(t *testing.T, url, what string) (int, []byte) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"what": what})
	req, _ := http.NewRequest("POST", url+"/api/triggers/beam_alarm", bytes.NewReader(body))
	now := time.Now()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(trigger.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(trigger.HeaderSignature, trigger.Sign(triggerSecret, now, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// callTrigger posts a signed call to beam_alarm on url and returns its
// 202's body.
func callTrigger(t *testing.T, url, what string) trigger.Accepted {
	t.Helper()
	status, out := postTrigger(t, url, what)
	if status != http.StatusAccepted {
		t.Fatalf("trigger call: %d %s", status, out)
	}
	var acc trigger.Accepted
	if err := json.Unmarshal(out, &acc); err != nil || acc.RunID == "" || acc.Thread == "" {
		t.Fatalf("trigger call answered %s (%v)", out, err)
	}
	return acc
}

// TestTriggerRunIsTheServers: a signed trigger call's run is one of the
// server's runs, its owner's: the owner's key finds its thread in the
// list and the run in the thread's runs, and streams the run over the
// native API to its end; another key sees none of it. The run is held
// to the trigger's capabilities.
func TestTriggerRunIsTheServers(t *testing.T) {
	env := newTestEnv(t, func(c *Config) {
		triggerConfig(t, c, trigger.Owner{Tenant: "lab", Principal: "alice"})
	})
	acc := callTrigger(t, env.http.URL, "slow")
	_, body := env.do(t, "GET", "/api/threads", keyAlice, nil)
	if !strings.Contains(string(body), `"id":"`+acc.Thread+`"`) {
		t.Fatalf("alice's threads do not list the trigger's thread %s: %s", acc.Thread, body)
	}
	resp, body := env.do(t, "GET", "/api/threads/"+acc.Thread+"/runs", keyAlice, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"id":"`+acc.RunID+`"`) {
		t.Fatalf("the thread's runs: %d %s", resp.StatusCode, body)
	}
	if resp, body := env.do(t, "GET", "/api/threads/"+acc.Thread+"/runs", keyBob, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("bob reads the trigger's thread: %d %s", resp.StatusCode, body)
	}
	// Streamed like any run: the events as they come, then its end.
	req, _ := http.NewRequest("GET", env.http.URL+"/api/threads/"+acc.Thread+"/runs/"+acc.RunID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	sresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer sresp.Body.Close()
	if sresp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(sresp.Body)
		t.Fatalf("events: %d %s", sresp.StatusCode, b)
	}
	env.runner.Release()
	frames := readSSE(t, sresp.Body)
	var events []string
	for _, f := range frames {
		events = append(events, f.Event)
	}
	last := frames[len(frames)-1]
	if !slices.Contains(events, "run_start") || last.Event != "end" || !strings.Contains(last.Data, `"status":"answered"`) ||
		!strings.Contains(last.Data, acc.RunID) {
		t.Fatalf("the trigger's run streamed %v, last %+v", events, last)
	}
	env.runner.mu.Lock()
	runs := slices.Clone(env.runner.Runs)
	env.runner.mu.Unlock()
	if len(runs) != 1 || !slices.Equal(runs[0].AllowedCapabilities, []string{"channel_read"}) || runs[0].By != "trigger:beam_alarm" ||
		runs[0].Input != "slow please" {
		t.Fatalf("the agent was asked %+v", runs)
	}
}

// TestTriggerOwnerMustBeAKey: a trigger naming a principal the server
// has no key for starts nothing (503 naming it).
func TestTriggerOwnerMustBeAKey(t *testing.T) {
	env := newTestEnv(t, func(c *Config) {
		triggerConfig(t, c, trigger.Owner{Tenant: "lab", Principal: "carol"})
	})
	status, out := postTrigger(t, env.http.URL, "slow")
	if status != http.StatusServiceUnavailable || !strings.Contains(string(out), "carol") {
		t.Fatalf("%d %s", status, out)
	}
	if n := len(env.runner.Runs); n != 0 {
		t.Fatalf("%d runs started", n)
	}
}

// TestTriggerBeyondItsOwnersQuota: a trigger's threads count against its
// owner's max_threads, and a call beyond it is answered as the owner's
// own request would be (403 quota_exceeded), not as a server fault.
func TestTriggerBeyondItsOwnersQuota(t *testing.T) {
	env := newTestEnv(t, func(c *Config) {
		c.Limits.MaxThreads = 1
		triggerConfig(t, c, trigger.Owner{Tenant: "lab", Principal: "alice"})
	})
	callTrigger(t, env.http.URL, "fast")
	status, out := postTrigger(t, env.http.URL, "fast")
	if status != http.StatusForbidden || !strings.Contains(string(out), "max_threads") {
		t.Fatalf("a call beyond the owner's thread quota: %d %s", status, out)
	}
}

// TestShutdownJoinsTriggerRuns: a trigger's run is the server's to stop
// and join: once Shutdown has returned, no goroutine of it is left.
func TestShutdownJoinsTriggerRuns(t *testing.T) {
	before := serverGoroutines()
	cfg := Config{Runner: newScriptedRunner(), ShutdownGrace: -1}
	triggerConfig(t, &cfg, trigger.Owner{})
	srv, url, served := serveOnPort(t, cfg)
	callTrigger(t, url, "slow")
	running := false
	for _, g := range serverGoroutines() {
		running = running || strings.Contains(g, "execute")
	}
	if !running {
		t.Fatal("no run goroutine of the server while the trigger's run goes on")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil { // Serve's own goroutines end as it returns
		t.Fatal(err)
	}
	var left []string
	for id, g := range serverGoroutines() {
		if _, ok := before[id]; !ok {
			left = append(left, g)
		}
	}
	if len(left) > 0 {
		t.Fatalf("%d goroutines of the server outlive Shutdown:\n%s", len(left), strings.Join(left, "\n\n"))
	}
}
