package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/state"
)

// Every LLM call a node makes is an EventModelCall of that node, between
// its node_start and node_end, with the role, the model, the tokens and
// the time it took: a frontend draws the turn's timeline from them. A reply
// cut off by the token limit and asked again is two calls; a call that
// fails carries its error. Nodes that run offline make none.
func TestModelCallEvents(t *testing.T) {
	c := capabilities.Define(capabilities.Definition{
		Name: "read_beam_current", Description: "Read the beam current of the storage ring", Provides: []string{"BEAM_CURRENT"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use for questions about the beam current.",
			Examples: []capabilities.ClassifierExample{{Query: "what is the beam current?", Result: true, Reason: "asks for the beam current"}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("BEAM_CURRENT", 401.5, "beam current is 401.5 mA"), nil
		},
	})
	reg := capabilities.NewRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	// The response model: a reply cut at the limit (asked again), then
	// the answer, as real models stream it.
	m := llmtest.New().Script(llm.RoleResponse,
		llmtest.Reply{Text: "The beam current is", Finish: llm.FinishLength, Usage: llm.Usage{PromptTokens: 120, CompletionTokens: 5}},
		llmtest.Reply{Chunks: []string{"The beam current ", "is 401.5 mA."}, Usage: llm.Usage{PromptTokens: 120, CompletionTokens: 9}}).
		Only(llm.RoleResponse)
	a := mustAgent(t, agent.Config{Registry: reg, Models: m})
	o := run(t, a, "t", "What is the beam current of the storage ring?")
	if o.err != nil {
		t.Fatal(o.err)
	}
	if msg := o.message(); msg == nil || !strings.Contains(msg.Content, "401.5") {
		t.Fatalf("message %+v", msg)
	}
	var calls []agent.Event
	open := ""
	for _, e := range o.events {
		switch e.Type {
		case agent.EventNodeStart:
			open = e.Node
		case agent.EventNodeEnd:
			open = ""
		case agent.EventModelCall:
			if e.Node != state.NodeRespond || open != state.NodeRespond {
				t.Errorf("model call of node %q while %q runs", e.Node, open)
			}
			calls = append(calls, e)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("%d model_call events, want 2 (the cut reply and the one asked again): %+v", len(calls), o.events)
	}
	for i, want := range []agent.Usage{{PromptTokens: 120, CompletionTokens: 5, TotalTokens: 125}, {PromptTokens: 120, CompletionTokens: 9, TotalTokens: 129}} {
		e := calls[i]
		if e.Call == nil || e.Call.Role != string(llm.RoleResponse) || e.Call.Usage != want || e.Err != "" || e.Duration < 0 || e.Seq == 0 {
			t.Errorf("call %d: %+v (call %+v), want role response, usage %+v", i, e, e.Call, want)
		}
	}

	// A failing call carries its error; the node answers offline, as
	// configured, and the turn still ends with an answer.
	down := llmtest.New().Script(llm.RoleResponse, llmtest.Fail(errors.New("connection refused"))).Only(llm.RoleResponse)
	a = mustAgent(t, agent.Config{Registry: reg, Models: down})
	o = run(t, a, "t2", "What is the beam current of the storage ring?")
	var failed []agent.Event
	for _, e := range o.events {
		if e.Type == agent.EventModelCall {
			failed = append(failed, e)
		}
	}
	if len(failed) == 0 || !strings.Contains(failed[0].Err, "connection refused") || failed[0].Call.Role != string(llm.RoleResponse) {
		t.Fatalf("failed call events %+v", failed)
	}

	// Offline: no model, no call.
	a = mustAgent(t, agent.Config{Registry: reg})
	if o := run(t, a, "t3", "What is the beam current of the storage ring?"); o.count(agent.EventModelCall) != 0 {
		t.Errorf("an offline turn reported %d model calls", o.count(agent.EventModelCall))
	}
}
