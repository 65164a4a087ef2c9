package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/server/internal/native"
)

// auditAgentEnv serves a real (offline) agent over caps, with a fast
// retry policy.
func auditAgentEnv(t *testing.T, caps ...capabilities.Capability) *testEnv {
	t.Helper()
	a, err := agent.New(agent.Config{Registry: newRegistry(t, caps...), RetryPolicy: capabilities.RetryPolicy{MaxAttempts: 3,
		InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond, Jitter: capabilities.JitterNone}})
	if err != nil {
		t.Fatal(err)
	}
	return newTestEnv(t, func(c *Config) { c.Runner = a })
}

func defineRead(t *testing.T, name, desc, query string, fallbacks []string, run func(ctx context.Context) error) capabilities.Capability {
	t.Helper()
	var guide *capabilities.ClassifierGuide
	if query != "" {
		guide = &capabilities.ClassifierGuide{Instructions: "Use for: " + desc,
			Examples: []capabilities.ClassifierExample{{Query: query, Result: true, Reason: "fits"}}}
	}
	c := capabilities.Define(capabilities.Definition{Name: name, Description: desc, Provides: []string{strings.ToUpper(name)},
		Fallbacks: fallbacks, ClassifierGuide: guide,
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			if err := run(ctx); err != nil {
				return capabilities.Output{}, err
			}
			return capabilities.Result(strings.ToUpper(name), 1, name+" read 1"), nil
		}})
	return c
}

// failing returns a run function failing with errs in turn, then succeeding.
func failing(errs ...error) func(context.Context) error {
	var mu sync.Mutex
	return func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if len(errs) == 0 {
			return nil
		}
		e := errs[0]
		errs = errs[1:]
		return e
	}
}

type auditWant struct {
	capability, planned, outcome string
	attempt                      int
}

func TestAuditEveryAttempt(t *testing.T) {
	timeout := capabilities.NewError(capabilities.Retriable, capabilities.KindTimeout, "the archive timed out", nil)
	down := capabilities.NewError(capabilities.Critical, capabilities.KindConnection, "the primary monitor is down", nil)
	tests := []struct {
		name  string
		caps  func(t *testing.T) []capabilities.Capability
		input string
		want  []auditWant
	}{
		{"retried step: one record per attempt",
			func(t *testing.T) []capabilities.Capability {
				return []capabilities.Capability{defineRead(t, "archive_read", "Read the archived beam lifetime", "what was the beam lifetime yesterday?", nil, failing(timeout, timeout))}
			},
			"What was the beam lifetime yesterday?",
			[]auditWant{{"archive_read", "", "failed", 1}, {"archive_read", "", "failed", 2}, {"archive_read", "", "", 3}}},
		{"fallback: the planned capability and the one standing in",
			func(t *testing.T) []capabilities.Capability {
				return []capabilities.Capability{
					defineRead(t, "primary_orbit", "Read the orbit from the primary position monitors", "what is the orbit?", []string{"spare_monitor"}, failing(down)),
					defineRead(t, "spare_monitor", "Spare hardware, fallback only", "", nil, failing()),
				}
			},
			"What is the orbit?",
			[]auditWant{{"primary_orbit", "", "failed", 1}, {"spare_monitor", "primary_orbit", "", 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := auditAgentEnv(t, tc.caps(t)...)
			resp, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user(tc.input)))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			recs := env.audit.records(t)
			var got []auditWant
			for _, r := range recs {
				got = append(got, auditWant{r.Capability, r.PlannedCapability, string(r.Outcome), r.Attempt})
				if r.Event != agent.AuditStep || r.Principal != "alice" || r.Tenant != "lab" || r.Thread == "" || r.Run == "" || len(r.Digest) != 64 || r.Digest != recs[0].Digest {
					t.Fatalf("record %+v", r)
				}
				if (r.Outcome == capabilities.OutcomeFailed) != (r.Message != "") {
					t.Fatalf("outcome %q with message %q", r.Outcome, r.Message)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("audit %v, want %v (answer %s)", got, tc.want, chatContent(t, body))
			}
		})
	}
}

// An attempt the run leaves open (canceled mid-execution) is audited too.
func TestAuditCanceledAttempt(t *testing.T) {
	started := make(chan struct{})
	var once sync.Once
	env := auditAgentEnv(t, defineRead(t, "slow_scan", "Scan the undulator gap slowly", "scan the undulator gap", nil, func(ctx context.Context) error {
		once.Do(func() { close(started) })
		<-ctx.Done()
		return ctx.Err()
	}))
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "scan"})
	resp, body := env.do(t, "POST", "/api/threads/scan/runs", keyAlice, map[string]any{"input": "Scan the undulator gap"})
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the capability never started")
	}
	var info struct{ Run native.RunInfo }
	if err := json.Unmarshal(body, &info); err != nil {
		t.Fatal(err)
	}
	env.do(t, "POST", "/api/threads/scan/runs/"+info.Run.ID+"/cancel", keyAlice, nil)
	// The events stream ends when the run has finished (and was audited).
	env.do(t, "GET", "/api/threads/scan/runs/"+info.Run.ID+"/events", keyAlice, nil)
	recs := env.audit.records(t)
	if len(recs) != 1 || recs[0].Event != agent.AuditStep || recs[0].Capability != "slow_scan" || recs[0].Outcome != "" || recs[0].Reason != "canceled" || recs[0].Attempt != 1 || recs[0].Principal != "alice" {
		t.Fatalf("audit %+v", recs)
	}
}
