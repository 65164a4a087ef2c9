package prompts_test

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/prompts"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func guide() *capabilities.ClassifierGuide {
	return &capabilities.ClassifierGuide{Instructions: "Select for present, live values.", Examples: []capabilities.ClassifierExample{
		{Query: "What is the beam current?", Result: true, Reason: "a live value"},
		{Query: "Show the lifetime over the last day", Result: false, Reason: "history"},
		{Query: "Read SR:RF:CAV1:VOLT", Result: true},
	}}
}

func caps(t *testing.T) []capabilities.Capability {
	t.Helper()
	mk := func(d capabilities.Definition) capabilities.Capability {
		d.Run = func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Output{}, nil
		}
		c := capabilities.Define(d)
		return c
	}
	return []capabilities.Capability{
		mk(capabilities.Definition{Name: "channel_read", Description: "Read live values.", Provides: []string{"CHANNEL_VALUES"},
			Requires: []capabilities.Requirement{{Type: "CHANNEL_ADDRESSES"}},
			OrchestratorGuide: &capabilities.OrchestratorGuide{Priority: 2, Instructions: "Use for present values.", Examples: []capabilities.OrchestratorExample{
				{Scenario: "read the beam current", Step: capabilities.PlannedStep{ContextKey: "bc", Capability: "channel_read", TaskObjective: "Read the beam current",
					Inputs: []capabilities.InputRef{{Type: "CHANNEL_ADDRESSES", Key: "bc_channels"}}}, Notes: "needs channels"}}}}),
		mk(capabilities.Definition{Name: "channel_finding", Description: "Find channel names.", Provides: []string{"CHANNEL_ADDRESSES"},
			OrchestratorGuide: &capabilities.OrchestratorGuide{Priority: 1, Instructions: "Use first.", Examples: []capabilities.OrchestratorExample{
				{Scenario: "find the beam current channel", Step: capabilities.PlannedStep{ContextKey: "bc_channels", Capability: "channel_finding", TaskObjective: "Find it"}},
				{Scenario: "find vacuum gauges", Step: capabilities.PlannedStep{ContextKey: "vac", Capability: "channel_finding", TaskObjective: "Find gauges"}}}}}),
		mk(capabilities.Definition{Name: "archiver_retrieval", Description: "Retrieve history.", Provides: []string{"ARCHIVER_DATA"}}),
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./prompts -update to create it)", err)
	}
	if got+"\n" != string(want) {
		t.Errorf("%s differs from %s (run with -update if intended):\n--- got ---\n%s\n--- want ---\n%s", name, path, got, want)
	}
}

func TestGoldenPrompts(t *testing.T) {
	set := prompts.Default()
	hist := []prompts.HistoryMessage{{Role: "user", Content: "What is the beam current?"}, {Role: "assistant", Content: "500 mA."}}
	cc := prompts.ClassifierCapability{Name: "channel_read", Description: "Read live values.", Instructions: guide().Instructions,
		Examples: prompts.ShuffledExamples(guide(), 1)}
	tests := []struct {
		name     string
		template string
		data     any
	}{
		{"task_extraction", prompts.TaskExtraction, prompts.TaskExtractionData{History: hist, Message: "and the lifetime?"}},
		{"task_selection", prompts.TaskSelection, prompts.TaskSelectionData{History: hist, Message: "and the lifetime?",
			Capabilities: []prompts.ClassifierCapability{cc, {Name: "archiver_retrieval", Description: "Retrieve history."}}}},
		{"classifier", prompts.Classifier, prompts.ClassifierData{Task: "What is the beam current?", Capability: cc}},
		{"classifier_reclassification", prompts.Classifier, prompts.ClassifierData{Task: "Dump the beam", Capability: cc,
			PreviousFailure: "the plan needed beam_dump, which is not available"}},
		{"classifier_batched", prompts.ClassifierBatched, prompts.ClassifierBatchedData{Task: "What is the beam current?",
			Capabilities: []prompts.ClassifierCapability{cc, {Name: "archiver_retrieval", Description: "Retrieve history."}}}},
		{"orchestrator", prompts.Orchestrator, prompts.OrchestratorData{Task: "Read the beam current", Capabilities: prompts.PlannerCapabilities(caps(t)),
			AvailableContext: []prompts.ContextItem{{Type: "CHANNEL_ADDRESSES", Key: "vac", TaskObjective: "find vacuum gauges", Summary: "3 gauges", Turn: 1}}}},
		{"orchestrator_replanning", prompts.Orchestrator, prompts.OrchestratorData{Task: "Read the beam current", DependsOnHistory: true, History: hist,
			Capabilities: prompts.PlannerCapabilities(caps(t)[:1]), FailedStep: `1 (channel_finding, "find it")`,
			ReplanReason: capabilities.Classification{Severity: capabilities.Replanning, UserMessage: "no channel matches"}.FormatForLLM()}},
		{"orchestrator_format_error", prompts.Orchestrator, prompts.OrchestratorData{Task: "Read the beam current", Capabilities: prompts.PlannerCapabilities(caps(t)[:1]),
			FormatError: `step 1 has unknown key(s) "Capability"`, PreviousReply: `{"steps": [{"Capability": "channel_read"}]}`}},
		{"task_extraction_format_error", prompts.TaskExtraction, prompts.TaskExtractionData{Message: "What is the beam current?",
			FormatRetry: prompts.FormatRetry{FormatError: `the reply has unknown key(s) "Task"`, ExpectedShape: `{"task": "...", "depends_on_chat_history": true|false}`,
				PreviousReply: `{"Task": "Read the beam current"}`}}},
		{"classifier_format_error", prompts.Classifier, prompts.ClassifierData{Task: "What is the beam current?", Capability: cc,
			FormatRetry: prompts.FormatRetry{FormatError: "the reply contains no JSON object", ExpectedShape: `{"is_match": true} or {"is_match": false}`,
				PreviousReply: "Yes, it is needed."}}},
		{"classifier_batched_format_error", prompts.ClassifierBatched, prompts.ClassifierBatchedData{Task: "What is the beam current?",
			Capabilities: []prompts.ClassifierCapability{cc},
			FormatRetry:  prompts.FormatRetry{FormatError: `the reply has no "capabilities" list`, ExpectedShape: `{"capabilities": ["<capability name>", ...]}`, PreviousReply: `{}`}}},
		{"response", prompts.Response, prompts.ResponseData{Task: "What is the beam current?",
			Context: []prompts.ContextItem{{Type: "CHANNEL_VALUES", Key: "bc", TaskObjective: "Read the beam current", Summary: "SR:DCCT:CURRENT = 500.2 mA"}},
			Notes:   []prompts.StepNote{{Capability: "channel_read", Note: "succeeded after 2 attempts (recovered from a transient failure)"}}}},
		{"response_history", prompts.Response, prompts.ResponseData{Task: "and its history over the last hour?", History: hist,
			Context:        []prompts.ContextItem{{Type: "ARCHIVER_DATA", Key: "bc_hist", TaskObjective: "Retrieve the beam current history", Summary: "mean 500.5 mA", Turn: 2}},
			EarlierContext: []prompts.ContextItem{{Type: "CHANNEL_ADDRESSES", Key: "bc_channels", TaskObjective: "Find the beam current channel", Summary: "SR:DCCT:CURRENT", Turn: 1}}}},
		{"response_conversational", prompts.Response, prompts.ResponseData{Task: "hello", Conversational: true, History: hist,
			CapabilityOverview: "• channel_read: Read live values."}},
		{"clarify", prompts.Clarify, prompts.ClarifyData{Task: "show the vacuum", Reason: "which sector", CapabilityOverview: "• channel_read: Read live values."}},
		{"approval", prompts.Approval, prompts.ApprovalData{Kind: "step", Summary: "set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A"}},
		{"approval_plan", prompts.Approval, prompts.ApprovalData{Kind: "plan", Summary: "Approve this plan of 2 steps before any of them runs?\n1. channel_write — set Q1"}},
		{"error", prompts.ErrorExplanation, prompts.ErrorData{Task: "What is the beam current?", Report: "Failed operation: step 1: read the beam current\nSeverity: retriable", CapabilityOverview: "• channel_read: Read live values."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if prompts.TurnOf(tt.template) == "" {
				got, err := set.Render(tt.template, tt.data)
				if err != nil {
					t.Fatal(err)
				}
				golden(t, tt.name, got)
				return
			}
			p, err := set.RenderPrompt(tt.template, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, p.System+userMessageMark+p.Turn)
		})
	}
}

// userMessageMark separates a golden prompt's system message from its user
// message.
const userMessageMark = "\n\n=== user message ===\n"

// A role's system prompt holds nothing of the turn: rendered for two
// different turns — another task, chat, results, failure — it is the same
// bytes, so a provider's prompt cache serves it; the turn's content is all
// in the user message.
func TestSystemPromptsHoldNothingOfTheTurn(t *testing.T) {
	set := prompts.Default()
	hist := []prompts.HistoryMessage{{Role: "user", Content: "What is the beam current?"}, {Role: "assistant", Content: "500 mA."}}
	cc := []prompts.ClassifierCapability{{Name: "channel_read", Description: "Read live values.", Instructions: guide().Instructions, Examples: prompts.ShuffledExamples(guide(), 1)}}
	pcs := prompts.PlannerCapabilities(caps(t))
	turns := map[string][2]any{
		prompts.TaskExtraction: {prompts.TaskExtractionData{Message: "What is the beam current?"},
			prompts.TaskExtractionData{History: hist, Message: "and the lifetime?", FormatRetry: prompts.FormatRetry{FormatError: "no JSON", ExpectedShape: "{}", PreviousReply: "hm"}}},
		prompts.TaskSelection: {prompts.TaskSelectionData{Capabilities: cc, Message: "What is the beam current?"},
			prompts.TaskSelectionData{Capabilities: cc, History: hist, Message: "and the lifetime?"}},
		prompts.Classifier: {prompts.ClassifierData{Task: "beam current", Capability: cc[0]},
			prompts.ClassifierData{Task: "dump the beam", Capability: cc[0], PreviousFailure: "beam_dump is not available"}},
		prompts.ClassifierBatched: {prompts.ClassifierBatchedData{Task: "beam current", Capabilities: cc},
			prompts.ClassifierBatchedData{Task: "dump the beam", Capabilities: cc, PreviousFailure: "beam_dump is not available"}},
		prompts.Orchestrator: {prompts.OrchestratorData{Task: "Read the beam current", Capabilities: pcs},
			prompts.OrchestratorData{Task: "Set Q1 to 105 A", Capabilities: pcs, DependsOnHistory: true, History: hist, Intent: "change: Q1 to 105 A",
				AvailableContext: []prompts.ContextItem{{Type: "CHANNEL_ADDRESSES", Key: "q1", Summary: "BTS:Q1", Turn: 1}}, ReplanReason: "no channel", FailedStep: "1"}},
		prompts.Response: {prompts.ResponseData{Task: "beam current?", Context: []prompts.ContextItem{{Type: "V", Key: "v", Summary: "500 mA"}}},
			prompts.ResponseData{Task: "and its history?", History: hist, Notes: []prompts.StepNote{{Capability: "x", Note: "failed"}},
				EarlierContext: []prompts.ContextItem{{Type: "A", Key: "a", Summary: "SR:DCCT"}}}},
		prompts.Clarify: {prompts.ClarifyData{Task: "show the vacuum", CapabilityOverview: "• channel_read"},
			prompts.ClarifyData{Task: "plot it", History: hist, Reason: "which sector", CapabilityOverview: "• channel_read"}},
	}
	for name, pair := range turns {
		a, err := set.RenderPrompt(name, pair[0])
		if err != nil {
			t.Fatal(err)
		}
		b, err := set.RenderPrompt(name, pair[1])
		if err != nil {
			t.Fatal(err)
		}
		if a.System != b.System {
			t.Errorf("%s: the system prompt changes with the turn:\n%s\n---\n%s", name, a.System, b.System)
		}
		if a.Turn == b.Turn {
			t.Errorf("%s: the turn's message does not change with the turn: %q", name, a.Turn)
		}
	}
}

func TestExamplesShuffledBySeed(t *testing.T) {
	a, b := prompts.ShuffledExamples(guide(), 1), prompts.ShuffledExamples(guide(), 1)
	if !slices.Equal(a, b) {
		t.Error("the same seed must give the same order")
	}
	differs := false
	for seed := uint64(2); seed < 20; seed++ {
		if !slices.Equal(a, prompts.ShuffledExamples(guide(), seed)) {
			differs = true
		}
	}
	if !differs {
		t.Error("different seeds never change the order")
	}
	if len(a) != 3 || prompts.ShuffledExamples(nil, 1) != nil {
		t.Errorf("examples %v", a)
	}
}

func TestPlannerCapabilitiesSortedByPriorityAndNumbered(t *testing.T) {
	pcs := prompts.PlannerCapabilities(caps(t))
	var names []string
	for _, pc := range pcs {
		names = append(names, pc.Name)
	}
	if !slices.Equal(names, []string{"archiver_retrieval", "channel_finding", "channel_read"}) {
		t.Errorf("order %v: priority 0 (no guide) first, then 1, then 2", names)
	}
	if ex := pcs[1].Examples; len(ex) != 2 || ex[0].Number != 1 || ex[1].Number != 2 {
		t.Errorf("examples %+v", ex)
	}
}

func TestOverrides(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "clarify.tmpl"), []byte("DIR {{.Task}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := prompts.New(prompts.Config{Dir: dir, Overrides: map[string]string{"error": "GO {{.Task}}"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := set.Render(prompts.Clarify, prompts.ClarifyData{Task: "t"}); got != "DIR t" {
		t.Errorf("dir override: %q", got)
	}
	if got, _ := set.Render(prompts.ErrorExplanation, prompts.ErrorData{Task: "t"}); got != "GO t" {
		t.Errorf("Go override: %q", got)
	}
	if got, _ := set.Render(prompts.TaskExtraction, prompts.TaskExtractionData{Message: "m"}); !strings.Contains(got, "self-contained task") {
		t.Errorf("defaults must remain: %q", got)
	}
}

func TestTemplateErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  prompts.Config
		want string
	}{
		{"unknown name", prompts.Config{Overrides: map[string]string{"planner": "x"}}, `"planner"`},
		{"bad syntax", prompts.Config{Overrides: map[string]string{"respond": "x"}}, `"respond"`},
		{"parse error", prompts.Config{Overrides: map[string]string{"response": "{{.Task"}}, `"response"`},
		{"missing dir", prompts.Config{Dir: "/nonexistent/prompts"}, "override directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := prompts.New(tt.cfg)
			if !errors.Is(err, prompts.ErrTemplate) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrTemplate naming %s", err, tt.want)
			}
		})
	}
	set := prompts.Default()
	if _, err := set.Render("nope", nil); !errors.Is(err, prompts.ErrTemplate) {
		t.Errorf("unknown template: %v", err)
	}
	if _, err := set.Render(prompts.Response, struct{ X int }{}); !errors.Is(err, prompts.ErrTemplate) {
		t.Errorf("wrong data: %v", err)
	}
}
