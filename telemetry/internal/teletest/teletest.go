// Package teletest builds the agent the telemetry packages' tests observe:
// the real infrastructure nodes over the scripted model (llm/llmtest),
// answering in the shapes real models use (prose around a fenced plan), and
// capabilities whose failures are scripted per turn, so that each turn
// takes a known path: answered, retried, replanned, a refused write, an
// error report, an approval.
package teletest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/state"
)

// The turns, by the word their input contains.
const (
	// Answered: find_channel, then the answer.
	Answered = "dcct"
	// Retried: read_current fails once with a timeout (RETRIABLE), then answers.
	Retried = "flaky"
	// Replanned: read_current times out (RETRIABLE), then finds no such
	// channel (REPLANNING); the second plan finds the channel first.
	Replanned = "replan"
	// RefusedWrite: a plan with set_current while writes are disabled.
	RefusedWrite = "setpoint"
	// ErrorReport: read_current fails CRITICAL (an interlock): error node.
	ErrorReport = "interlock"
	// Approval: with writes enabled, set_current asks for approval.
	Approval = "approve"
)

// Inputs are the users' messages for each turn, phrased as operators do.
var Inputs = map[string]string{
	Answered:     "which pv is the dcct beam current?",
	Retried:      "whats the beam current rn (flaky archiver)",
	Replanned:    "read the beam current, replan if the channel is unknown",
	RefusedWrite: "set the setpoint of the Q1 quadrupole to 5 A",
	ErrorReport:  "read the current behind the interlock",
	Approval:     "please approve and set Q1 quadrupole current to 5 A",
}

const fence = "Here is the plan.\n```json\n%s\n```"

var plans = map[string][]string{
	Answered: {`{"steps": [
	 {"context_key": "ch", "capability": "find_channel", "task_objective": "find the beam current channel", "expected_output": "CHANNEL"},
	 {"context_key": "answer", "capability": "respond", "task_objective": "answer"}]}`},
	Retried: {`{"steps": [
	 {"context_key": "cur", "capability": "read_current", "task_objective": "read the beam current", "expected_output": "CURRENT"},
	 {"context_key": "answer", "capability": "respond", "task_objective": "answer"}]}`},
	Replanned: {`{"steps": [
	 {"context_key": "cur", "capability": "read_current", "task_objective": "read the beam current", "expected_output": "CURRENT"},
	 {"context_key": "answer", "capability": "respond", "task_objective": "answer"}]}`,
		`{"steps": [
	 {"context_key": "ch", "capability": "find_channel", "task_objective": "find the beam current channel", "expected_output": "CHANNEL"},
	 {"context_key": "cur", "capability": "read_current", "task_objective": "read the beam current", "expected_output": "CURRENT"},
	 {"context_key": "answer", "capability": "respond", "task_objective": "answer"}]}`},
	RefusedWrite: {`{"steps": [
	 {"context_key": "set", "capability": "set_current", "task_objective": "set Q1 to 5 A", "expected_output": "SETPOINT"},
	 {"context_key": "answer", "capability": "respond", "task_objective": "answer"}]}`},
	ErrorReport: {`{"steps": [
	 {"context_key": "cur", "capability": "read_current", "task_objective": "read the beam current", "expected_output": "CURRENT"},
	 {"context_key": "answer", "capability": "respond", "task_objective": "answer"}]}`},
}

func init() { plans[Approval] = plans[RefusedWrite] }

var selected = map[string]string{
	Answered:     `{"capabilities": ["find_channel"]}`,
	Retried:      `{"capabilities": ["read_current"]}`,
	Replanned:    `{"capabilities": ["find_channel", "read_current"]}`,
	RefusedWrite: `{"capabilities": ["set_current"]}`,
	ErrorReport:  `{"capabilities": ["read_current"]}`,
	Approval:     `{"capabilities": ["set_current"]}`,
}

// World is the scripted application; it counts read_current's calls per turn.
type World struct {
	mu    sync.Mutex
	reads map[string]int // by turn word
	plans map[string]int
	// Model is the scripted model.
	Model *llmtest.Model
}

func wordOf(text string) string {
	for _, w := range []string{Answered, Retried, Replanned, RefusedWrite, ErrorReport, Approval} {
		if strings.Contains(text, w) {
			return w
		}
	}
	return ""
}

// Config returns an agent configuration over store observed by obs.
func Config(t testing.TB, store checkpoint.Store, obs agent.Observer, writes bool) (agent.Config, *World) {
	t.Helper()
	w := &World{reads: map[string]int{}, plans: map[string]int{}}
	fast := capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond,
		MaxInterval: 2 * time.Millisecond, Jitter: capabilities.JitterNone}
	defs := []capabilities.Definition{
		{Name: "find_channel", Description: "Finds a control-system channel by description.", Provides: []string{"CHANNEL"},
			Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
				return capabilities.Result("CHANNEL", "SR:DCCT:current", "the beam current channel"), nil
			}},
		{Name: "read_current", Description: "Reads the beam current.", Provides: []string{"CURRENT"}, Retry: fast,
			Run: func(_ context.Context, s capabilities.Step) (capabilities.Output, error) {
				word := wordOf(s.Task)
				w.mu.Lock()
				w.reads[word]++
				n := w.reads[word]
				w.mu.Unlock()
				switch {
				case word == Retried && n == 1, word == Replanned && n == 1:
					return capabilities.Output{}, capabilities.NewError(capabilities.Retriable, capabilities.KindTimeout, "the archiver timed out", nil)
				case word == Replanned && n == 2:
					return capabilities.Output{}, capabilities.NewError(capabilities.Replanning, capabilities.KindNotFound, "no channel named beam current", nil)
				case word == ErrorReport:
					return capabilities.Output{}, capabilities.NewError(capabilities.Critical, capabilities.KindLimitViolation, "the interlock is tripped", nil)
				}
				return capabilities.Result("CURRENT", 401.5, "beam current 401.5 mA"), nil
			}},
		{Name: "set_current", Description: "Sets a magnet's current setpoint.", Provides: []string{"SETPOINT"}, SideEffects: true,
			Action: func(capabilities.Step) (capabilities.Action, error) {
				return capabilities.Action{Capability: "set_current", Changes: []capabilities.Change{{Target: "BTS:Q1:I", Value: 5.0, Unit: "A"}},
					Summary: "set BTS:Q1:I to 5 A"}, nil
			},
			Run: func(_ context.Context, s capabilities.Step) (capabilities.Output, error) {
				if !s.WritesEnabled {
					return capabilities.Output{}, capabilities.ErrWritesDisabled
				}
				return capabilities.Result("SETPOINT", 5.0, "BTS:Q1:I set to 5 A"), nil
			}},
	}
	reg := capabilities.NewRegistry()
	for _, d := range defs {
		c := capabilities.Define(d)
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	prompt := func(req llm.Request) string {
		var b strings.Builder
		for _, m := range req.Messages {
			b.WriteString(m.Content)
			b.WriteByte('\n')
		}
		return b.String()
	}
	m := llmtest.New().NoLog().
		On(llmtest.RoleIs(llm.RoleTaskExtraction), func(req llm.Request) llmtest.Reply {
			word := wordOf(prompt(req))
			in := Inputs[word]
			intent := `{"kind": "read"}`
			if word == RefusedWrite || word == Approval {
				intent = `{"kind": "change", "changes": [{"target": "Q1 quadrupole current", "value": 5, "unit": "A"}]}`
			}
			return llmtest.Text(fmt.Sprintf(`{"task": %q, "depends_on_chat_history": false, "intent": %s}`, in, intent))
		}).
		On(llmtest.RoleIs(llm.RoleClassifier), func(req llm.Request) llmtest.Reply {
			return llmtest.Text(selected[wordOf(prompt(req))])
		}).
		On(llmtest.RoleIs(llm.RoleOrchestrator), func(req llm.Request) llmtest.Reply {
			word := wordOf(prompt(req))
			w.mu.Lock()
			n := w.plans[word]
			w.plans[word]++
			w.mu.Unlock()
			ps := plans[word]
			return llmtest.Text(fmt.Sprintf(fence, ps[min(n, len(ps)-1)]))
		}).
		On(llmtest.RoleIs(llm.RoleResponse), func(llm.Request) llmtest.Reply {
			return llmtest.Text("<think>the context has it</think>The beam current is 401.5 mA.")
		})
	w.Model = m
	cfg := agent.Config{Registry: reg, Store: store, Observer: obs,
		Models:  m.Only(llm.RoleTaskExtraction, llm.RoleClassifier, llm.RoleOrchestrator, llm.RoleResponse),
		Options: state.Options{WritesEnabled: writes},
		// Every node asks its model, so a turn shows each role's call.
		Nodes: nodes.Config{TaskExtraction: nodes.TaskAlways, SelectAllWithinTokens: -1, SeparateTaskAndSelection: true}}
	return cfg, w
}

// Agent returns the agent of Config.
func Agent(t testing.TB, store checkpoint.Store, obs agent.Observer, writes bool) (*agent.Agent, *World) {
	t.Helper()
	cfg, w := Config(t, store, obs, writes)
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a, w
}

// Turn runs the turn of word on thread and returns its events; a run error
// fails the test.
func Turn(t testing.TB, a *agent.Agent, thread, word string) []agent.Event {
	t.Helper()
	var evs []agent.Event
	for ev, err := range a.Run(context.Background(), agent.TurnRequest{Thread: thread, Input: Inputs[word]}) {
		if err != nil {
			t.Fatalf("turn %s: %v", word, err)
		}
		evs = append(evs, ev)
	}
	return evs
}
