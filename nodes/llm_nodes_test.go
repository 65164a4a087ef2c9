package nodes

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/state"
)

func llmCfg(reg *capabilities.Registry, m *llmtest.Model) Config {
	c := cfgFor(reg)
	c.Models = m
	return c
}

// withTask returns a state whose task is extracted.
func withTask(task string, active ...string) state.State {
	s := newState(task)
	s.Turn.Task = &state.Task{Text: task}
	s.Turn.ActiveCapabilities = active
	return s
}

func classification(t *testing.T, n interface {
	ClassifyError(error, capabilities.ErrorContext) capabilities.Classification
}, err error) capabilities.Classification {
	t.Helper()
	if err == nil {
		t.Fatal("expected an error")
	}
	return n.ClassifyError(err, capabilities.ErrorContext{})
}

func TestTaskExtractionWithModel(t *testing.T) {
	reg := controlRoom(t)
	m := llmtest.New().Script(llm.RoleTaskExtraction,
		llmtest.Text("Sure:\n```json\n{\"task\": \"Read the RF voltage of cavity 2\", \"depends_on_chat_history\": true}\n```"),
		llmtest.Text("I think the task is to read it."))
	n, _ := NewTaskExtraction(llmCfg(reg, m))
	s, payloads, err := runNode(t, n, newState("and cavity 2?", "What is the RF voltage of cavity 1?", "400 kV"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Turn.Task.Text != "Read the RF voltage of cavity 2" || !s.Turn.Task.DependsOnHistory {
		t.Errorf("task = %+v", s.Turn.Task)
	}
	if s.Turn.Control.TokensByRole["task_extraction"] == 0 {
		t.Error("token use must be counted by role")
	}
	if got := payloadsOf[TaskExtracted](payloads); len(got) != 1 || got[0].Offline {
		t.Errorf("TaskExtracted payloads %v", got)
	}
	if p := m.Calls()[0].Prompt(); !strings.Contains(p, "What is the RF voltage of cavity 1?") || !strings.Contains(p, "and cavity 2?") {
		t.Errorf("prompt lacks the history:\n%s", p)
	}
	_, _, err = runNode(t, n, newState("x"))
	if c := classification(t, n, err); c.Severity != capabilities.Retriable || c.Kind != capabilities.KindFormat || !errors.Is(err, ErrFormat) {
		t.Errorf("prose reply: %s/%s %v", c.Severity, c.Kind, err)
	}
}

func TestSkipTaskExtractionMakesNoCall(t *testing.T) {
	m := llmtest.New()
	n, _ := NewTaskExtraction(llmCfg(controlRoom(t), m))
	s := newState("What is the beam current?")
	s.Turn.Options.SkipTaskExtraction = true
	out, _, err := runNode(t, n, s)
	if err != nil || out.Turn.Task.Text != "What is the beam current?" || m.Count() != 0 {
		t.Errorf("task %+v err %v calls %d", out.Turn.Task, err, m.Count())
	}
}

func TestClassifierBatchedSelectsAndExpandsDependencies(t *testing.T) {
	reg := controlRoom(t)
	m := llmtest.New().Script(llm.RoleClassifier, llmtest.Text(`{"capabilities": ["channel_read", "made_up"]}`))
	n, _ := NewClassifier(llmCfg(reg, m))
	s, payloads, err := runNode(t, n, withTask("What is the beam current?"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"channel_finding", "channel_read", "respond", "clarify"}
	if !slices.Equal(s.Turn.ActiveCapabilities, want) {
		t.Errorf("active = %v, want %v", s.Turn.ActiveCapabilities, want)
	}
	sel := payloadsOf[CapabilitiesSelected](payloads)
	if len(sel) != 1 || !slices.Equal(sel[0].Added, []string{"channel_finding"}) {
		t.Errorf("selected payload %+v", sel)
	}
	if ns := payloadsOf[NotSelected](payloads); len(ns) != 1 || ns[0].Capability != "made_up" {
		t.Errorf("a hallucinated name must be reported: %+v", ns)
	}
	if m.Count() != 1 {
		t.Errorf("batched mode made %d calls", m.Count())
	}
}

func TestClassifierPerCapabilityFailedCallMeansNotSelected(t *testing.T) {
	reg := controlRoom(t)
	m := llmtest.New().
		On(llmtest.PromptContains("Capability: channel_read"), func(llm.Request) llmtest.Reply { return llmtest.Text(`{"is_match": true}`) }).
		On(llmtest.PromptContains("Capability: archiver_retrieval"), func(llm.Request) llmtest.Reply {
			return llmtest.Fail(&llm.Error{Kind: llm.ErrServer, Role: llm.RoleClassifier, StatusCode: 503})
		}).
		On(llmtest.RoleIs(llm.RoleClassifier), func(llm.Request) llmtest.Reply { return llmtest.Text(`{"is_match": false}`) })
	cfg := llmCfg(reg, m)
	cfg.ClassifierMode = PerCapability
	n, _ := NewClassifier(cfg)
	s, payloads, err := runNode(t, n, withTask("What is the beam current?"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Turn.ActiveCapabilities, []string{"channel_finding", "channel_read", "respond", "clarify"}) {
		t.Errorf("active = %v", s.Turn.ActiveCapabilities)
	}
	ns := payloadsOf[NotSelected](payloads)
	if len(ns) != 1 || ns[0].Capability != "archiver_retrieval" || !strings.Contains(ns[0].Err, "503") {
		t.Errorf("NotSelected = %+v", ns)
	}
	if m.Count() != 4 {
		t.Errorf("per-capability mode made %d calls, want one per capability (4)", m.Count())
	}
}

func TestClassifierPerCapabilityRejectedKeyFailsTheNode(t *testing.T) {
	reg := controlRoom(t)
	m := llmtest.New().On(llmtest.RoleIs(llm.RoleClassifier), func(llm.Request) llmtest.Reply {
		return llmtest.Fail(&llm.Error{Kind: llm.ErrAuth, Role: llm.RoleClassifier, StatusCode: 401, APIKeyEnv: "OPENAI_API_KEY"})
	})
	cfg := llmCfg(reg, m)
	cfg.ClassifierMode = PerCapability
	n, _ := NewClassifier(cfg)
	_, _, err := runNode(t, n, withTask("What is the beam current?"))
	c := classification(t, n, err)
	if c.Severity != capabilities.Critical || !strings.Contains(c.UserMessage, "the API key for role classifier was rejected") {
		t.Errorf("classification %+v", c)
	}
	if !strings.Contains(fmt.Sprint(c.Metadata[capabilities.MetaSuggestions]), "OPENAI_API_KEY") {
		t.Errorf("the suggestion should name the variable: %v", c.Metadata)
	}
}

func TestClassifierRateLimitIsRetriableWithServerDelay(t *testing.T) {
	m := llmtest.New().Script(llm.RoleClassifier, llmtest.Fail(&llm.Error{Kind: llm.ErrRateLimited, Role: llm.RoleClassifier, StatusCode: 429, Delay: 7 * time.Second}))
	n, _ := NewClassifier(llmCfg(controlRoom(t), m))
	_, _, err := runNode(t, n, withTask("What is the beam current?"))
	c := classification(t, n, err)
	if c.Severity != capabilities.Retriable || c.Kind != capabilities.KindRateLimit || c.RetryAfter.D() != 7*time.Second {
		t.Errorf("classification %+v", c)
	}
	var le *llm.Error
	if !errors.As(err, &le) || le.HTTPStatus() != 429 {
		t.Errorf("the *llm.Error must stay reachable: %v", err)
	}
}

func TestReclassificationPromptSaysWhyAndCounts(t *testing.T) {
	m := llmtest.New().Script(llm.RoleClassifier, llmtest.Text(`{"capabilities": ["channel_read"]}`))
	n, _ := NewClassifier(llmCfg(controlRoom(t), m))
	s := withTask("What is the beam current?")
	s.Turn.Control.Error = &state.ErrorInfo{Node: state.NodeOrchestrator, StepIndex: -1, Classification: capabilities.Classification{
		Severity: capabilities.Reclassification, Metadata: map[string]any{capabilities.MetaReclassificationReason: "the plan needed beam_dump, which is not available"}}}
	out, _, err := runNode(t, n, s)
	if err != nil {
		t.Fatal(err)
	}
	if p := m.Calls()[0].Prompt(); !strings.Contains(p, "Previous approach failed: the plan needed beam_dump") {
		t.Errorf("prompt lacks the reason:\n%s", p)
	}
	if out.Turn.Control.Reclassifications != 1 || out.Turn.Control.Error != nil || out.Turn.Control.ReclassificationReason == "" {
		t.Errorf("control %+v", out.Turn.Control)
	}
}

func TestClassifierBypassActivatesAll(t *testing.T) {
	m := llmtest.New()
	n, _ := NewClassifier(llmCfg(controlRoom(t), m))
	s := withTask("anything")
	s.Turn.Options.SkipClassification = true
	out, _, err := runNode(t, n, s)
	if err != nil || len(out.Turn.ActiveCapabilities) != 6 || m.Count() != 0 {
		t.Errorf("active %v err %v calls %d", out.Turn.ActiveCapabilities, err, m.Count())
	}
}

const goodPlan = `Here is the plan:
` + "```json" + `
{"steps": [
 {"context_key": "bc_channels", "capability": "channel_finding", "task_objective": "Find the beam current channel", "success_criteria": "a channel", "expected_output": "CHANNEL_ADDRESSES", "parameters": {}, "inputs": []},
 {"context_key": "bc_value", "capability": "channel_read", "task_objective": "Read it", "success_criteria": "a value", "expected_output": "CHANNEL_VALUES", "parameters": {}, "inputs": [{"CHANNEL_ADDRESSES": "bc_channels"}]},
 {"context_key": "rf_channels", "capability": "channel_finding", "task_objective": "Find the RF channels", "success_criteria": "channels", "expected_output": "CHANNEL_ADDRESSES", "parameters": {}, "inputs": []}
]}
` + "```" + `
Let me know if you need more.`

func TestOrchestratorMalformedPlanThenGoodOne(t *testing.T) {
	reg := controlRoom(t)
	m := llmtest.New().Script(llm.RoleOrchestrator, llmtest.Text(`{"steps": [{"context_key": "a", "Capability": "channel_read"}]}`), llmtest.Text(goodPlan))
	n, _ := NewOrchestrator(llmCfg(reg, m))
	s := withTask("beam current and RF channels", "channel_finding", "channel_read", "respond", "clarify")
	_, _, err := runNode(t, n, s)
	c := classification(t, n, err)
	if c.Severity != capabilities.Retriable || c.Kind != capabilities.KindFormat {
		t.Fatalf("classification %+v", c)
	}
	parseErr := c.Metadata[MetaParseError].(string)
	if !strings.Contains(parseErr, `"Capability"`) || !strings.Contains(parseErr, "case-sensitive") {
		t.Errorf("parse error %q should name the miscased key", parseErr)
	}
	// The wrapper records the failure; the next attempt shows it to the model.
	s.Turn.Control.Error = &state.ErrorInfo{Node: state.NodeOrchestrator, StepIndex: -1, Classification: c, Message: err.Error()}
	out, payloads, err := runNode(t, n, s)
	if err != nil {
		t.Fatal(err)
	}
	p := m.Calls()[1].Prompt()
	for _, want := range []string{"Your previous reply could not be used", parseErr, `"Capability": "channel_read"`, "TASK TO PLAN: beam current and RF channels"} {
		if !strings.Contains(p, want) {
			t.Errorf("re-prompt lacks %q", want)
		}
	}
	plan := out.Turn.Plan
	if got := planCaps(plan); !slices.Equal(got, []string{"channel_finding", "channel_read", "channel_finding", "respond"}) {
		t.Fatalf("plan %v: respond must be appended", got)
	}
	if !slices.Equal(plan.Steps[1].DependsOn, []int{0}) || len(plan.Steps[2].DependsOn) != 0 || plan.Number != 1 || out.Turn.Control.PlansCreated != 1 {
		t.Errorf("dependencies %v %v, number %d", plan.Steps[1].DependsOn, plan.Steps[2].DependsOn, plan.Number)
	}
	if out.Turn.Control.Error != nil || len(payloadsOf[PlanMade](payloads)) != 1 {
		t.Error("a successful plan clears the error and is announced")
	}
}

func TestOrchestratorPlanErrors(t *testing.T) {
	reg := controlRoom(t)
	stored := capabilities.ContextStore{}.Put(capabilities.ContextEntry{Type: "CHANNEL_ADDRESSES", Key: "old_channels", Turn: 1, TaskObjective: "find the vacuum channels"})
	tests := []struct {
		name     string
		reply    string
		severity capabilities.Severity
		kind     error
		want     []string
	}{
		{"hallucinated capability", `{"steps": [{"context_key": "x", "capability": "beam_dump", "task_objective": "dump"}]}`,
			capabilities.Reclassification, ErrUnknownCapability, []string{"beam_dump", "not registered"}},
		{"forward input key", `{"steps": [
			{"context_key": "v", "capability": "channel_read", "task_objective": "read", "inputs": [{"CHANNEL_ADDRESSES": "ch"}]},
			{"context_key": "ch", "capability": "channel_finding", "task_objective": "find", "expected_output": "CHANNEL_ADDRESSES"}]}`,
			capabilities.Replanning, ErrInvalidInputKey, []string{"produced by step 2", "old_channels"}},
		{"unknown input key", `{"steps": [{"context_key": "v", "capability": "channel_read", "task_objective": "read", "inputs": [{"CHANNEL_ADDRESSES": "nope"}]}]}`,
			capabilities.Replanning, ErrInvalidInputKey, []string{`"nope"`, "does not exist", `{"CHANNEL_ADDRESSES": "old_channels"}`}},
		{"input of the wrong type", `{"steps": [
			{"context_key": "ch", "capability": "channel_finding", "task_objective": "find"},
			{"context_key": "v", "capability": "channel_read", "task_objective": "read", "inputs": [{"CHANNEL_VALUES": "ch"}]}]}`,
			capabilities.Replanning, ErrInvalidInputKey, []string{"names step 1 (channel_finding), which provides CHANNEL_ADDRESSES, not CHANNEL_VALUES"}},
		{"terminal step in the middle", `{"steps": [{"context_key": "r", "capability": "respond", "task_objective": "x"}, {"context_key": "v", "capability": "channel_finding", "task_objective": "find"}]}`,
			capabilities.Retriable, ErrFormat, []string{"only be the last step"}},
		{"not JSON", `I cannot plan this.`, capabilities.Retriable, ErrFormat, []string{"no JSON object"}},
		{"wrong type", `{"steps": [{"context_key": "v", "capability": "channel_read", "inputs": "ch"}]}`, capabilities.Retriable, ErrFormat, []string{`"inputs"`}},
		{"unknown top-level key", `{"plan": []}`, capabilities.Retriable, ErrFormat, []string{`"plan"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := llmtest.New().Script(llm.RoleOrchestrator, llmtest.Text(tt.reply))
			n, _ := NewOrchestrator(llmCfg(reg, m))
			s := withTask("read things", "channel_finding", "channel_read", "respond", "clarify")
			s.Context = stored
			_, _, err := runNode(t, n, s)
			c := classification(t, n, err)
			if c.Severity != tt.severity || !errors.Is(err, tt.kind) {
				t.Fatalf("got %s %v, want %s %v", c.Severity, err, tt.severity, tt.kind)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestOrchestratorEmptyPlanAndContextReuse(t *testing.T) {
	reg := controlRoom(t)
	m := llmtest.New().Script(llm.RoleOrchestrator, llmtest.Text(`{"steps": []}`),
		llmtest.Text(`{"steps": [{"context_key": "v", "capability": "channel_read", "task_objective": "read", "inputs": [{"CHANNEL_ADDRESSES": "old_channels"}]}, {"context_key": "ans", "capability": "respond", "task_objective": "answer"}]}`))
	n, _ := NewOrchestrator(llmCfg(reg, m))
	s := withTask("hi", "respond", "clarify")
	out, _, err := runNode(t, n, s)
	if err != nil || !slices.Equal(planCaps(out.Turn.Plan), []string{"respond"}) {
		t.Fatalf("empty plan: %v %v", planCaps(out.Turn.Plan), err)
	}
	s = withTask("read them again", "channel_read", "respond", "clarify")
	s.Turn.Number = 2
	s.Context = capabilities.ContextStore{}.Put(capabilities.ContextEntry{Type: "CHANNEL_ADDRESSES", Key: "old_channels", Turn: 1, TaskObjective: "find the vacuum channels", Summary: "3 gauges"})
	out, _, err = runNode(t, n, s)
	if err != nil {
		t.Fatal(err)
	}
	if p := m.Calls()[1].Prompt(); !strings.Contains(p, `{"CHANNEL_ADDRESSES": "old_channels"} (turn 1): find the vacuum channels — 3 gauges`) {
		t.Errorf("prompt lacks the available context:\n%s", p)
	}
	if got := planCaps(out.Turn.Plan); !slices.Equal(got, []string{"channel_read", "respond"}) || len(out.Turn.Plan.Steps[0].DependsOn) != 0 {
		t.Errorf("plan %v", got)
	}
}

func TestReplanningPromptCarriesFailedStepClassification(t *testing.T) {
	reg := controlRoom(t)
	m := llmtest.New().Script(llm.RoleOrchestrator, llmtest.Text(`{"steps": [{"context_key": "c", "capability": "channel_finding", "task_objective": "find again"}]}`))
	n, _ := NewOrchestrator(llmCfg(reg, m))
	s := withTask("beam current", "channel_finding", "channel_read", "respond", "clarify")
	s.Turn.Plan = &state.Plan{Number: 1, Steps: toPlanSteps([]capabilities.PlannedStep{
		{ContextKey: "c", Capability: "channel_finding", TaskObjective: "find the beam current channel"}, respondStep("beam current")})}
	s.Turn.Control.PlansCreated = 1
	s.Turn.Control.Error = &state.ErrorInfo{Node: "channel_finding", Capability: "channel_finding", StepIndex: 0, Message: "no channel matches",
		Classification: capabilities.Classification{Severity: capabilities.Replanning, UserMessage: "no channel matches \"beam curent\"",
			Metadata: map[string]any{capabilities.MetaReplanningReason: "the description matched nothing"}}}
	out, _, err := runNode(t, n, s)
	if err != nil {
		t.Fatal(err)
	}
	p := m.Calls()[0].Prompt()
	for _, want := range []string{"REPLANNING", `step 1 (channel_finding, "find the beam current channel")`, "**Severity:** replanning", "the description matched nothing"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	if out.Turn.Plan.Number != 2 || out.Turn.Control.PlansCreated != 2 {
		t.Errorf("plan number %d, plans %d", out.Turn.Plan.Number, out.Turn.Control.PlansCreated)
	}
}

func TestRespondStreamsAndMentionsRecoveryAndFallbacks(t *testing.T) {
	reg := controlRoom(t)
	m := llmtest.New().Script(llm.RoleResponse, llmtest.Stream("The beam current ", "is 500.2 mA."))
	n, _ := NewRespond(llmCfg(reg, m))
	s := withTask("What is the beam current?", "channel_finding", "channel_read", "respond", "clarify")
	s.Turn.Plan = &state.Plan{Number: 1, Steps: toPlanSteps([]capabilities.PlannedStep{
		{ContextKey: "ch", Capability: "channel_finding", ExpectedOutput: "CHANNEL_ADDRESSES"},
		{ContextKey: "val", Capability: "channel_read", ExpectedOutput: "CHANNEL_VALUES"}, respondStep("x")})}
	s = execute(t, s, func(st capabilities.PlannedStep) string { return "summary of " + st.ContextKey })
	s.Turn.Plan.Steps[0].Fallback = "channel_finding_backup"
	s.Turn.Plan.Steps[1].Recovered = true
	s.Turn.Plan.Steps[1].Attempts = 3
	out, payloads, err := runNode(t, n, s)
	if err != nil {
		t.Fatal(err)
	}
	var streamed []string
	for _, tok := range payloadsOf[Token](payloads) {
		streamed = append(streamed, tok.Text)
	}
	if strings.Join(streamed, "|") != "The beam current |is 500.2 mA." {
		t.Errorf("tokens %q", streamed)
	}
	msg, _ := out.LastAssistant()
	if msg.Content != "The beam current is 500.2 mA." || !out.Turn.Done || out.Turn.Plan.Steps[2].Status != state.StepDone {
		t.Errorf("message %q done %v", msg.Content, out.Turn.Done)
	}
	p := m.Calls()[0].Prompt()
	for _, want := range []string{"summary of ch", "summary of val", "fallback channel_finding_backup", "succeeded after 3 attempts"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
}

func TestRespondConversationalAndFailure(t *testing.T) {
	reg := controlRoom(t)
	m := llmtest.New().Script(llm.RoleResponse, llmtest.Text("Hello! I can read channels."),
		llmtest.Fail(&llm.Error{Kind: llm.ErrContextLength, Role: llm.RoleResponse, StatusCode: 400}))
	n, _ := NewRespond(llmCfg(reg, m))
	out, _, err := runNode(t, n, withTask("hello", "respond", "clarify"))
	if err != nil {
		t.Fatal(err)
	}
	if p := m.Calls()[0].Prompt(); !strings.Contains(p, "No tool ran") || !strings.Contains(p, "• channel_read:") {
		t.Errorf("conversational prompt lacks the capability overview:\n%s", p)
	}
	if msg, _ := out.LastAssistant(); msg.Content != "Hello! I can read channels." {
		t.Errorf("message %q", msg.Content)
	}
	_, _, err = runNode(t, n, withTask("hello", "respond", "clarify"))
	c := classification(t, n, err)
	if !errors.Is(err, capabilities.ErrResourceExhausted) || c.Kind != capabilities.KindResourceExhausted {
		t.Errorf("context length: %+v %v", c, err)
	}
}

func TestClarifyQuestions(t *testing.T) {
	reg := controlRoom(t)
	tests := []struct {
		name  string
		reply string
		want  int
		err   bool
	}{
		{"two", "1. Which sector?\n2) Which time range?", 2, false},
		{"five capped to four", "1. a?\n2. b?\n3. c?\n4. d?\n5. e?", 4, false},
		{"bullets", "Some questions:\n- Which sector?", 1, false},
		{"none", "I am not sure.", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := llmtest.New().Script(llm.RoleResponse, llmtest.Text(tt.reply))
			n, _ := NewClarify(llmCfg(reg, m))
			out, _, err := runNode(t, n, withTask("show the vacuum", "respond", "clarify"))
			if tt.err {
				if c := classification(t, n, err); c.Kind != capabilities.KindFormat {
					t.Errorf("classification %+v", c)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := out.LastAssistant()
			if got := parseQuestions(msg.Content); len(got) != tt.want || msg.Kind != state.KindClarification || !strings.HasPrefix(msg.Content, "1. ") {
				t.Errorf("message %q", msg.Content)
			}
		})
	}
}

func TestUnreachableWithOfflineFallbackAnswersOffline(t *testing.T) {
	reg := controlRoom(t)
	unreachable := &llm.Error{Kind: llm.ErrUnreachable, Role: llm.RoleClassifier}
	m := llmtest.New().On(llmtest.RoleIs(llm.RoleClassifier), func(llm.Request) llmtest.Reply { return llmtest.Fail(unreachable) })
	cfg := llmCfg(reg, m)
	cfg.Models = llm.WithOfflineFallback(m)
	n, _ := NewClassifier(cfg)
	out, payloads, err := runNode(t, n, withTask("What is the beam current?"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(out.Turn.ActiveCapabilities, "channel_read") || len(payloadsOf[OfflineFallback](payloads)) != 1 {
		t.Errorf("active %v payloads %v", out.Turn.ActiveCapabilities, payloads)
	}
	// Without the fallback the same failure is a retriable error.
	cfg.Models = m
	n, _ = NewClassifier(cfg)
	_, _, err = runNode(t, n, withTask("What is the beam current?"))
	if c := classification(t, n, err); c.Severity != capabilities.Retriable || c.Kind != capabilities.KindConnection {
		t.Errorf("classification %+v", c)
	}
}
