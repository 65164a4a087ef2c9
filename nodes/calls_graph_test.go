package nodes_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/nodes"
)

// callsWorld is an agent over n synthetic capabilities, each with a
// classifier guide, cap_00 the one relevant, and the scripted model
// answering every role.
func callsWorld(tb testing.TB, n int, mode nodes.ClassifierMode, every bool) (*agent.Agent, *llmtest.Model) {
	tb.Helper()
	reg := capabilities.NewRegistry()
	for i := range n {
		c := capabilities.Define(capabilities.Definition{Name: fmt.Sprintf("cap_%02d", i), Description: fmt.Sprintf("Capability number %d.", i),
			Provides:        []string{fmt.Sprintf("TYPE_%02d", i)},
			ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Select for topic " + fmt.Sprint(i), Examples: []capabilities.ClassifierExample{{Query: "q", Result: true}}},
			Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
				return capabilities.Result(fmt.Sprintf("TYPE_%02d", i), i, fmt.Sprintf("topic %d done", i)), nil
			}})
		if err := reg.Register(c); err != nil {
			tb.Fatal(err)
		}
	}
	text := func(s string) func(llm.Request) llmtest.Reply {
		return func(llm.Request) llmtest.Reply { return llmtest.Text(s) }
	}
	m := llmtest.New().
		On(llmtest.RoleIs(llm.RoleTaskExtraction), text(`{"task": "do topic 0", "depends_on_chat_history": false}`)).
		On(llmtest.All(llmtest.RoleIs(llm.RoleClassifier), llmtest.PromptContains("Capability: cap_00 ")), text(`{"is_match": true}`)).
		On(llmtest.All(llmtest.RoleIs(llm.RoleClassifier), llmtest.PromptContains(`{"is_match": true}`)), text(`{"is_match": false}`)).
		On(llmtest.RoleIs(llm.RoleClassifier), text(`{"capabilities": ["cap_00"]}`)).
		On(llmtest.RoleIs(llm.RoleOrchestrator), text(`{"steps": [{"context_key": "r", "capability": "cap_00", "task_objective": "do topic 0", "expected_output": "TYPE_00"}]}`)).
		On(llmtest.RoleIs(llm.RoleResponse), text("Topic 0 is done."))
	nc := nodes.Config{ClassifierMode: mode}
	if every {
		nc = everyCall(nc)
	}
	a, err := agent.New(agent.Config{Registry: reg, Models: m, Nodes: nc})
	if err != nil {
		tb.Fatal(err)
	}
	return a, m
}

// callsTurn runs one whole turn on a new thread and returns the LLM calls
// it made and the tokens it counted (Turn.Control.Tokens).
func callsTurn(tb testing.TB, a *agent.Agent, m *llmtest.Model, thread string) (calls, tokens int) {
	tb.Helper()
	before := m.Count()
	for ev, err := range a.Run(context.Background(), agent.TurnRequest{Thread: thread, Input: "do topic 0"}) {
		if err != nil {
			tb.Fatal(err)
		}
		if ev.Type == agent.EventMessage && ev.Message.Content != "Topic 0 is done." {
			tb.Fatalf("message %+v", ev.Message)
		}
	}
	s, _, err := a.Graph().State(context.Background(), thread)
	if err != nil {
		tb.Fatal(err)
	}
	return m.Count() - before, s.Turn.Control.Tokens
}

// llmCallsTable is the table of docs/performance.md ("LLM calls per turn"):
// calls and tokens per turn by classifier mode and number of capabilities,
// on the default path and with every node asking its model (everyCall).
// The test holds the document to it, so neither can drift silently.
var llmCallsTable = map[bool]map[nodes.ClassifierMode]map[int][2]int{
	false: {
		nodes.Batched:       {3: {2, 534}, 10: {2, 622}, 30: {2, 877}},
		nodes.PerCapability: {3: {2, 534}, 10: {2, 622}, 30: {2, 877}},
	},
	true: {
		nodes.Batched:       {3: {4, 1002}, 10: {4, 1187}, 30: {4, 1727}},
		nodes.PerCapability: {3: {6, 1127}, 10: {13, 1848}, 30: {33, 3908}},
	},
}

func pathName(every bool) string {
	if every {
		return "every_call"
	}
	return "default"
}

func TestLLMCallsPerTurn(t *testing.T) {
	for _, every := range []bool{false, true} {
		for _, mode := range []nodes.ClassifierMode{nodes.Batched, nodes.PerCapability} {
			for _, n := range []int{3, 10, 30} {
				t.Run(fmt.Sprintf("%s/%s/%d", pathName(every), mode, n), func(t *testing.T) {
					a, m := callsWorld(t, n, mode, every)
					w := llmCallsTable[every][mode][n]
					if calls, tokens := callsTurn(t, a, m, "t"); calls != w[0] || tokens != w[1] {
						t.Errorf("%d calls, %d tokens per turn; docs/performance.md says %d calls, %d tokens (update both if a prompt changed)",
							calls, tokens, w[0], w[1])
					}
				})
			}
		}
	}
}

// BenchmarkLLMCallsPerTurn reports LLM calls per turn (llm_calls/turn) and
// prompt+completion tokens per turn (tokens/turn, the scripted model's
// estimate: a token per four characters) of whole turns on the compiled
// agent graph, for 3, 10 and 30 capabilities in both classifier modes, on
// the default path and with every node asking its model.
func BenchmarkLLMCallsPerTurn(b *testing.B) {
	for _, every := range []bool{false, true} {
		for _, n := range []int{3, 10, 30} {
			for _, mode := range []nodes.ClassifierMode{nodes.Batched, nodes.PerCapability} {
				b.Run(fmt.Sprintf("path=%s/caps=%d/mode=%s", pathName(every), n, mode), func(b *testing.B) {
					a, m := callsWorld(b, n, mode, every)
					calls, tokens, i := 0, 0, 0
					for b.Loop() {
						i++
						c, tok := callsTurn(b, a, m, fmt.Sprint("t", i))
						calls += c
						tokens += tok
					}
					b.ReportMetric(float64(calls)/float64(b.N), "llm_calls/turn")
					b.ReportMetric(float64(tokens)/float64(b.N), "tokens/turn")
				})
			}
		}
	}
}
