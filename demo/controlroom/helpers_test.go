package controlroom_test

import (
	"context"
	"os"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/state"
)

// turn is the events of one turn.
type turn struct {
	events []agent.Event
	err    error
}

func (o turn) message() *state.Message {
	for _, e := range o.events {
		if e.Type == agent.EventMessage {
			return e.Message
		}
	}
	return nil
}

func (o turn) of(typ agent.EventType) []agent.Event {
	var out []agent.Event
	for _, e := range o.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// runTurn runs one turn on a new agent of cfg.
func runTurn(t *testing.T, cfg agent.Config, input string) turn {
	t.Helper()
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var o turn
	for ev, err := range a.Run(context.Background(), agent.TurnRequest{Thread: "t", Input: input}) {
		o.events = append(o.events, ev)
		if err != nil {
			o.err = err
		}
	}
	if o.err != nil {
		t.Fatalf("turn failed: %v", o.err)
	}
	return o
}

// nodeRoles are the roles of the infrastructure nodes; the error node's role
// stays offline so its report is deterministic.
var nodeRoles = []llm.Role{llm.RoleTaskExtraction, llm.RoleClassifier, llm.RoleOrchestrator, llm.RoleResponse}

// config is an agent over reg whose infrastructure nodes ask the scripted
// model m, each of them on every turn (everyNodeAsks).
func config(reg *capabilities.Registry, m *llmtest.Model, mode nodes.ClassifierMode) agent.Config {
	n := everyNodeAsks
	n.ClassifierMode = mode
	return agent.Config{Registry: reg, Models: m.Only(nodeRoles...), Nodes: n,
		InfraRetry: map[string]capabilities.RetryPolicy{}}
}

// everyNodeAsks makes task extraction and the classifier ask their model on
// every turn, so a scripted model's reply in those roles (a lie, too) is
// read; by default a turn leaves out the calls it does not need.
var everyNodeAsks = nodes.Config{TaskExtraction: nodes.TaskAlways, SelectAllWithinTokens: -1, SeparateTaskAndSelection: true}

func writeFile(p, text string) error { return os.WriteFile(p, []byte(text), 0o600) }
