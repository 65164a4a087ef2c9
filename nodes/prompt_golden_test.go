package nodes

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/state"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden prompt files in testdata/")

func goldenPrompt(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./nodes -run TestNodePromptsGolden -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (run with -update if intended):\n--- got ---\n%s\n--- want ---\n%s", name, path, got, want)
	}
}

// systemPrompt runs node n on s with a scripted reply for role and returns
// the messages the model received (system prompt and user message).
func systemPrompt(t *testing.T, reg *capabilities.Registry, seed uint64, role llm.Role, reply string, s state.State,
	mk func(Config) (Node, error)) string {
	t.Helper()
	m := llmtest.New().Script(role, llmtest.Text(reply))
	cfg := llmCfg(reg, m)
	cfg.Seed = seed
	n, err := mk(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := runNode(t, n, s); err != nil {
		t.Fatal(err)
	}
	calls := m.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	var b strings.Builder
	for _, msg := range calls[0].Request.Messages {
		b.WriteString("--- " + msg.Role + " ---\n" + msg.Content + "\n")
	}
	return b.String()
}

func classifierNode(c Config) (Node, error)   { return NewClassifier(c) }
func orchestratorNode(c Config) (Node, error) { return NewOrchestrator(c) }
func respondNode(c Config) (Node, error)      { return NewRespond(c) }

// The prompts the nodes render from real state, as the model receives them:
// capability guides injected, classifier examples in seeded shuffled order,
// the reclassification reason, orchestrator guides sorted by priority with
// numbered examples, context kept from earlier turns listed for reuse, the
// failed step's classification when replanning, and an answer's context in
// plan order with earlier turns' context only when the task depends on it.
func TestNodePromptsGolden(t *testing.T) {
	reg := controlRoom(t)
	t0 := time.Date(2026, 11, 21, 19, 0, 0, 0, time.UTC)

	t.Run("classifier_batched_reclassification", func(t *testing.T) {
		s := withTask("What is the beam current?")
		s.Turn.Control.Error = &state.ErrorInfo{Node: state.NodeOrchestrator, StepIndex: -1, Classification: capabilities.Classification{
			Severity: capabilities.Reclassification, Metadata: map[string]any{capabilities.MetaReclassificationReason: "the plan needed beam_dump, which is not available"}}}
		p := systemPrompt(t, reg, 3, llm.RoleClassifier, `{"capabilities": ["channel_read"]}`, s, classifierNode)
		goldenPrompt(t, "classifier_batched_reclassification", p)
		if !strings.Contains(p, "Previous approach failed: the plan needed beam_dump") {
			t.Error("the reclassification reason is missing")
		}
	})

	t.Run("orchestrator_turn2", func(t *testing.T) {
		s := withTask("What is the vacuum pressure in sector 3?", "channel_finding", "channel_read", "respond", "clarify")
		s.Turn.Number = 2
		s.Context = capabilities.ContextStore{}.Put(
			capabilities.ContextEntry{Type: "CHANNEL_VALUES", Key: "bc_value", Turn: 1, Created: t0.Add(time.Second), TaskObjective: "Read the beam current", Summary: "SR:DCCT:CURRENT = 500.2 mA"},
			capabilities.ContextEntry{Type: "CHANNEL_ADDRESSES", Key: "bc_channels", Turn: 1, Created: t0, TaskObjective: "Find the beam current channel", Summary: "SR:DCCT:CURRENT"})
		p := systemPrompt(t, reg, 1, llm.RoleOrchestrator, `{"steps": []}`, s, orchestratorNode)
		goldenPrompt(t, "orchestrator_turn2", p)
		// Priority order: channel_finding (1) before channel_read (2); earlier context oldest first.
		if i, j := strings.Index(p, "## channel_finding"), strings.Index(p, "## channel_read"); i < 0 || j < i {
			t.Error("guides not sorted by priority")
		}
		if i, j := strings.Index(p, `"bc_channels"} (turn 1)`), strings.Index(p, `"bc_value"} (turn 1)`); i < 0 || j < i {
			t.Error("earlier context not listed oldest first")
		}
	})

	t.Run("orchestrator_replanning", func(t *testing.T) {
		s := withTask("beam current", "channel_finding", "channel_read", "respond", "clarify")
		s.Turn.Plan = &state.Plan{Number: 1, Steps: toPlanSteps([]capabilities.PlannedStep{
			{ContextKey: "c", Capability: "channel_finding", TaskObjective: "find the beam current channel", ExpectedOutput: "CHANNEL_ADDRESSES"}, respondStep("beam current")})}
		s.Turn.Control.PlansCreated = 1
		s.Turn.Control.Error = &state.ErrorInfo{Node: "channel_finding", Capability: "channel_finding", StepIndex: 0, Message: "no channel matches",
			Classification: capabilities.Classification{Severity: capabilities.Replanning, Kind: capabilities.KindNotFound, UserMessage: "no channel matches \"beam curent\"",
				Metadata: map[string]any{capabilities.MetaReplanningReason: "the description matched nothing"}}}
		p := systemPrompt(t, reg, 1, llm.RoleOrchestrator, `{"steps": []}`, s, orchestratorNode)
		goldenPrompt(t, "orchestrator_replanning", p)
	})

	t.Run("orchestrator_change_intent", func(t *testing.T) {
		// A capability declaring side effects is marked, and the planner is
		// told what the user asked to change.
		wreg := sideEffectRegistry(t)
		s := withTask("Set the quadrupole Q1 current in the BTS line to 105 A", "channel_finding", "channel_write", "respond", "clarify")
		v := 105.0
		s.Turn.Task.Intent = intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{{Target: "the quadrupole Q1 current in the BTS line", Value: &v, Unit: "A"}}}
		p := systemPrompt(t, wreg, 1, llm.RoleOrchestrator, `{"steps": []}`, s, orchestratorNode)
		goldenPrompt(t, "orchestrator_change_intent", p)
		for _, want := range []string{"USER INTENT: change: the quadrupole Q1 current in the BTS line to 105 A.",
			"## channel_write\nWrite a new setpoint.\nChanges the outside world"} {
			if !strings.Contains(p, want) {
				t.Errorf("the prompt lacks %q", want)
			}
		}
		if strings.Contains(p, "## channel_finding\nFind channel names.\nChanges") {
			t.Error("a read capability is marked as changing the outside world")
		}
		// Without a side-effecting capability active, no intent line.
		s.Turn.ActiveCapabilities = []string{"channel_finding", "respond", "clarify"}
		if p := systemPrompt(t, wreg, 1, llm.RoleOrchestrator, `{"steps": []}`, s, orchestratorNode); strings.Contains(p, "USER INTENT") {
			t.Error("the intent line is shown although no active capability has side effects")
		}
	})

	t.Run("response_follow_up", func(t *testing.T) {
		// Turn 2 follows up on turn 1: the archive step reads turn 1's
		// channels; turn 1's read is not repeated.
		s := newState("and its history?", "What is the beam current?", "SR:DCCT:CURRENT = 500.2 mA")
		s.Turn.Task = &state.Task{Text: "Show the beam current history", DependsOnHistory: true}
		s.Context = capabilities.ContextStore{}.Put(
			capabilities.ContextEntry{Type: "CHANNEL_ADDRESSES", Key: "bc_channels", Turn: 1, Created: t0, TaskObjective: "Find the beam current channel", Summary: "SR:DCCT:CURRENT"},
			capabilities.ContextEntry{Type: "CHANNEL_VALUES", Key: "bc_value", Turn: 1, Created: t0, TaskObjective: "Read the beam current", Summary: "SR:DCCT:CURRENT = 500.2 mA"})
		s.Turn.Plan = &state.Plan{Number: 1, Steps: toPlanSteps([]capabilities.PlannedStep{
			{ContextKey: "bc_hist", Capability: "archiver_retrieval", TaskObjective: "Retrieve the beam current history", ExpectedOutput: "ARCHIVER_DATA",
				Inputs: []capabilities.InputRef{{Type: "CHANNEL_ADDRESSES", Key: "bc_channels"}}}, respondStep("Show the beam current history")})}
		s = execute(t, s, func(capabilities.PlannedStep) string { return "SR:DCCT:CURRENT: mean 500.5 mA over the last hour" })
		p := systemPrompt(t, reg, 1, llm.RoleResponse, "The beam current averaged 500.5 mA.", s, respondNode)
		goldenPrompt(t, "response_follow_up", p)
		if strings.Contains(p, "500.2 mA\n") && strings.Contains(p, `CHANNEL_VALUES "bc_value"`) {
			t.Error("turn 1's read is repeated as a result")
		}
	})
}

// sideEffectRegistry: channel_finding and a channel_write that declares side
// effects.
func sideEffectRegistry(t testing.TB) *capabilities.Registry {
	t.Helper()
	reg := capabilities.NewRegistry()
	write := capabilities.Define(capabilities.Definition{Name: "channel_write", Description: "Write a new setpoint.", SideEffects: true,
		Provides: []string{"CHANNEL_WRITE_RESULTS"}, Requires: []capabilities.Requirement{{Type: "CHANNEL_ADDRESSES"}},
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Output{}, nil
		}})
	if err := reg.Register(mustCap(t, capSpec{name: "channel_finding", desc: "Find channel names.", provides: []string{"CHANNEL_ADDRESSES"}}), write); err != nil {
		t.Fatal(err)
	}
	return reg
}
