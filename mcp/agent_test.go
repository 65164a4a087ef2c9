package mcp_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/mcp"
	"github.com/capgraph/capgraph/mcp/mcptest"
	"github.com/capgraph/capgraph/state"
)

// Turns on the compiled agent with server-everything's tools as its
// capabilities: offline task extraction, classification and answer, and a
// scripted planner that writes the tool's arguments the way chat models
// reply (reasoning, prose, a code fence).

func everythingSet(t *testing.T, transport mcp.Transport, mod ...func(*mcp.ServerConfig)) *mcp.Set {
	t.Helper()
	cfg := mcp.ServerConfig{Name: "everything"}
	if transport == mcp.TransportHTTP {
		cfg.Transport, cfg.URL = mcp.TransportHTTP, mcptest.EverythingHTTP(t).URL
	} else {
		cfg.Command, cfg.Args = mcptest.Everything(t)
	}
	for _, m := range mod {
		m(&cfg)
	}
	set, err := mcp.Connect(context.Background(), []mcp.ServerConfig{cfg}, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	return set
}

// modelReply wraps a plan as a reasoning model answers: a think block, a
// sentence, then the JSON in a fence.
func modelReply(plan string) llmtest.Reply {
	return llmtest.Text("<think>The user wants a tool result; I will call the MCP tool with the right arguments.</think>\nHere is the plan:\n\n```json\n" + plan + "\n```")
}

type turn struct {
	msg      *state.Message
	approval *state.Approval
	status   agent.RunStatus
	retries  []agent.RetryInfo
	arts     []capabilities.Artifact
	err      error
}

func run(t *testing.T, events func(func(agent.Event, error) bool)) turn {
	t.Helper()
	var out turn
	for ev, err := range events {
		if err != nil {
			out.err = err
			break
		}
		switch ev.Type {
		case agent.EventMessage:
			out.msg = ev.Message
		case agent.EventApprovalRequired:
			out.approval = ev.Approval
		case agent.EventRetry:
			out.retries = append(out.retries, *ev.Retry)
		case agent.EventArtifact:
			out.arts = append(out.arts, *ev.Artifact)
		case agent.EventDone:
			out.status = ev.Status
		}
	}
	return out
}

func newAgent(t *testing.T, set *mcp.Set, m *llmtest.Model, opts state.Options) *agent.Agent {
	t.Helper()
	reg := capabilities.NewRegistry()
	if err := reg.Register(set.Capabilities()...); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Registry: reg, Store: memory.New(), Models: m, Options: opts,
		// Retries after a few milliseconds: the waits are stored, not slept, and short here.
		RetryPolicy: capabilities.RetryPolicy{InitialInterval: 10 * time.Millisecond, MaxInterval: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

const sumPlan = `{"steps": [
  {"context_key": "sum", "capability": "everything_get_sum", "task_objective": "Add 2 and 3 with the sum tool", "expected_output": "EVERYTHING_GET_SUM_RESULT", "parameters": {"a": 2, "b": 3}, "inputs": []},
  {"context_key": "answer", "capability": "respond", "task_objective": "Say the sum", "parameters": {}, "inputs": [{"EVERYTHING_GET_SUM_RESULT": "sum"}]}
]}`

func TestTurnAnswersFromATool(t *testing.T) {
	for _, transport := range []mcp.Transport{mcp.TransportStdio, mcp.TransportHTTP} {
		t.Run(string(transport), func(t *testing.T) {
			set := everythingSet(t, transport)
			m := llmtest.New().Only(llm.RoleOrchestrator).Script(llm.RoleOrchestrator, modelReply(sumPlan))
			a := newAgent(t, set, m, state.Options{})
			// The offline classifier selects the tool from its description;
			// the phrasings vary as operators' do.
			for i, q := range []string{"What is the sum of 2 and 3?", "whats the sum of two numbers 2 + 3"} {
				if i > 0 {
					m.Script(llm.RoleOrchestrator, modelReply(sumPlan))
				}
				tr := run(t, a.Run(context.Background(), agent.TurnRequest{Thread: "t" + string(rune('a'+i)), Input: q}))
				if tr.err != nil || tr.status != agent.RunAnswered || tr.msg == nil {
					t.Fatalf("%q: %+v", q, tr)
				}
				if !strings.Contains(tr.msg.Content, "The sum of 2 and 3 is 5.") {
					t.Fatalf("%q: answer %q", q, tr.msg.Content)
				}
				calls := m.CallsFor(llm.RoleOrchestrator)
				if p := calls[len(calls)-1].Prompt(); !strings.Contains(p, "everything_get_sum") || !strings.Contains(p, `"required":["a","b"]`) {
					t.Fatalf("the planner did not see the tool's schema:\n%s", p)
				}
			}
		})
	}
}

const imagePlan = `{"steps": [
  {"context_key": "logo", "capability": "everything_get_tiny_image", "task_objective": "Get the tiny image", "expected_output": "EVERYTHING_GET_TINY_IMAGE_RESULT", "parameters": {}, "inputs": []},
  {"context_key": "answer", "capability": "respond", "task_objective": "Show the image", "parameters": {}, "inputs": [{"EVERYTHING_GET_TINY_IMAGE_RESULT": "logo"}]}
]}`

// A tool's image becomes a figure artifact of its step, sent as an event
// and kept in the turn's state; the context store keeps only its size.
func TestToolImageBecomesAFigureArtifact(t *testing.T) {
	set := everythingSet(t, mcp.TransportStdio)
	m := llmtest.New().Only(llm.RoleOrchestrator).Script(llm.RoleOrchestrator, modelReply(imagePlan))
	a := newAgent(t, set, m, state.Options{})
	tr := run(t, a.Run(context.Background(), agent.TurnRequest{Thread: "img", Input: "Show me the tiny image"}))
	if tr.err != nil || tr.status != agent.RunAnswered {
		t.Fatalf("%+v", tr)
	}
	if len(tr.arts) != 1 || tr.arts[0].Kind != capabilities.ArtifactFigure || tr.arts[0].ID != "t1.p1.s0.0" ||
		tr.arts[0].Capability != "everything_get_tiny_image" || tr.arts[0].Figure.MediaType != "image/png" || len(tr.arts[0].Figure.Data) == 0 {
		t.Fatalf("artifacts %+v", tr.arts)
	}
	arts, _, err := a.Artifacts(context.Background(), "img", 0)
	if err != nil || len(arts) != 1 || string(arts[0].Figure.Data) != string(tr.arts[0].Figure.Data) {
		t.Fatalf("stored artifacts %d, %v", len(arts), err)
	}
	st, _, err := a.State(context.Background(), "img")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range st.Context.Entries() {
		if e.Capability == "everything_get_tiny_image" && (strings.Contains(string(e.Value), `"data"`) || !strings.Contains(string(e.Value), `"figure":true`)) {
			t.Fatalf("the context keeps the image's data: %s", e.Value)
		}
	}
}

// Parameters that do not fit the schema: REPLANNING, the planner sees the
// schema error, and the second plan is answered.
func TestInvalidParametersAreReplanned(t *testing.T) {
	set := everythingSet(t, mcp.TransportStdio)
	bad := strings.Replace(sumPlan, `{"a": 2, "b": 3}`, `{"a": "two", "b": 3}`, 1)
	m := llmtest.New().Only(llm.RoleOrchestrator).Script(llm.RoleOrchestrator, modelReply(bad), modelReply(sumPlan))
	a := newAgent(t, set, m, state.Options{})
	tr := run(t, a.Run(context.Background(), agent.TurnRequest{Thread: "r", Input: "What is the sum of 2 and 3?"}))
	if tr.status != agent.RunAnswered || tr.msg == nil || !strings.Contains(tr.msg.Content, "The sum of 2 and 3 is 5.") {
		t.Fatalf("%+v", tr)
	}
	calls := m.CallsFor(llm.RoleOrchestrator)
	if len(calls) != 2 {
		t.Fatalf("%d plans", len(calls))
	}
	p := calls[1].Prompt()
	for _, want := range []string{"Replanning", `/properties/a: type: two has type "string", want "number"`, "input schema"} {
		if !strings.Contains(p, want) {
			t.Errorf("the second plan's prompt lacks %q:\n%s", want, p)
		}
	}
}

// A tool result with isError is CRITICAL (the error node's report names
// the server, the tool and its message); configured otherwise, it is
// recovered by its severity.
func TestToolErrorEndsInReport(t *testing.T) {
	no := false
	set := everythingSet(t, mcp.TransportStdio, func(c *mcp.ServerConfig) {
		c.Tools = map[string]mcp.ToolConfig{"gzip-file-as-resource": {SideEffects: &no}}
	})
	plan := `{"steps": [
  {"context_key": "zipped", "capability": "everything_gzip_file_as_resource", "task_objective": "Compress the file", "expected_output": "EVERYTHING_GZIP_FILE_AS_RESOURCE_RESULT", "parameters": {"data": "ftp://example.com/notes.txt", "name": "notes.gz"}, "inputs": []},
  {"context_key": "answer", "capability": "respond", "task_objective": "Report", "parameters": {}, "inputs": [{"EVERYTHING_GZIP_FILE_AS_RESOURCE_RESULT": "zipped"}]}
]}`
	m := llmtest.New().Only(llm.RoleOrchestrator).Script(llm.RoleOrchestrator, modelReply(plan))
	a := newAgent(t, set, m, state.Options{})
	tr := run(t, a.Run(context.Background(), agent.TurnRequest{Thread: "e", Input: "Compress the file ftp://example.com/notes.txt with gzip"}))
	if tr.status == agent.RunAnswered && tr.msg != nil && !strings.Contains(tr.msg.Content, "Unsupported URL protocol") {
		t.Fatalf("%+v", tr)
	}
	s, _, err := a.State(context.Background(), "e")
	if err != nil {
		t.Fatal(err)
	}
	info := s.Turn.Control.Error
	if info == nil || info.Classification.Severity != capabilities.Critical || info.Classification.Kind != mcp.KindToolError || len(m.CallsFor(llm.RoleOrchestrator)) != 1 {
		t.Fatalf("error %+v after %d plans", info, len(m.CallsFor(llm.RoleOrchestrator)))
	}
	if tr.msg == nil || !strings.Contains(tr.msg.Content, "Unsupported URL protocol") || !strings.Contains(tr.msg.Content, "everything") {
		t.Fatalf("report %+v", tr.msg)
	}
}

// The server is killed during the call: the step is RETRIABLE, the retry
// restarts the server and the turn is answered.
func TestKilledServerIsRetried(t *testing.T) {
	set := everythingSet(t, mcp.TransportStdio)
	plan := `{"steps": [
  {"context_key": "op", "capability": "everything_trigger_long_running_operation", "task_objective": "Run the long operation", "expected_output": "EVERYTHING_TRIGGER_LONG_RUNNING_OPERATION_RESULT", "parameters": {"duration": 2, "steps": 2}, "inputs": []},
  {"context_key": "answer", "capability": "respond", "task_objective": "Report", "parameters": {}, "inputs": [{"EVERYTHING_TRIGGER_LONG_RUNNING_OPERATION_RESULT": "op"}]}
]}`
	m := llmtest.New().Only(llm.RoleOrchestrator).Script(llm.RoleOrchestrator, modelReply(plan))
	a := newAgent(t, set, m, state.Options{})
	first := set.Servers()[0].PID
	go func() {
		time.Sleep(700 * time.Millisecond)
		_ = syscall.Kill(first, syscall.SIGKILL)
	}()
	tr := run(t, a.Run(context.Background(), agent.TurnRequest{Thread: "k", Input: "Trigger the long running operation with progress updates"}))
	if tr.status != agent.RunAnswered || tr.msg == nil || !strings.Contains(tr.msg.Content, "Long running operation completed. Duration: 2 seconds, Steps: 2.") {
		t.Fatalf("%+v", tr)
	}
	if len(tr.retries) != 1 || !strings.Contains(tr.retries[0].Reason, `MCP server "everything" is unavailable`) || tr.retries[0].Capability != "everything_trigger_long_running_operation" {
		t.Fatalf("retries %+v", tr.retries)
	}
	if s := set.Servers()[0]; s.PID == first || s.Restarts != 1 {
		t.Fatalf("server %+v", s)
	}
}

// A tool the server does not annotate read-only is an action: with writes
// off it is refused before anyone is asked; with writes on a human
// approves the exact call first, and it runs once, audited.
func TestSideEffectingToolNeedsApproval(t *testing.T) {
	set := everythingSet(t, mcp.TransportStdio)
	plan := `{"steps": [
  {"context_key": "toggled", "capability": "everything_toggle_simulated_logging", "task_objective": "Turn on the simulated logging", "expected_output": "EVERYTHING_TOGGLE_SIMULATED_LOGGING_RESULT", "parameters": {}, "inputs": []},
  {"context_key": "answer", "capability": "respond", "task_objective": "Report", "parameters": {}, "inputs": [{"EVERYTHING_TOGGLE_SIMULATED_LOGGING_RESULT": "toggled"}]}
]}`
	ask := "Turn on the simulated logging"

	m := llmtest.New().Only(llm.RoleOrchestrator).Script(llm.RoleOrchestrator, modelReply(plan))
	off := newAgent(t, set, m, state.Options{WritesEnabled: false})
	tr := run(t, off.Run(context.Background(), agent.TurnRequest{Thread: "w0", Input: ask}))
	if tr.approval != nil {
		t.Fatalf("asked to approve with writes off: %+v", tr.approval)
	}
	recs, err := off.Audit(context.Background(), agent.AuditFilter{Thread: "w0"})
	if err != nil || len(recs) != 2 || recs[0].Event != agent.AuditPlanned || recs[1].Event != agent.AuditRefused || recs[1].Reason != agent.RefusedWritesDisabled {
		t.Fatalf("audit %+v %v", recs, err)
	}

	m.Script(llm.RoleOrchestrator, modelReply(plan))
	on := newAgent(t, set, m, state.Options{WritesEnabled: true})
	tr = run(t, on.Run(context.Background(), agent.TurnRequest{Thread: "w1", Input: ask}))
	if tr.status != agent.RunInterrupted || tr.approval == nil {
		t.Fatalf("not asked: %+v", tr)
	}
	ap := tr.approval
	if ap.Action == nil || ap.Action.Capability != "everything_toggle_simulated_logging" || ap.Action.Changes[0].Target != "mcp:everything/toggle-simulated-logging" ||
		!strings.Contains(ap.Summary, "toggle-simulated-logging") {
		t.Fatalf("approval %+v", ap)
	}
	if recs, _ := on.Audit(context.Background(), agent.AuditFilter{Thread: "w1", Outcome: string(capabilities.OutcomeConfirmed)}); len(recs) != 0 {
		t.Fatal("executed before the answer")
	}
	tr = run(t, on.Resume(context.Background(), "w1", agent.Answer{ApprovalID: ap.ID, Text: "yes", By: "operator"}))
	if tr.status != agent.RunAnswered || tr.msg == nil || !strings.Contains(tr.msg.Content, "Started simulated, random-leveled logging") {
		t.Fatalf("after yes: %+v", tr)
	}
	recs, err = on.Audit(context.Background(), agent.AuditFilter{Thread: "w1"})
	if err != nil || len(recs) != 5 || recs[2].Event != agent.AuditApproved || recs[3].Event != agent.AuditStarted ||
		recs[4].Outcome != capabilities.OutcomeConfirmed || recs[4].Digest != ap.ActionDigest {
		t.Fatalf("audit %+v %v", recs, err)
	}

	// A question about it is no request to act: nothing runs, nobody is asked.
	m.Script(llm.RoleOrchestrator, modelReply(plan))
	tr = run(t, on.Run(context.Background(), agent.TurnRequest{Thread: "w2", Input: "What would happen if I toggled the simulated logging?"}))
	if tr.approval != nil {
		t.Fatalf("asked for a hypothetical: %+v", tr.approval)
	}
	if recs, _ := on.Audit(context.Background(), agent.AuditFilter{Thread: "w2", Outcome: string(capabilities.OutcomeConfirmed)}); len(recs) != 0 {
		t.Fatal("executed for a hypothetical")
	}
}
