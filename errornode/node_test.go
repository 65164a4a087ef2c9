package errornode_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/errornode"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/state"
)

var (
	start = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	now   = start.Add(12500 * time.Millisecond)
	rc    = router.Config{Capabilities: []string{"read_pv", "find_channels"}}
)

func clock() time.Time { return now }

// failedTurn: step 1 done, step 2 failed three times with a timeout.
func failedTurn() state.State {
	e := &state.ErrorInfo{Node: "read_pv", Capability: "read_pv", StepIndex: 1, Attempt: 3, Message: "read: i/o timeout",
		Classification: capabilities.Classification{Severity: capabilities.Retriable, Kind: capabilities.KindTimeout, UserMessage: "the operation timed out",
			Metadata: map[string]any{capabilities.MetaTechnicalDetails: "read: i/o timeout"}},
		Policy: capabilities.RetryPolicy{MaxAttempts: 3}, Retry: false}
	steps := []state.PlanStep{
		{PlannedStep: capabilities.PlannedStep{Capability: "find_channels", TaskObjective: "find the beam current channel"}, Status: state.StepDone, Attempts: 1},
		{PlannedStep: capabilities.PlannedStep{Capability: "read_pv", TaskObjective: "read the beam current"}, Status: state.StepFailed, Attempts: 3, Error: e},
		{PlannedStep: capabilities.PlannedStep{Capability: "respond", TaskObjective: "answer"}, Status: state.StepPending},
	}
	return state.State{
		Messages: []state.Message{{Role: state.RoleUser, Content: "beam current?", Turn: 1}},
		Turn: state.Turn{Number: 1, StartedAt: start, Input: "beam current?", Task: &state.Task{Text: "Read the storage ring beam current"},
			ActiveCapabilities: []string{"read_pv"}, Plan: &state.Plan{Number: 1, Steps: steps},
			Control: state.Control{Error: e, PlansCreated: 1, NodeSteps: 7}},
	}
}

func TestReport(t *testing.T) {
	r := errornode.BuildReport(failedTurn(), rc, now)
	md := r.Markdown()
	for _, want := range []string{
		"⚠️ **ERROR REPORT** - 2026-03-01T09:00:12Z",
		"**Error Severity:** RETRIABLE",
		"**Task:** Read the storage ring beam current",
		"**Failed Operation:** step 2: read the beam current",
		"**Capability:** read_pv",
		"**Limit Exceeded:** max_attempts",
		"- **User Message:** the operation timed out",
		"- **Technical Details:** read: i/o timeout",
		"**Execution Stats:** Total operations: 7, Execution time: 12.5s, Retry attempts: 2",
		"✅ Step 1: find the beam current channel",
		"❌ Step 2: read the beam current",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if r.Cause != router.CauseRetriesExhausted {
		t.Fatalf("cause %s", r.Cause)
	}
}

func TestReportForLimitsWithoutError(t *testing.T) {
	s := failedTurn()
	s.Turn.Control.Error = nil
	s.Turn.Plan.Steps[1].Status, s.Turn.Plan.Steps[1].Error = state.StepPending, nil
	s.Turn.Control.LimitExceeded = router.LimitExecutionTime
	r := errornode.BuildReport(s, rc, now)
	if r.Limit != router.LimitExecutionTime || r.Severity != capabilities.Critical || !strings.Contains(r.Classification.UserMessage, "ran out of time") {
		t.Fatalf("%+v", r)
	}
	if !strings.Contains(r.Explain(), "max_execution_time") {
		t.Fatalf("explanation %q", r.Explain())
	}
}

func run(t *testing.T, models llm.Models, s state.State) state.Update {
	t.Helper()
	n, err := errornode.New(errornode.Config{Models: models, Overview: "• read_pv: Read a channel", Router: rc, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	u, err := n.Run(context.Background(), s)
	if err != nil {
		t.Fatalf("the error node returned an error: %v", err)
	}
	if u.Turn == nil || !u.Turn.Done || len(u.Messages) != 1 || u.Messages[0].Kind != state.KindErrorReport || u.Messages[0].Role != state.RoleAssistant {
		t.Fatalf("update %+v", u)
	}
	return u
}

func TestExplanationByTheModel(t *testing.T) {
	m := llmtest.New().Script(llm.RoleError, llmtest.Reply{Text: "The beam current channel did not answer in time. Try again in a minute.", Usage: llm.Usage{PromptTokens: 80, CompletionTokens: 20}})
	u := run(t, m, failedTurn())
	c := u.Messages[0].Content
	if !strings.Contains(c, "**ERROR REPORT**") || !strings.HasSuffix(c, "**Analysis:** The beam current channel did not answer in time. Try again in a minute.") {
		t.Fatalf("content:\n%s", c)
	}
	if u.Tokens[string(llm.RoleError)] != 100 {
		t.Fatalf("tokens %v", u.Tokens)
	}
	calls := m.Calls()
	if len(calls) != 1 || !strings.Contains(calls[0].Prompt(), "read_pv: Read a channel") || !strings.Contains(calls[0].Prompt(), "2 to 3 sentences") {
		t.Fatalf("calls %+v", calls)
	}
}

func TestDeterministicExplanation(t *testing.T) {
	for name, models := range map[string]llm.Models{
		"no model":     llm.None,
		"model fails":  llmtest.New().Script(llm.RoleError, llmtest.Fail(errors.New("provider down"))),
		"empty answer": llmtest.New().Script(llm.RoleError, llmtest.Text("  ")),
	} {
		t.Run(name, func(t *testing.T) {
			c := run(t, models, failedTurn()).Messages[0].Content
			want := "**Analysis:** read_pv failed: the operation timed out. The request stopped because the operation kept failing after every allowed retry (max_attempts)."
			if !strings.Contains(c, want) {
				t.Fatalf("content:\n%s", c)
			}
		})
	}
}

type panicModels struct{}

func (panicModels) For(llm.Role) (llm.Model, bool) { panic("models broken") }

func TestErrorWhileHandlingAnError(t *testing.T) {
	c := run(t, panicModels{}, failedTurn()).Messages[0].Content
	for _, want := range []string{"System Error During Error Handling", "read_pv failed: read: i/o timeout", "models broken"} {
		if !strings.Contains(c, want) {
			t.Fatalf("content lacks %q:\n%s", want, c)
		}
	}
}

func TestNewRejectsNegative(t *testing.T) {
	if _, err := errornode.New(errornode.Config{Timeout: -1}); err == nil {
		t.Fatal("negative timeout accepted")
	}
}
