package nodes_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/state"
)

// The default path of a turn: task extraction and the classifier ask their
// model only when the turn needs it (nodes/needs.go). These tests run it on
// the compiled agent and assert, besides the outcome, the model calls each
// turn made, by role and in order.

// shortConfig is an agent over reg and the scripted model, every node with
// a model, on the default path (no everyCall).
func shortConfig(reg *capabilities.Registry, m *llmtest.Model) agent.Config {
	return agent.Config{Registry: reg, Models: m.Only(nodeRoles...), Nodes: nodes.Config{RetryPolicy: fastRetry()},
		InfraRetry: map[string]capabilities.RetryPolicy{}}
}

// roles are the roles of the calls m received since call from (0: all).
func roles(m *llmtest.Model, from int) []llm.Role {
	var out []llm.Role
	for _, c := range m.Calls()[from:] {
		out = append(out, c.Role)
	}
	return out
}

func wantRoles(t *testing.T, m *llmtest.Model, from int, want ...llm.Role) {
	t.Helper()
	if got := roles(m, from); !slices.Equal(got, want) {
		t.Errorf("model calls %v, want %v", got, want)
	}
}

// decisions are the turn's ModelDecision lines (status events saying
// whether a node asks its model).
func decisions(o turn) []string {
	var out []string
	for _, e := range o.of(agent.EventStatus) {
		if strings.Contains(e.Text, "no model call") || strings.Contains(e.Text, "asking the model") || strings.Contains(e.Text, "in one call") ||
			strings.Contains(e.Text, "asked again after a failure") {
			out = append(out, e.Text)
		}
	}
	return out
}

func hasDecision(t *testing.T, o turn, want string) {
	t.Helper()
	for _, d := range decisions(o) {
		if strings.Contains(d, want) {
			return
		}
	}
	t.Errorf("no decision %q among %q", want, decisions(o))
}

// runOnAgent runs one turn of thread on a, failing the test on an error.
func runOnAgent(t *testing.T, a *agent.Agent, thread, input string) turn {
	t.Helper()
	var o turn
	for ev, err := range a.Run(context.Background(), agent.TurnRequest{Thread: thread, Input: input}) {
		o.events = append(o.events, ev)
		if err != nil {
			t.Fatalf("turn failed: %v", err)
		}
	}
	return o
}

func newAgent(t *testing.T, cfg agent.Config) *agent.Agent {
	t.Helper()
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// bulkyCapabilities are n capabilities with guides as long as the control
// room's (about 900 characters each for the planner), so that with a few
// dozen of them the guides no longer fit the planner's prompt.
func bulkyCapabilities(t testing.TB, n int) []capabilities.Capability {
	t.Helper()
	var out []capabilities.Capability
	for i := range n {
		name, typ := fmt.Sprintf("magnet_%02d_lookup", i), fmt.Sprintf("MAGNET_%02d_DATA", i)
		c := capabilities.Define(capabilities.Definition{Name: name, Provides: []string{typ},
			Description: fmt.Sprintf("Look up the calibration, limits and interlock state of magnet family %d: excitation curves, "+
				"current limits, the power supply's status and the last time it tripped, from the magnet database.", i),
			ClassifierGuide: &capabilities.ClassifierGuide{Instructions: fmt.Sprintf("Select when the user asks about magnet family %d's calibration, limits or interlocks.", i),
				Examples: []capabilities.ClassifierExample{{Query: fmt.Sprintf("What are the current limits of family %d?", i), Result: true},
					{Query: "What is the beam current?", Result: false}}},
			OrchestratorGuide: &capabilities.OrchestratorGuide{Priority: 5, Instructions: fmt.Sprintf("Use %s for anything about magnet family %d that the magnet "+
				"database holds; it needs no channel names. Give the family in parameters.family and what to look up in parameters.what "+
				"(calibration, limits, interlocks or trips).", name, i),
				Examples: []capabilities.OrchestratorExample{{Scenario: fmt.Sprintf("the current limits of magnet family %d", i),
					Step: capabilities.PlannedStep{ContextKey: fmt.Sprintf("family_%d_limits", i), Capability: name,
						TaskObjective: fmt.Sprintf("Look up the current limits of magnet family %d", i), ExpectedOutput: typ,
						Parameters: map[string]any{"family": i, "what": "limits"}}, Notes: "one step per family"}}},
			Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
				return capabilities.Result(typ, i, "looked up"), nil
			}})
		out = append(out, c)
	}
	return out
}

// manyPlant is smallPlant and 28 bulky capabilities: 30, whose guides do
// not fit the planner's prompt.
func manyPlant(t *testing.T) *capabilities.Registry {
	t.Helper()
	reg := smallPlant(t)
	if err := reg.Register(bulkyCapabilities(t, 28)...); err != nil {
		t.Fatal(err)
	}
	return reg
}

const (
	followUpTask  = `{"task": "Read the beam current again", "depends_on_chat_history": true, "intent": {"kind": "read", "changes": []}}`
	combinedReply = "<think>They want the same value again: {\"maybe\": 1}.</think>\nHere is the JSON:\n```json\n" +
		`{"task": "Read the beam current again", "depends_on_chat_history": true, "intent": {"kind": "read", "changes": []}, "capabilities": ["channel_read"]}` + "\n```"
)

// A first-turn read with a few capabilities makes two model calls: the
// plan and the answer, which streams. Each node that made no call says so.
func TestShortPathFirstTurnRead(t *testing.T) {
	m := llmtest.New().
		Script(llm.RoleOrchestrator, llmtest.Text(goodPlanReply)).
		Script(llm.RoleResponse, llmtest.Stream("The beam current ", "is 500.2 mA."))
	o := runTurn(t, shortConfig(smallPlant(t), m), "What is the beam current?")
	checkAnswer(t, o, answerReply)
	wantRoles(t, m, 0, llm.RoleOrchestrator, llm.RoleResponse)
	hasDecision(t, o, "task_extraction: the thread's first message is the task, no model call")
	hasDecision(t, o, "classifier: all 2 capabilities fit the planner's prompt")
	if tasks := o.of(agent.EventTask); len(tasks) != 1 || tasks[0].Text != "What is the beam current?" {
		t.Errorf("task events %+v", tasks)
	}
	if caps := o.of(agent.EventCapabilities); len(caps) != 1 || !slices.Contains(caps[0].Capabilities, "channel_finding") || !slices.Contains(caps[0].Capabilities, "channel_read") {
		t.Errorf("capabilities %+v", caps)
	}
	// The answer streams from its first chunk, before the message.
	var streamed []string
	for _, e := range o.events {
		if e.Type == agent.EventMessage {
			break
		}
		if e.Type == agent.EventToken && e.Node == state.NodeRespond {
			streamed = append(streamed, e.Text)
		}
	}
	if len(streamed) < 2 || streamed[0] != "The beam current " {
		t.Errorf("streamed %q before the message", streamed)
	}
}

// A follow-up that refers back asks task extraction (three calls); the
// planner then gets the chat history.
func TestShortPathFollowUpAsksForTheTask(t *testing.T) {
	m := llmtest.New().
		Script(llm.RoleTaskExtraction, llmtest.Text(followUpTask)).
		Script(llm.RoleOrchestrator, llmtest.Text(goodPlanReply), llmtest.Text(goodPlanReply)).
		Script(llm.RoleResponse, llmtest.Text(answerReply), llmtest.Text(answerReply))
	a := newAgent(t, shortConfig(smallPlant(t), m))
	runOnAgent(t, a, "t", "What is the beam current?")
	from := m.Count()
	o := runOnAgent(t, a, "t", "Read it again")
	checkAnswer(t, o, answerReply)
	wantRoles(t, m, from, llm.RoleTaskExtraction, llm.RoleOrchestrator, llm.RoleResponse)
	hasDecision(t, o, `task_extraction: the message's "it" may refer to an earlier one: asking the model`)
	hasDecision(t, o, "classifier: all 2 capabilities fit")
	plan := m.CallsFor(llm.RoleOrchestrator)[1].Request.Messages
	if !strings.Contains(plan[1].Content, "TASK TO PLAN: Read the beam current again") || !strings.Contains(plan[1].Content, "Chat history:\nuser: What is the beam current?") {
		t.Errorf("the planner's message:\n%s", plan[1].Content)
	}
	// A later question that names its subject needs no earlier turn.
	from = m.Count()
	m.Script(llm.RoleOrchestrator, llmtest.Text(goodPlanReply)).Script(llm.RoleResponse, llmtest.Text(answerReply))
	o = runOnAgent(t, a, "t", "What is the beam current in the storage ring now?")
	wantRoles(t, m, from, llm.RoleOrchestrator, llm.RoleResponse)
	hasDecision(t, o, "task_extraction: the message names what it asks about: no earlier turn is needed, no model call")
}

// With thirty capabilities whose guides do not fit the planner's prompt, a
// first-turn read asks the classifier (three calls) and the planner sees
// only the selection; a follow-up asks for the task and the selection in
// one call (three calls, not four), read through a real model's reasoning,
// prose and fence.
func TestShortPathManyCapabilities(t *testing.T) {
	m := llmtest.New().
		Script(llm.RoleClassifier, llmtest.Text(`{"capabilities": ["channel_read"]}`), llmtest.Text(combinedReply)).
		Script(llm.RoleOrchestrator, llmtest.Text(goodPlanReply), llmtest.Text(goodPlanReply)).
		Script(llm.RoleResponse, llmtest.Text(answerReply), llmtest.Text(answerReply))
	a := newAgent(t, shortConfig(manyPlant(t), m))
	o := runOnAgent(t, a, "t", "What is the beam current?")
	checkAnswer(t, o, answerReply)
	wantRoles(t, m, 0, llm.RoleClassifier, llm.RoleOrchestrator, llm.RoleResponse)
	hasDecision(t, o, "classifier: the guides of 30 capabilities take")
	hasDecision(t, o, "over 4000: asking the model")
	if p := m.CallsFor(llm.RoleOrchestrator)[0].Prompt(); strings.Contains(p, "## magnet_") || !strings.Contains(p, "## channel_finding") {
		t.Errorf("the planner saw more or less than the selection (channel_read and its provider):\n%.600s", p)
	}

	from := m.Count()
	o = runOnAgent(t, a, "t", "Read it again")
	checkAnswer(t, o, answerReply)
	wantRoles(t, m, from, llm.RoleClassifier, llm.RoleOrchestrator, llm.RoleResponse)
	hasDecision(t, o, "task_extraction: the message's \"it\" may refer to an earlier one; the task is asked together with the capability selection, in one call")
	combined := m.CallsFor(llm.RoleClassifier)[1].Request.Messages
	if !strings.Contains(combined[0].Content, "and select every capability needed") || !strings.Contains(combined[1].Content, "Latest user message:\nRead it again") {
		t.Errorf("the combined call's prompt:\n%.300s\n---\n%s", combined[0].Content, combined[1].Content)
	}
	if tasks := o.of(agent.EventTask); len(tasks) != 1 || tasks[0].Text != "Read the beam current again" {
		t.Errorf("task events %+v (want the model's task, once)", tasks)
	}
	s := finalState(t, a, "t")
	if s.Turn.Task == nil || s.Turn.Task.Text != "Read the beam current again" || !s.Turn.Task.DependsOnHistory || s.Turn.Task.Intent.Kind != "read" {
		t.Errorf("task %+v", s.Turn.Task)
	}
	if got := s.Turn.Control.TokensByRole; got["classifier"] == 0 || got["task_extraction"] != 0 {
		t.Errorf("tokens by role %v: the combined call counts as the classifier's", got)
	}
}

// An unusable combined reply — prose, the selection alone, a reply cut off
// by the token limit — falls back to asking for the task and the selection
// apart, and the turn still answers. Unusable again, the classifier's
// retry asks apart, with the error shown to the part that failed.
func TestShortPathCombinedReplyFallsBack(t *testing.T) {
	for _, tt := range []struct {
		name string
		bad  []llmtest.Reply
	}{
		{"prose", []llmtest.Reply{llmtest.Text("Sure! I would read the beam current with channel_read.")}},
		{"selection alone", []llmtest.Reply{llmtest.Text(`{"capabilities": ["channel_read"]}`)}},
		{"cut off", []llmtest.Reply{llmtest.Cut(`{"task": "Read the beam`), llmtest.Cut(`{"task": "Read the beam`), llmtest.Cut(`{"task": "Read the beam`)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := llmtest.New().
				Script(llm.RoleClassifier, append(tt.bad, llmtest.Text(`{"capabilities": ["channel_read"]}`))...).
				Script(llm.RoleTaskExtraction, llmtest.Text(followUpTask)).
				Script(llm.RoleOrchestrator, llmtest.Text(goodPlanReply)).
				Script(llm.RoleResponse, llmtest.Text(answerReply))
			cfg := shortConfig(manyPlant(t), m)
			cfg.Nodes.SelectAllWithinTokens = -1 // the classifier asks, first turn included
			a := newAgent(t, cfg)
			seedThread(t, a, m)
			from := m.Count()
			o := runOnAgent(t, a, "t", "Read it again")
			checkAnswer(t, o, answerReply)
			want := slices.Repeat([]llm.Role{llm.RoleClassifier}, len(tt.bad))
			want = append(want, llm.RoleTaskExtraction, llm.RoleClassifier, llm.RoleOrchestrator, llm.RoleResponse)
			wantRoles(t, m, from, want...)
			found := false
			for _, e := range o.of(agent.EventStatus) {
				found = found || strings.Contains(e.Text, "asking for them apart")
			}
			if !found {
				t.Error("no status says the reply was unusable and the questions go apart")
			}
			if s := finalState(t, a, "t"); s.Turn.Task.Text != "Read the beam current again" {
				t.Errorf("task %+v", s.Turn.Task)
			}
			if m.Remaining() != 0 {
				t.Errorf("%d scripted replies unused", m.Remaining())
			}
		})
	}
	t.Run("the task unusable too", func(t *testing.T) {
		m := llmtest.New().
			Script(llm.RoleClassifier, llmtest.Text("no idea"), llmtest.Text(`{"capabilities": ["channel_read"]}`)).
			Script(llm.RoleTaskExtraction, llmtest.Text(`{"Task": "Read the beam current again"}`), llmtest.Text(followUpTask)).
			Script(llm.RoleOrchestrator, llmtest.Text(goodPlanReply)).
			Script(llm.RoleResponse, llmtest.Text(answerReply))
		cfg := shortConfig(manyPlant(t), m)
		cfg.Nodes.SelectAllWithinTokens = -1
		a := newAgent(t, cfg)
		seedThread(t, a, m)
		from := m.Count()
		o := runOnAgent(t, a, "t", "Read it again")
		checkAnswer(t, o, answerReply)
		wantRoles(t, m, from, llm.RoleClassifier, llm.RoleTaskExtraction, llm.RoleTaskExtraction, llm.RoleClassifier, llm.RoleOrchestrator, llm.RoleResponse)
		if r := o.of(agent.EventRetry); len(r) != 1 || r[0].Node != state.NodeClassifier {
			t.Errorf("retries %+v, want the classifier's", r)
		}
		task := m.CallsFor(llm.RoleTaskExtraction)
		if !strings.Contains(task[1].Request.Messages[1].Content, `Your previous reply could not be used: the reply has unknown key(s) "Task"`) {
			t.Errorf("the task's retry does not show its error:\n%s", task[1].Request.Messages[1].Content)
		}
	})
}

// seedThread gives thread "t" a first turn (offline nodes would answer it
// too; here the scripted model's plan and answer), so the next message is
// a follow-up.
func seedThread(t *testing.T, a *agent.Agent, m *llmtest.Model) {
	t.Helper()
	m.On(llmtest.All(llmtest.RoleIs(llm.RoleClassifier), llmtest.PromptContains("User request:\nWhat is the beam current?")),
		func(llm.Request) llmtest.Reply { return llmtest.Text(`{"capabilities": ["channel_read"]}`) })
	m.On(llmtest.All(llmtest.RoleIs(llm.RoleOrchestrator), llmtest.PromptContains("TASK TO PLAN: What is the beam current?")),
		func(llm.Request) llmtest.Reply { return llmtest.Text(goodPlanReply) })
	m.On(llmtest.All(llmtest.RoleIs(llm.RoleResponse), llmtest.PromptContains("Task: What is the beam current?")),
		func(llm.Request) llmtest.Reply { return llmtest.Text(answerReply) })
	checkAnswer(t, runOnAgent(t, a, "t", "What is the beam current?"), answerReply)
}

// routesPlant is smallPlant whose channel_read fails as fail says on each
// attempt (nil: succeeds), retried at once.
func routesPlant(t *testing.T, fail func(attempt int) error) *capabilities.Registry {
	t.Helper()
	finding := capabilities.Define(capabilities.Definition{Name: "channel_finding", Provides: []string{"CHANNEL_ADDRESSES"},
		Description: "Find the control-system channel names that match a description such as beam current.",
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("CHANNEL_ADDRESSES", []string{"SR:DCCT:CURRENT"}, "found SR:DCCT:CURRENT"), nil
		}})
	var mu sync.Mutex
	attempts := 0
	read := capabilities.Define(capabilities.Definition{Name: "channel_read", Provides: []string{"CHANNEL_VALUES"},
		Requires:    []capabilities.Requirement{{Type: "CHANNEL_ADDRESSES"}},
		Description: "Read the present live value of control-system channels.",
		Retry:       capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond, Jitter: capabilities.JitterNone},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			mu.Lock()
			attempts++
			n := attempts
			mu.Unlock()
			if err := fail(n); err != nil {
				return capabilities.Output{}, err
			}
			return capabilities.Result("CHANNEL_VALUES", 500.2, "SR:DCCT:CURRENT = 500.2 mA"), nil
		}})
	reg := capabilities.NewRegistry()
	if err := reg.Register(finding, read); err != nil {
		t.Fatal(err)
	}
	return reg
}

func failFirst(sev capabilities.Severity) func(int) error {
	return func(n int) error {
		if n == 1 {
			return capabilities.NewError(sev, capabilities.KindTimeout, "the channel did not answer", errors.New("timeout"))
		}
		return nil
	}
}

const (
	// unknownPlan names a capability nobody registered.
	unknownPlan = `{"steps": [{"context_key": "d", "capability": "beam_dump", "task_objective": "dump the beam"}, {"context_key": "a", "capability": "respond", "task_objective": "answer"}]}`
	// forwardPlan reads an output of a later step: REPLANNING.
	forwardPlan = `{"steps": [
	 {"context_key": "val", "capability": "channel_read", "task_objective": "read it", "expected_output": "CHANNEL_VALUES", "inputs": [{"CHANNEL_ADDRESSES": "ch"}]},
	 {"context_key": "ch", "capability": "channel_finding", "task_objective": "find the beam current channel", "expected_output": "CHANNEL_ADDRESSES"},
	 {"context_key": "answer", "capability": "respond", "task_objective": "answer"}]}`
)

// Every severity route works on the default path: the failure goes where
// its severity says, and the turn makes the model calls that route needs,
// no more — a reclassification asks the classifier, which the first
// selection did without.
func TestShortPathSeverityRoutes(t *testing.T) {
	read := "What is the beam current?"
	t.Run("retriable step", func(t *testing.T) {
		m := llmtest.New().Script(llm.RoleOrchestrator, llmtest.Text(goodPlanReply)).Script(llm.RoleResponse, llmtest.Text(answerReply))
		o := runTurn(t, shortConfig(routesPlant(t, failFirst(capabilities.Retriable)), m), read)
		checkAnswer(t, o, answerReply)
		if r := o.of(agent.EventRetry); len(r) != 1 || r[0].Retry.Capability != "channel_read" {
			t.Errorf("retries %+v", r)
		}
		wantRoles(t, m, 0, llm.RoleOrchestrator, llm.RoleResponse)
	})
	t.Run("retriable model call", func(t *testing.T) {
		m := llmtest.New().
			Script(llm.RoleOrchestrator, llmtest.Fail(&llm.Error{Kind: llm.ErrRateLimited, Role: llm.RoleOrchestrator, StatusCode: 429, Delay: time.Millisecond}), llmtest.Text(goodPlanReply)).
			Script(llm.RoleResponse, llmtest.Text(answerReply))
		o := runTurn(t, shortConfig(smallPlant(t), m), read)
		checkAnswer(t, o, answerReply)
		if r := o.of(agent.EventRetry); len(r) != 1 || r[0].Node != state.NodeOrchestrator {
			t.Errorf("retries %+v", r)
		}
		wantRoles(t, m, 0, llm.RoleOrchestrator, llm.RoleOrchestrator, llm.RoleResponse)
	})
	t.Run("replanning", func(t *testing.T) {
		m := llmtest.New().Script(llm.RoleOrchestrator, llmtest.Text(forwardPlan), llmtest.Text(goodPlanReply)).Script(llm.RoleResponse, llmtest.Text(answerReply))
		o := runTurn(t, shortConfig(smallPlant(t), m), read)
		checkAnswer(t, o, answerReply)
		wantRoles(t, m, 0, llm.RoleOrchestrator, llm.RoleOrchestrator, llm.RoleResponse)
		if p := m.CallsFor(llm.RoleOrchestrator)[1].Request.Messages[1].Content; !strings.Contains(p, "REPLANNING: the previous plan failed") {
			t.Errorf("the second plan's message:\n%s", p)
		}
		if plans := o.of(agent.EventPlan); len(plans) != 1 {
			t.Errorf("%d plans made (the rejected one is no plan)", len(plans))
		}
	})
	t.Run("replanning from a step", func(t *testing.T) {
		m := llmtest.New().Script(llm.RoleOrchestrator, llmtest.Text(goodPlanReply), llmtest.Text(goodPlanReply)).Script(llm.RoleResponse, llmtest.Text(answerReply))
		o := runTurn(t, shortConfig(routesPlant(t, failFirst(capabilities.Replanning)), m), read)
		checkAnswer(t, o, answerReply)
		wantRoles(t, m, 0, llm.RoleOrchestrator, llm.RoleOrchestrator, llm.RoleResponse)
		if plans := o.of(agent.EventPlan); len(plans) != 2 || plans[1].Plan.Number != 2 {
			t.Errorf("plans %+v", plans)
		}
	})
	t.Run("reclassification", func(t *testing.T) {
		m := llmtest.New().
			Script(llm.RoleOrchestrator, llmtest.Text(unknownPlan), llmtest.Text(goodPlanReply)).
			Script(llm.RoleClassifier, llmtest.Text(`{"capabilities": ["channel_read"]}`)).
			Script(llm.RoleResponse, llmtest.Text(answerReply))
		o := runTurn(t, shortConfig(smallPlant(t), m), read)
		checkAnswer(t, o, answerReply)
		wantRoles(t, m, 0, llm.RoleOrchestrator, llm.RoleClassifier, llm.RoleOrchestrator, llm.RoleResponse)
		hasDecision(t, o, "classifier: all 2 capabilities fit")
		hasDecision(t, o, "classifier: asked again after a failure")
		cl := m.CallsFor(llm.RoleClassifier)[0].Request.Messages[1].Content
		if !strings.Contains(cl, "Previous approach failed: the plan needed capabilities that are not available: beam_dump") {
			t.Errorf("the classifier was not told what failed:\n%s", cl)
		}
	})
	t.Run("critical", func(t *testing.T) {
		m := llmtest.New().Script(llm.RoleOrchestrator, llmtest.Text(goodPlanReply))
		o := runTurn(t, shortConfig(routesPlant(t, failFirst(capabilities.Critical)), m), read)
		if msg := o.message(); msg == nil || msg.Kind != state.KindErrorReport || msg.Report == nil || msg.Report.Failure.Severity != capabilities.Critical {
			t.Fatalf("message %+v", msg)
		}
		wantRoles(t, m, 0, llm.RoleOrchestrator)
	})
	t.Run("fatal", func(t *testing.T) {
		m := llmtest.New().Script(llm.RoleOrchestrator, llmtest.Text(goodPlanReply))
		a := newAgent(t, shortConfig(routesPlant(t, failFirst(capabilities.Fatal)), m))
		var runErr error
		for _, err := range a.Run(context.Background(), agent.TurnRequest{Thread: "t", Input: read}) {
			if err != nil {
				runErr = err
			}
		}
		var fe *agent.FatalError
		if !errors.As(runErr, &fe) || fe.Capability != "channel_read" {
			t.Fatalf("run error %v, want a *agent.FatalError of channel_read", runErr)
		}
		wantRoles(t, m, 0, llm.RoleOrchestrator)
	})
	t.Run("token budget", func(t *testing.T) {
		m := llmtest.New().Script(llm.RoleOrchestrator, used(llmtest.Text(goodPlanReply), 500))
		cfg := shortConfig(smallPlant(t), m)
		cfg.Limits.MaxTokensPerTurn = 400
		o := runTurn(t, cfg, read)
		if msg := o.message(); msg == nil || msg.Kind != state.KindErrorReport || msg.Report == nil || msg.Report.Failure.Limit != router.LimitTokens {
			t.Fatalf("message %+v", msg)
		}
		wantRoles(t, m, 0, llm.RoleOrchestrator)
	})
	t.Run("planning budget", func(t *testing.T) {
		m := llmtest.New().Script(llm.RoleOrchestrator, llmtest.Text(goodPlanReply), llmtest.Text(goodPlanReply))
		o := runTurn(t, shortConfig(routesPlant(t, func(int) error {
			return capabilities.NewError(capabilities.Replanning, capabilities.KindNotFound, "no such channel", nil)
		}), m), read)
		if msg := o.message(); msg == nil || msg.Kind != state.KindErrorReport || msg.Report == nil || msg.Report.Failure.Limit != router.LimitPlanning {
			t.Fatalf("message %+v", msg)
		}
		wantRoles(t, m, 0, llm.RoleOrchestrator, llm.RoleOrchestrator)
	})
}

// writePlant is smallPlant and a channel_write that acts on the outside
// world (approved by a human, audited), writing into writes.
func writePlant(t *testing.T, mu *sync.Mutex, writes *[]float64) *capabilities.Registry {
	t.Helper()
	reg := smallPlant(t)
	write := capabilities.Define(capabilities.Definition{Name: "channel_write", Provides: []string{"CHANNEL_WRITE_RESULTS"},
		Requires:    []capabilities.Requirement{{Type: "CHANNEL_ADDRESSES"}},
		Description: "Write a new setpoint to a control-system channel: set a setting to a number the user gives.", SideEffects: true,
		Action: func(st capabilities.Step) (capabilities.Action, error) {
			v, err := capabilities.Param(st, "value", 0.0)
			return capabilities.Action{Changes: []capabilities.Change{{Target: "Q1", Value: v, Unit: "A"}}, Summary: fmt.Sprintf("set Q1 to %g A", v)}, err
		},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			v, err := capabilities.Param(st, "value", 0.0)
			if err != nil {
				return capabilities.Output{}, err
			}
			mu.Lock()
			*writes = append(*writes, v)
			mu.Unlock()
			return capabilities.Result("CHANNEL_WRITE_RESULTS", v, fmt.Sprintf("Q1 set to %g A", v)), nil
		}})
	if err := reg.Register(write); err != nil {
		t.Fatal(err)
	}
	return reg
}

const writePlanReply = `{"steps": [
 {"context_key": "ch", "capability": "channel_finding", "task_objective": "Find the Q1 channel", "expected_output": "CHANNEL_ADDRESSES"},
 {"context_key": "w", "capability": "channel_write", "task_objective": "Set Q1 to 105 A", "expected_output": "CHANNEL_WRITE_RESULTS", "parameters": {"value": 105}, "inputs": [{"CHANNEL_ADDRESSES": "ch"}]},
 {"context_key": "answer", "capability": "respond", "task_objective": "Say what was set"}]}`

// A write on the default path: the user's words make it a change (no
// model read them), the write capability is among those selected without a
// call, the plan asks a human, and the write runs once after the yes — two
// model calls for the turn.
func TestShortPathApproval(t *testing.T) {
	var mu sync.Mutex
	var writes []float64
	m := llmtest.New().Script(llm.RoleOrchestrator, llmtest.Text(writePlanReply)).Script(llm.RoleResponse, llmtest.Text("Q1 is set to 105 A."))
	cfg := shortConfig(writePlant(t, &mu, &writes), m)
	cfg.Options = state.Options{WritesEnabled: true}
	a := newAgent(t, cfg)
	o := runOnAgent(t, a, "t", "Set Q1 to 105 A")
	if ap := o.of(agent.EventApprovalRequired); len(ap) != 1 || !strings.Contains(ap[0].Approval.Summary, "105") {
		t.Fatalf("approvals %+v", ap)
	}
	if caps := o.of(agent.EventCapabilities); len(caps) != 1 || !slices.Contains(caps[0].Capabilities, "channel_write") {
		t.Errorf("capabilities %+v", caps)
	}
	hasDecision(t, o, "classifier: all 3 capabilities fit")
	var last agent.Event
	for ev, err := range a.Resume(context.Background(), "t", agent.Answer{Text: "yes"}) {
		if err != nil {
			t.Fatal(err)
		}
		last = ev
	}
	if last.Status != agent.RunAnswered {
		t.Fatalf("resume ended %+v", last)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(writes, []float64{105}) {
		t.Errorf("writes %v, want one of 105", writes)
	}
	wantRoles(t, m, 0, llm.RoleOrchestrator, llm.RoleResponse)
}

// Independent steps of a plan made on the default path run together: each
// waits until the other has started.
func TestShortPathParallelSteps(t *testing.T) {
	started := make(chan string, 2)
	both := make(chan struct{})
	var once sync.Once
	wait := func(name string) error {
		started <- name
		if len(started) == 2 {
			once.Do(func() { close(both) })
		}
		select {
		case <-both:
			return nil
		case <-time.After(5 * time.Second):
			return capabilities.NewError(capabilities.Critical, capabilities.KindTimeout, name+" ran alone: the steps did not run together", nil)
		}
	}
	reg := capabilities.NewRegistry()
	for _, name := range []string{"vacuum_read", "rf_read"} {
		c := capabilities.Define(capabilities.Definition{Name: name, Provides: []string{strings.ToUpper(name)},
			Description: "Read the " + strings.TrimSuffix(name, "_read") + " now.",
			Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
				if err := wait(name); err != nil {
					return capabilities.Output{}, err
				}
				return capabilities.Result(strings.ToUpper(name), 1, name+" read"), nil
			}})
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	m := llmtest.New().
		Script(llm.RoleOrchestrator, llmtest.Text(`{"steps": [{"context_key": "v", "capability": "vacuum_read", "task_objective": "read the vacuum"},
			{"context_key": "r", "capability": "rf_read", "task_objective": "read the RF"}, {"context_key": "a", "capability": "respond", "task_objective": "answer"}]}`)).
		Script(llm.RoleResponse, llmtest.Text("Vacuum and RF read."))
	o := runTurn(t, shortConfig(reg, m), "What are the vacuum pressure and the RF voltage now?")
	checkAnswer(t, o, "Vacuum and RF read.")
	wantRoles(t, m, 0, llm.RoleOrchestrator, llm.RoleResponse)
}

// The system prompt of each role is the same bytes for two turns of two
// threads asking different things: a provider's prompt cache serves it.
// The turn's content is all in the user message, sent last. With a
// provider that caches prefixes (the scripted model's CachePrompts), the
// second thread's classifier call reads its long system prompt from the
// cache.
func TestShortPathPromptPrefixSameAcrossThreads(t *testing.T) {
	for _, world := range []struct {
		name  string
		reg   func(*testing.T) *capabilities.Registry
		roles []llm.Role
	}{
		{"few capabilities", smallPlant, []llm.Role{llm.RoleOrchestrator, llm.RoleResponse}},
		{"many capabilities", manyPlant, []llm.Role{llm.RoleClassifier, llm.RoleOrchestrator, llm.RoleResponse}},
	} {
		t.Run(world.name, func(t *testing.T) {
			m := llmtest.New().CachePrompts().
				On(llmtest.RoleIs(llm.RoleClassifier), func(llm.Request) llmtest.Reply { return llmtest.Text(`{"capabilities": ["channel_read"]}`) }).
				On(llmtest.RoleIs(llm.RoleOrchestrator), func(llm.Request) llmtest.Reply { return llmtest.Text(goodPlanReply) }).
				On(llmtest.RoleIs(llm.RoleResponse), func(llm.Request) llmtest.Reply { return llmtest.Text(answerReply) })
			a := newAgent(t, shortConfig(world.reg(t), m))
			runOnAgent(t, a, "first", "What is the beam current?")
			n := m.Count()
			second := runOnAgent(t, a, "second", "Which beam current does the storage ring have right now?")
			wantRoles(t, m, n, world.roles...)
			calls := m.Calls()
			for i, role := range world.roles {
				x, y := calls[i].Request.Messages, calls[n+i].Request.Messages
				if len(x) != 2 || len(y) != 2 || x[0].Role != "system" || x[1].Role != "user" {
					t.Fatalf("%s: messages %d and %d, want a system prompt and the turn's message", role, len(x), len(y))
				}
				if x[0].Content != y[0].Content {
					t.Errorf("%s: the system prompt differs between the threads:\n%s\n---\n%s", role, x[0].Content, y[0].Content)
				}
				if x[1].Content == y[1].Content {
					t.Errorf("%s: the turn's message is the same for two questions: %q", role, x[1].Content)
				}
				if strings.Contains(x[0].Content, "beam current does the storage ring") || strings.Contains(y[0].Content, "What is the beam current?\n") && role != llm.RoleClassifier {
					t.Errorf("%s: the question is in the system prompt", role)
				}
			}
			if world.name == "many capabilities" {
				cached := 0
				for _, e := range second.of(agent.EventModelCall) {
					if e.Call.Role == string(llm.RoleClassifier) {
						cached = e.Call.Usage.CachedPromptTokens
					}
				}
				if cached < 1024 {
					t.Errorf("the second thread's classifier call read %d prompt tokens from the cache, want its system prompt's", cached)
				}
			}
		})
	}
}

// Models that lie change nothing on the default path either: for a read
// the write capability is not among those selected without a call, a plan
// writing anyway is refused, and a combined reply reading a change into a
// read leaves the intent a read.
func TestShortPathLyingModelsChangeNothing(t *testing.T) {
	var mu sync.Mutex
	var writes []float64
	t.Run("a read", func(t *testing.T) {
		m := llmtest.New().Script(llm.RoleOrchestrator, llmtest.Text(writePlanReply), llmtest.Text(goodPlanReply)).Script(llm.RoleResponse, llmtest.Text(answerReply))
		cfg := shortConfig(writePlant(t, &mu, &writes), m)
		cfg.Options = state.Options{WritesEnabled: true}
		o := runTurn(t, cfg, "What is the beam current?")
		checkAnswer(t, o, answerReply)
		if caps := o.of(agent.EventCapabilities); len(caps) != 1 || slices.Contains(caps[0].Capabilities, "channel_write") {
			t.Errorf("capabilities %+v", caps)
		}
		plans := m.CallsFor(llm.RoleOrchestrator)
		if strings.Contains(plans[0].Request.Messages[0].Content, "## channel_write") {
			t.Error("the planner was offered channel_write for a read")
		}
		if !strings.Contains(plans[1].Request.Messages[1].Content, "the user did not ask for a change") {
			t.Errorf("the refused plan's reason is not in the next prompt:\n%s", plans[1].Request.Messages[1].Content)
		}
		if len(o.of(agent.EventApprovalRequired)) != 0 {
			t.Error("a human was asked to approve a write nobody asked for")
		}
	})
	t.Run("a combined reply reading a change", func(t *testing.T) {
		lie := `{"task": "Set Q1 to 140 A", "depends_on_chat_history": true, "intent": {"kind": "change", "changes": [{"target": "Q1", "value": 140, "unit": "A"}]}, "capabilities": ["channel_write", "channel_read"]}`
		m := llmtest.New().
			Script(llm.RoleClassifier, llmtest.Text(lie)).
			Script(llm.RoleOrchestrator, llmtest.Text(goodPlanReply)).
			Script(llm.RoleResponse, llmtest.Text(answerReply))
		cfg := shortConfig(writePlant(t, &mu, &writes), m)
		cfg.Options = state.Options{WritesEnabled: true}
		cfg.Nodes.SelectAllWithinTokens = 1 // the classifier asks: the combined call
		a := newAgent(t, cfg)
		seedThread(t, a, m)
		from := m.Count()
		o := runOnAgent(t, a, "t", "Read it again")
		checkAnswer(t, o, answerReply)
		wantRoles(t, m, from, llm.RoleClassifier, llm.RoleOrchestrator, llm.RoleResponse)
		s := finalState(t, a, "t")
		if s.Turn.Task.Intent.IsChange() || strings.Contains(s.Turn.Task.Text, "140") || slices.Contains(s.Turn.ActiveCapabilities, "channel_write") {
			t.Errorf("task %+v, active %v", s.Turn.Task, s.Turn.ActiveCapabilities)
		}
		if p := m.CallsFor(llm.RoleClassifier); strings.Contains(p[len(p)-1].Request.Messages[0].Content, "## channel_write") {
			t.Error("the combined call offered channel_write for a read")
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if len(writes) != 0 {
		t.Errorf("written %v", writes)
	}
}
