package nodes

import (
	"context"
	"fmt"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/state"
)

// syntheticRegistry has n capabilities, each with a classifier guide.
func syntheticRegistry(tb testing.TB, n int) *capabilities.Registry {
	tb.Helper()
	reg := capabilities.NewRegistry()
	for i := range n {
		c := mustCap(tb, capSpec{name: fmt.Sprintf("cap_%02d", i), desc: fmt.Sprintf("Capability number %d.", i),
			provides: []string{fmt.Sprintf("TYPE_%02d", i)},
			guide:    &capabilities.ClassifierGuide{Instructions: "Select for topic " + fmt.Sprint(i), Examples: []capabilities.ClassifierExample{ex("q", true)}}})
		if err := reg.Register(c); err != nil {
			tb.Fatal(err)
		}
	}
	return reg
}

// scriptedTurn answers every role: cap_00 is the one relevant capability.
func scriptedTurn() *llmtest.Model {
	text := func(s string) func(llm.Request) llmtest.Reply {
		return func(llm.Request) llmtest.Reply { return llmtest.Text(s) }
	}
	return llmtest.New().
		On(llmtest.RoleIs(llm.RoleTaskExtraction), text(`{"task": "do topic 0", "depends_on_chat_history": false}`)).
		On(llmtest.All(llmtest.RoleIs(llm.RoleClassifier), llmtest.PromptContains("Capability: cap_00 ")), text(`{"is_match": true}`)).
		On(llmtest.All(llmtest.RoleIs(llm.RoleClassifier), llmtest.PromptContains(`{"is_match": true}`)), text(`{"is_match": false}`)).
		On(llmtest.RoleIs(llm.RoleClassifier), text(`{"capabilities": ["cap_00"]}`)).
		On(llmtest.RoleIs(llm.RoleOrchestrator), text(`{"steps": [{"context_key": "r", "capability": "cap_00", "task_objective": "do it"}]}`)).
		On(llmtest.RoleIs(llm.RoleResponse), text("Done."))
}

// llmTurn runs task extraction, classifier, orchestrator and respond (the
// capability step itself makes no LLM call) and returns the calls made and
// the tokens the turn counted.
func llmTurn(tb testing.TB, set *Set, m *llmtest.Model) (calls, tokens int) {
	before := m.Count()
	s := newState("do topic 0")
	for _, n := range []Node{set.TaskExtraction, set.Classifier, set.Orchestrator, set.Respond} {
		u, err := n.Run(context.Background(), s)
		if err != nil {
			tb.Fatalf("%s: %v", n.Name(), err)
		}
		if s, err = state.Apply(s, u); err != nil {
			tb.Fatal(err)
		}
	}
	return m.Count() - before, s.Turn.Control.Tokens
}

func TestLLMCallsPerTurn(t *testing.T) {
	for _, n := range []int{3, 10, 30} {
		for _, mode := range []ClassifierMode{Batched, PerCapability} {
			m := scriptedTurn()
			set, err := New(Config{Registry: syntheticRegistry(t, n), Models: m, ClassifierMode: mode})
			if err != nil {
				t.Fatal(err)
			}
			want := 4
			if mode == PerCapability {
				want = 3 + n
			}
			if got, tokens := llmTurn(t, set, m); got != want || tokens == 0 {
				t.Errorf("%d capabilities, %s: %d calls (%d tokens), want %d calls", n, mode, got, tokens, want)
			}
		}
	}
}

// BenchmarkLLMCallsPerTurn reports LLM calls per turn (llm_calls/turn) and
// prompt+completion tokens per turn (tokens/turn, the scripted model's
// estimate: a token per four characters) for 3, 10 and 30 capabilities.
func BenchmarkLLMCallsPerTurn(b *testing.B) {
	for _, n := range []int{3, 10, 30} {
		for _, mode := range []ClassifierMode{Batched, PerCapability} {
			b.Run(fmt.Sprintf("caps=%d/mode=%s", n, mode), func(b *testing.B) {
				m := scriptedTurn()
				set, err := New(Config{Registry: syntheticRegistry(b, n), Models: m, ClassifierMode: mode})
				if err != nil {
					b.Fatal(err)
				}
				calls, tokens := 0, 0
				for b.Loop() {
					c, tok := llmTurn(b, set, m)
					calls += c
					tokens += tok
				}
				b.ReportMetric(float64(calls)/float64(b.N), "llm_calls/turn")
				b.ReportMetric(float64(tokens)/float64(b.N), "tokens/turn")
			})
		}
	}
}
