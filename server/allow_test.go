package server

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

// writeAgentEnv serves a real (offline) agent with a read and a write
// capability, writes enabled and no approvals, so only the principal's
// allowed capabilities stand between a request and the write. alice may
// only read; bob may do anything.
func writeAgentEnv(t *testing.T) (*testEnv, *atomic.Int32) {
	t.Helper()
	var writes atomic.Int32
	read := readBeamCurrent(t)
	write := capabilities.Define(capabilities.Definition{
		Name: "set_corrector_current", Description: "Set (write) the current of a corrector magnet",
		Provides: []string{"SETPOINT"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use to set or write a corrector magnet current.",
			Examples: []capabilities.ClassifierExample{{Query: "set the corrector current to 1.5 A", Result: true, Reason: "writes a corrector current"}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			writes.Add(1)
			return capabilities.Result("SETPOINT", 1.5, "corrector current set to 1.5 A"), nil
		},
	})
	reg := newRegistry(t, read, write)
	a, err := agent.New(agent.Config{Registry: reg, Options: state.Options{WritesEnabled: true, ApprovalMode: state.ApprovalModeDisabled}})
	if err != nil {
		t.Fatal(err)
	}
	env := newTestEnv(t, func(c *Config) {
		c.Runner = a
		c.Principals[0].AllowedCapabilities = []string{"read_beam_current"}
	})
	return env, &writes
}

func TestAllowedCapabilitiesOverServer(t *testing.T) {
	const ask = "Set the corrector current to 1.5 A"
	tests := []struct {
		name string
		send func(t *testing.T, env *testEnv, key string) string
	}{
		{"chat completions", func(t *testing.T, env *testEnv, key string) string {
			resp, body := env.do(t, "POST", "/v1/chat/completions", key, chatBody("capgraph", false, user(ask)))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			return chatContent(t, body)
		}},
		{"native", func(t *testing.T, env *testEnv, key string) string {
			env.do(t, "POST", "/api/threads", key, map[string]any{"id": "w"})
			_, body := env.do(t, "POST", "/api/threads/w/runs", key, map[string]any{"input": ask, "stream": true})
			return string(body)
		}},
		{"agui", func(t *testing.T, env *testEnv, key string) string {
			_, body := env.do(t, "POST", "/agui", key, map[string]any{"threadId": "w", "runId": "r1",
				"messages": []map[string]any{{"id": "u1", "role": "user", "content": ask}}})
			return string(body)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, writes := writeAgentEnv(t)
			// The read-only principal: no write, and an answer naming why.
			out := tc.send(t, env, keyAlice)
			if n := writes.Load(); n != 0 {
				t.Fatalf("a read-only principal caused %d writes: %s", n, out)
			}
			if !strings.Contains(out, "set_corrector_current") || !strings.Contains(out, "not allowed") {
				t.Fatalf("answer does not name the refused capability: %s", out)
			}
			denied := 0
			for _, r := range env.audit.records(t) {
				if r.Capability == "set_corrector_current" && r.Outcome != capabilities.OutcomeRefused {
					t.Fatalf("audited a refused write as %+v", r)
				}
				if r.Event == agent.AuditStep && r.Outcome == capabilities.OutcomeRefused && r.Principal == "alice" && r.Capability == "set_corrector_current" {
					denied++
				}
			}
			if denied == 0 {
				t.Fatal("the refusal was not audited")
			}
			// The same request from an unrestricted principal writes: the
			// refusal above came from alice's allowed set.
			tc.send(t, env, keyBob)
			if n := writes.Load(); n != 1 {
				t.Fatalf("unrestricted principal: %d writes, want 1", n)
			}
		})
	}
}
