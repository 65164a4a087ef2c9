package errornode_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
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
		Context: capabilities.ContextStore{}.Put(capabilities.ContextEntry{Type: "CHANNEL_ADDRESSES", Key: "beam", Value: []byte(`["SR:DCCT:CURRENT"]`),
			Summary: "Found SR:DCCT:CURRENT", Capability: "find_channels", TaskObjective: "find the beam current channel", Turn: 1}),
		Turn: state.Turn{Number: 1, StartedAt: start, Input: "beam current?", Task: &state.Task{Text: "Read the storage ring beam current"},
			ActiveCapabilities: []string{"read_pv"}, Plan: &state.Plan{Number: 1, Steps: steps},
			Control: state.Control{Error: e, PlansCreated: 1, NodeSteps: 7}},
	}
}

// The structured report holds what was asked, what was done, what failed
// and why, and what to do; technical facts stay in Details.
func TestReport(t *testing.T) {
	r := errornode.BuildReport(failedTurn(), rc, nil, now)
	f := r.Failure
	if r.Asked != "Read the storage ring beam current" || f.Operation != "step 2 (read the beam current)" || f.Step != 1 ||
		f.Capability != "read_pv" || f.Node != "read_pv" || f.Severity != capabilities.Retriable || f.Kind != capabilities.KindTimeout ||
		f.Reason != "the operation timed out" || f.Limit != router.LimitAttempts || f.Attempts != 3 {
		t.Errorf("failure %+v", f)
	}
	d := r.Details
	if d.Cause != string(router.CauseRetriesExhausted) || d.Error != "read: i/o timeout" || d.NodeSteps != 7 || d.RetryAttempts != 2 ||
		d.Elapsed != 12500*time.Millisecond || d.Classification.Metadata[capabilities.MetaTechnicalDetails] != "read: i/o timeout" {
		t.Errorf("details %+v", d)
	}
	want := []state.ReportStep{
		{Step: 0, Capability: "find_channels", Objective: "find the beam current channel", Status: state.StepDone, Outcome: "Found SR:DCCT:CURRENT"},
		{Step: 1, Capability: "read_pv", Objective: "read the beam current", Status: state.StepFailed, Attempts: 3, MaxAttempts: 3, Error: "the operation timed out"},
	}
	if fmt.Sprint(r.Steps) != fmt.Sprint(want) {
		t.Errorf("steps\n got %+v\nwant %+v", r.Steps, want)
	}
	if len(r.Suggestions) != 1 || r.Suggestions[0] != "Check that the system the step asks is running and not overloaded, then try again in a few minutes." {
		t.Errorf("suggestions %q", r.Suggestions)
	}
}

func TestReportForLimitsWithoutError(t *testing.T) {
	s := failedTurn()
	s.Turn.Control.Error = nil
	s.Turn.Plan.Steps[1].Status, s.Turn.Plan.Steps[1].Error = state.StepPending, nil
	s.Turn.Control.LimitExceeded = router.LimitExecutionTime
	r := errornode.BuildReport(s, rc, nil, now)
	if r.Failure.Limit != router.LimitExecutionTime || r.Failure.Severity != capabilities.Critical || !strings.Contains(r.Failure.Reason, "ran out of time") ||
		r.Failure.Operation != "the request" || r.Failure.Step != -1 {
		t.Fatalf("%+v", r.Failure)
	}
	// The explanation adds how far the request got.
	if ex := errornode.Explain(r); ex != "The request stopped because the request ran out of time (max_execution_time): by then it had taken 7 steps and used 0 model tokens in 12.5s. Nothing was changed, so asking again is safe." {
		t.Fatalf("explanation %q", ex)
	}
	if r.Steps[1].Status != state.StepPending || !strings.Contains(errornode.Markdown(r), "**Not carried out:**\n- Step 2 (read the beam current)") {
		t.Fatalf("a step that never ran is not reported as not carried out:\n%s", errornode.Markdown(r))
	}
}

// A turn that changed something and then failed says so before what
// failed, in the structured report, its Markdown and the deterministic
// explanation — also when the change was made under an earlier plan.
func TestReportNamesChangesBeforeTheFailure(t *testing.T) {
	s := failedTurn()
	set := "Set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A (readback verified)"
	s.Turn.Results = append(s.Turn.Results, state.StepResult{StepIndex: 0, Capability: "channel_write", TaskObjective: "set the quadrupole current", Success: true, Plan: 1})
	s.Context = s.Context.Put(capabilities.ContextEntry{Type: "WRITE_RESULT", Key: "w", Value: []byte(`{}`), Summary: set,
		Capability: "channel_write", TaskObjective: "set the quadrupole current", Turn: 1})
	s.Turn.Plan.Number = 2 // the write ran under plan 1; plan 2 failed
	r := errornode.BuildReport(s, rc, func(c string) bool { return c == "channel_write" }, now)
	ch := r.Changed()
	if len(ch) != 1 || ch[0].Outcome != set || ch[0].Capability != "channel_write" {
		t.Fatalf("changes %+v", ch)
	}
	md := errornode.Markdown(r)
	i, j := strings.Index(md, "**"+set+"** — a change was made"), strings.Index(md, "**What failed:**")
	if i < 0 || j < 0 || i > j {
		t.Errorf("the change is not said before the failure:\n%s", md)
	}
	if !strings.HasPrefix(r.Suggestions[0], "Check the current state of what was changed") {
		t.Errorf("suggestions %q", r.Suggestions)
	}
	if !strings.Contains(errornode.Explain(r), "Before that, 1 change was made: asking again would make it again.") {
		t.Errorf("explanation %q", errornode.Explain(r))
	}
}

// The operator's Markdown: golden files, and none of the developer
// wording it used to have.
func TestReportMarkdownGolden(t *testing.T) {
	withChange := failedTurn()
	withChange.Turn.Plan.Steps[0] = state.PlanStep{PlannedStep: capabilities.PlannedStep{Capability: "channel_write", TaskObjective: "set the quadrupole current"}, Status: state.StepDone, Attempts: 1}
	withChange.Context = capabilities.ContextStore{}.Put(capabilities.ContextEntry{Type: "WRITE_RESULT", Key: "w", Value: []byte(`{}`),
		Summary: "Set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A (readback verified)", Capability: "channel_write", TaskObjective: "set the quadrupole current", Turn: 1})
	suggested := failedTurn()
	suggested.Turn.Control.Error.Classification.Metadata = map[string]any{capabilities.MetaSuggestions: []any{"check the archiver service", "ask for the present value instead"}}
	suggested.Turn.Plan.Steps[1].Error = suggested.Turn.Control.Error
	limit := failedTurn()
	limit.Turn.Control.Error = nil
	limit.Turn.Plan.Steps[1].Status, limit.Turn.Plan.Steps[1].Error = state.StepPending, nil
	limit.Turn.Control.LimitExceeded = router.LimitTokens
	tests := []struct {
		name  string
		s     state.State
		model llm.Models
	}{
		{"retries_exhausted", failedTurn(), llm.None},
		{"change_then_failure", withChange, llm.None},
		{"suggestions_from_the_capability", suggested, llm.None},
		{"token_limit", limit, llm.None},
		{"model_explanation", failedTurn(), llmtest.New().Script(llm.RoleError, llmtest.Text("The beam current channel did not answer in time. Try again in a minute."))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := errornode.New(errornode.Config{Models: tt.model, Router: rc, Now: clock, SideEffects: func(c string) bool { return c == "channel_write" }})
			if err != nil {
				t.Fatal(err)
			}
			u, _ := n.Run(context.Background(), tt.s)
			m := u.Messages[0]
			if m.Report == nil || m.Content != errornode.Markdown(*m.Report) {
				t.Fatalf("the message content is not the Markdown of its report: %+v", m)
			}
			golden(t, "testdata/"+tt.name+".golden", m.Content)
			operator, technical, ok := strings.Cut(m.Content, "<details>\n<summary>Technical report</summary>\n\n")
			if !ok || !strings.HasSuffix(technical, "\n</details>") || !strings.Contains(operator, "\n**Analysis:** ") {
				t.Fatalf("want the operator's part with its analysis, then the folded technical report:\n%s", m.Content)
			}
			for _, dev := range []string{"Previous Execution Error", "Total operations", "Technical Details", "Suggestion: [", "ERROR REPORT", "i/o timeout", "retries_exhausted", "Try again, or rephrase"} {
				if strings.Contains(operator, dev) {
					t.Errorf("the operator's part shows developer detail %q", dev)
				}
			}
			if n := strings.Count(m.Content, m.Report.Asked); n != 1 {
				t.Errorf("what was asked is said %d times, want once", n)
			}
			// The technical report carries the seed's fields.
			for _, field := range []string{"**Error type:** ", "**Failed operation:** ", "**Execution statistics:** ",
				"**Successful steps:** ", "**Explained by:** "} {
				if !strings.Contains(technical, field) {
					t.Errorf("the technical report lacks %q", field)
				}
			}
			if tt.name != "token_limit" && (!strings.Contains(technical, "**Capability:** `read_pv`") || !strings.Contains(technical, "**Error message:** `read: i/o timeout`") || !strings.Contains(technical, "**Failed steps:** step 2 (`read_pv`), attempt 3 of 3") ||
				!strings.Contains(technical, "```json\n{\n  \"")) {
				t.Errorf("the technical report lacks the error, the failed step or the metadata as JSON:\n%s", technical)
			}
		})
	}
}

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./errornode -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update if intended):\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
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
	if r := u.Messages[0].Report; r == nil || r.ExplainedBy != state.ExplainedByModel || r.Explanation != "The beam current channel did not answer in time. Try again in a minute." ||
		!strings.Contains(c, "**Analysis:** The beam current channel did not answer in time. Try again in a minute.") {
		t.Fatalf("report %+v, content:\n%s", u.Messages[0].Report, c)
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
			m := run(t, models, failedTurn()).Messages[0]
			// It adds what the report's lines do not say: what a timeout
			// means, what recovery was tried, whether asking again is safe.
			want := "A timeout means the system did not answer within the time allowed: it is busy, stuck or down, and another wording of the request would not change that. " +
				"It was tried 3 times, the most its retry policy allows, waiting longer before each retry. Nothing was changed, so asking again is safe."
			if m.Report == nil || m.Report.Explanation != want || m.Report.ExplainedBy != state.ExplainedByRules || !strings.Contains(m.Content, "**Analysis:** "+want) {
				t.Fatalf("report %+v, content:\n%s", m.Report, m.Content)
			}
		})
	}
}

type panicModels struct{}

func (panicModels) For(llm.Role) (llm.Model, bool) { panic("models broken") }

func TestErrorWhileHandlingAnError(t *testing.T) {
	c := run(t, panicModels{}, failedTurn()).Messages[0].Content
	for _, want := range []string{"report about it could not be written", "read_pv failed: read: i/o timeout", "models broken"} {
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

// docs/error-handling.md shows the operator's Markdown; it is what the node
// writes for that turn.
func TestDocumentedReportIsWhatTheNodeWrites(t *testing.T) {
	doc, err := os.ReadFile("../docs/error-handling.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "explanation, visible, as **Analysis**:\n\n```\n")
	if !ok {
		t.Fatal("no report example in docs/error-handling.md")
	}
	wantOperator, rest, _ := strings.Cut(rest, "\n```")
	_, rest, ok = strings.Cut(rest, "metadata as a JSON block:\n\n```\n")
	if !ok {
		t.Fatal("no technical report example in docs/error-handling.md")
	}
	wantTechnical, _, _ := strings.Cut(rest, "\n```")
	s := failedTurn()
	s.Turn.Plan.Steps[0].PlannedStep = capabilities.PlannedStep{Capability: "channel_write", TaskObjective: "set the quadrupole current"}
	s.Turn.Plan.Steps = append(s.Turn.Plan.Steps[:2], state.PlanStep{PlannedStep: capabilities.PlannedStep{Capability: "compare", TaskObjective: "compare the beam current with the reference"}, Status: state.StepPending},
		s.Turn.Plan.Steps[2])
	s.Turn.Results = []state.StepResult{{StepIndex: 0, Capability: "channel_write", TaskObjective: "set the quadrupole current", Success: true, Plan: 1}}
	s.Context = capabilities.ContextStore{}.Put(capabilities.ContextEntry{Type: "WRITE_RESULT", Key: "w", Value: []byte(`{}`),
		Summary: "Set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A (readback verified)", Capability: "channel_write", TaskObjective: "set the quadrupole current", Turn: 1})
	m := llmtest.New().Script(llm.RoleError, llmtest.Text("The beam current channel did not answer in time; the magnet change went through."))
	n, err := errornode.New(errornode.Config{Models: m, Router: rc, Now: clock, SideEffects: func(c string) bool { return c == "channel_write" }})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := n.Run(context.Background(), s)
	got := u.Messages[0].Content
	operator, technical, _ := strings.Cut(got, "\n\n<details>")
	if operator != wantOperator {
		t.Errorf("docs/error-handling.md shows\n%s\nthe node writes\n%s", wantOperator, operator)
	}
	// The technical report's lines, in order (the metadata's JSON block is
	// shown as one line).
	technical = "<details>" + technical
	for _, l := range strings.Split(wantTechnical, "\n") {
		if strings.Contains(l, "← as a ```json block") {
			continue
		}
		i := strings.Index(technical, l)
		if i < 0 {
			t.Errorf("docs/error-handling.md's technical report shows %q; the node writes\n%s", l, got)
			break
		}
		technical = technical[i+len(l):]
	}
}

// Running out of plans after a replanning failure advises rephrasing once,
// not once per reason.
func TestReportAdvisesRephrasingOnce(t *testing.T) {
	s := failedTurn()
	e := *s.Turn.Control.Error
	e.Classification = capabilities.Classification{Severity: capabilities.Replanning, Kind: capabilities.KindInvalidInput, UserMessage: "the plan named no channel"}
	s.Turn.Control.Error, s.Turn.Plan.Steps[1].Error = &e, &e
	s.Turn.Plan.Steps[1].Status = state.StepPending
	s.Turn.Control.PlansCreated = 2
	r := errornode.BuildReport(s, rc, nil, now)
	if r.Failure.Limit != router.LimitPlanning {
		t.Fatalf("limit %q, want %q", r.Failure.Limit, router.LimitPlanning)
	}
	n := 0
	for _, sg := range r.Suggestions {
		if strings.HasPrefix(sg, "Rephrase the request") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("suggestions %q: want the advice to rephrase once", r.Suggestions)
	}
}

// inDoubtTurn: the one step, a write, ended with outcome o (mismatch or
// unconfirmed): CRITICAL, with the outcome in the classification, as the
// agent reports it.
func inDoubtTurn(o capabilities.Outcome, msg string) state.State {
	e := &state.ErrorInfo{Node: "channel_write", Capability: "channel_write", StepIndex: 0, Attempt: 1, Message: msg,
		Classification: capabilities.Classification{Severity: capabilities.Critical, Kind: string(o), UserMessage: msg,
			Metadata: map[string]any{capabilities.MetaOutcome: string(o),
				capabilities.MetaSuggestions: []any{"check BTS:MAG:Q1:CURRENT on the machine before asking for the change again"}}}}
	steps := []state.PlanStep{
		{PlannedStep: capabilities.PlannedStep{Capability: "channel_write", TaskObjective: "set Q1 to 105 A"}, Status: state.StepFailed, Attempts: 1, Error: e},
		{PlannedStep: capabilities.PlannedStep{Capability: "respond", TaskObjective: "answer"}, Status: state.StepPending},
	}
	return state.State{
		Messages: []state.Message{{Role: state.RoleUser, Content: "Set Q1 to 105 A", Turn: 1}},
		Turn: state.Turn{Number: 1, StartedAt: start, Input: "Set Q1 to 105 A", Task: &state.Task{Text: "Set Q1 to 105 A"},
			Plan: &state.Plan{Number: 1, Steps: steps}, Control: state.Control{Error: e, PlansCreated: 1, NodeSteps: 5}},
	}
}

// A write whose outcome is unknown or differs from what was asked is never
// reported as "nothing was done": the report, the deterministic explanation
// and the facts the model explains from say the change may have happened
// and what to check.
func TestReportOfAChangeInDoubt(t *testing.T) {
	for _, tc := range []struct {
		outcome      capabilities.Outcome
		msg          string
		done, reason string
	}{
		{capabilities.OutcomeUnconfirmed, "Step 1 (set BTS:MAG:Q1:CURRENT to 105.00 A) may or may not have been carried out: the connection broke, and channel_write cannot confirm the result. It was not retried.",
			"**What was done:** Step 1 (channel write) may or may not have changed the machine (**unconfirmed**).", "Whether the change was made is not known"},
		{capabilities.OutcomeMismatch, "Step 1 (set BTS:MAG:Q1:CURRENT to 105.00 A) was carried out, but the readback does not match what was asked (BTS:MAG:Q1:CURRENT reads 97.5 A). It was not retried.",
			"**What was done:** Step 1 (channel write) was carried out, but the machine does not read what was asked (**mismatch**).", "The machine does not read what was asked"},
	} {
		t.Run(string(tc.outcome), func(t *testing.T) {
			m := llmtest.New().Script(llm.RoleError, llmtest.Text("The write's result is unknown. Check the magnet."))
			msg := run(t, m, inDoubtTurn(tc.outcome, tc.msg)).Messages[0]
			if strings.Contains(msg.Content, "nothing") || !strings.Contains(msg.Content, tc.done) || !strings.Contains(msg.Content, tc.msg[:40]) ||
				!strings.Contains(msg.Content, "Check BTS:MAG:Q1:CURRENT on the machine before asking for the change again.") {
				t.Errorf("report:\n%s", msg.Content)
			}
			if p := m.Calls()[0].Prompt(); !strings.Contains(p, "Outcome of the failed step: "+string(tc.outcome)) {
				t.Errorf("the model is not told the outcome:\n%s", p)
			}
			r := errornode.BuildReport(inDoubtTurn(tc.outcome, tc.msg), rc, nil, now)
			if ex := errornode.Explain(r); !strings.Contains(ex, tc.reason) || !strings.Contains(ex, "check the machine before asking for it again") {
				t.Errorf("explanation %q", ex)
			}
		})
	}
}

// A step stopped after an attempt its retry policy would have repeated (a
// parallel step still on attempt 1 of 4 when another failed for good) is
// not reported as failed for good, and the step that only repeats what was
// asked is named by its capability, so the question is said once.
func TestNotCarriedOutSaysWhichAttemptFailed(t *testing.T) {
	s := failedTurn()
	e := &state.ErrorInfo{Node: "read_archive", Capability: "read_archive", StepIndex: 2, Attempt: 1, Message: "archive: timeout",
		Classification: capabilities.Classification{Severity: capabilities.Retriable, Kind: capabilities.KindTimeout, UserMessage: "the archive timed out"},
		Policy:         capabilities.RetryPolicy{MaxAttempts: 4}, Retry: true}
	s.Turn.Plan.Steps = append(s.Turn.Plan.Steps[:2],
		state.PlanStep{PlannedStep: capabilities.PlannedStep{Capability: "read_archive", TaskObjective: "Read the storage ring beam current"},
			Status: state.StepPending, Attempts: 1, Error: e},
		s.Turn.Plan.Steps[2])
	r := errornode.BuildReport(s, rc, nil, now)
	md := errornode.Markdown(r)
	want := "- Step 3 (read archive) — attempt 1 of 4 failed; it was not tried again, because the request stopped"
	if !strings.Contains(md, want) || strings.Contains(md, "also failed") {
		t.Errorf("want %q:\n%s", want, md)
	}
	if st := r.Steps[2]; st.Objective != "" || st.Attempts != 1 || st.MaxAttempts != 4 || st.Error != "the archive timed out" {
		t.Errorf("step %+v", st)
	}
	if n := strings.Count(md, "Read the storage ring beam current"); n != 1 {
		t.Errorf("the question is said %d times:\n%s", n, md)
	}
}
