package nodes_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/state"
)

// plant is a small control room: finding → read, with deterministic values.
func smallPlant(t *testing.T) *capabilities.Registry {
	t.Helper()
	finding := capabilities.Define(capabilities.Definition{Name: "channel_finding", Provides: []string{"CHANNEL_ADDRESSES"},
		Description: "Find the control-system channel names that match a description such as beam current.",
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Select when channel names must be found.",
			Examples: []capabilities.ClassifierExample{{Query: "What is the beam current?", Result: true}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("CHANNEL_ADDRESSES", []string{"SR:DCCT:CURRENT"}, "found SR:DCCT:CURRENT"), nil
		}})
	read := capabilities.Define(capabilities.Definition{Name: "channel_read", Provides: []string{"CHANNEL_VALUES"},
		Requires:    []capabilities.Requirement{{Type: "CHANNEL_ADDRESSES"}},
		Description: "Read the present live value of control-system channels: what is the beam current now.",
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Select for present values.",
			Examples: []capabilities.ClassifierExample{{Query: "What is the beam current?", Result: true}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			chans, err := capabilities.Key[[]string]("CHANNEL_ADDRESSES").Input(st)
			if err != nil {
				return capabilities.Output{}, err
			}
			return capabilities.Result("CHANNEL_VALUES", 500.2, fmt.Sprintf("%s = 500.2 mA", chans[0])), nil
		}})
	reg := capabilities.NewRegistry()
	if err := reg.Register(finding, read); err != nil {
		t.Fatal(err)
	}
	return reg
}

type turn struct {
	events []agent.Event
	err    error
}

func (o turn) message() *state.Message {
	for _, e := range o.events {
		if e.Type == agent.EventMessage {
			return e.Message
		}
	}
	return nil
}

func (o turn) of(typ agent.EventType) []agent.Event {
	var out []agent.Event
	for _, e := range o.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func runTurn(t *testing.T, cfg agent.Config, input string) turn {
	t.Helper()
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var o turn
	for ev, err := range a.Run(context.Background(), agent.TurnRequest{Thread: "t", Input: input}) {
		o.events = append(o.events, ev)
		if err != nil {
			o.err = err
		}
	}
	if o.err != nil {
		t.Fatalf("turn failed: %v", o.err)
	}
	return o
}

// nodeRoles are the roles of the infrastructure nodes; the error node's role
// stays offline so its report is deterministic.
var nodeRoles = []llm.Role{llm.RoleTaskExtraction, llm.RoleClassifier, llm.RoleOrchestrator, llm.RoleResponse}

const (
	taskReply     = `{"task": "What is the beam current?", "depends_on_chat_history": false}`
	selectReply   = `{"capabilities": ["channel_read"]}`
	goodPlanReply = `{"steps": [
	 {"context_key": "ch", "capability": "channel_finding", "task_objective": "find the beam current channel", "expected_output": "CHANNEL_ADDRESSES"},
	 {"context_key": "val", "capability": "channel_read", "task_objective": "read it", "expected_output": "CHANNEL_VALUES", "inputs": [{"CHANNEL_ADDRESSES": "ch"}]},
	 {"context_key": "answer", "capability": "respond", "task_objective": "answer"}]}`
	answerReply = "The beam current is 500.2 mA."
)

// config is an agent over the scripted model whose infrastructure nodes
// all ask their model on every turn (everyCall): these tests are about each
// node's model calls; the turns that leave calls out have tests of their
// own (shortpath_graph_test.go).
func config(reg *capabilities.Registry, m *llmtest.Model, mode nodes.ClassifierMode) agent.Config {
	return agent.Config{Registry: reg, Models: m.Only(nodeRoles...), Nodes: everyCall(nodes.Config{ClassifierMode: mode}),
		InfraRetry: map[string]capabilities.RetryPolicy{}}
}

// everyCall makes task extraction and the classifier each ask their model
// on every turn: the path of a turn before issue 29.
func everyCall(c nodes.Config) nodes.Config {
	c.TaskExtraction, c.SelectAllWithinTokens, c.SeparateTaskAndSelection = nodes.TaskAlways, -1, true
	return c
}

func fastRetry() capabilities.RetryPolicy {
	return capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond, Jitter: capabilities.JitterNone}
}

func checkAnswer(t *testing.T, o turn, want string) {
	t.Helper()
	m := o.message()
	if m == nil || m.Kind != state.KindAnswer || !strings.Contains(m.Content, want) {
		t.Fatalf("message %+v, want an answer containing %q; events %v", m, want, o.events)
	}
}

func TestGraphBothClassifierModes(t *testing.T) {
	for _, mode := range []nodes.ClassifierMode{nodes.Batched, nodes.PerCapability} {
		t.Run(string(mode), func(t *testing.T) {
			m := llmtest.New().
				Script(llm.RoleTaskExtraction, llmtest.Text(taskReply)).
				Script(llm.RoleOrchestrator, llmtest.Text(goodPlanReply)).
				Script(llm.RoleResponse, llmtest.Stream("The beam current ", "is 500.2 mA."))
			if mode == nodes.Batched {
				m.Script(llm.RoleClassifier, llmtest.Text(selectReply))
			} else {
				m.On(llmtest.PromptContains("Capability: channel_read"), func(llm.Request) llmtest.Reply { return llmtest.Text(`{"is_match": true}`) }).
					On(llmtest.RoleIs(llm.RoleClassifier), func(llm.Request) llmtest.Reply { return llmtest.Text(`{"is_match": false}`) })
			}
			o := runTurn(t, config(smallPlant(t), m, mode), "beam current?")
			checkAnswer(t, o, answerReply)
			wantClassifierCalls := map[nodes.ClassifierMode]int{nodes.Batched: 1, nodes.PerCapability: 2}[mode]
			if got := len(m.CallsFor(llm.RoleClassifier)); got != wantClassifierCalls {
				t.Errorf("classifier calls %d, want %d", got, wantClassifierCalls)
			}
			if len(o.of(agent.EventToken)) < 2 || m.Remaining() != 0 {
				t.Errorf("tokens %d, unused replies %d", len(o.of(agent.EventToken)), m.Remaining())
			}
			caps := o.of(agent.EventCapabilities)
			if len(caps) != 1 || !strings.Contains(strings.Join(caps[0].Capabilities, ","), "channel_finding,channel_read") {
				t.Errorf("capabilities events %+v", caps)
			}
		})
	}
}

func TestGraphMalformedPlanThenGoodOne(t *testing.T) {
	m := llmtest.New().
		Script(llm.RoleTaskExtraction, llmtest.Text(taskReply)).
		Script(llm.RoleClassifier, llmtest.Text(selectReply)).
		Script(llm.RoleOrchestrator, llmtest.Text("Here you go: {\"steps\": [{\"context_key\": \"ch\", \"Capability\": \"channel_finding\"}]}"), llmtest.Text(goodPlanReply)).
		Script(llm.RoleResponse, llmtest.Text(answerReply))
	cfg := config(smallPlant(t), m, "")
	cfg.Nodes.RetryPolicy = fastRetry()
	o := runTurn(t, cfg, "beam current?")
	checkAnswer(t, o, answerReply)
	calls := m.CallsFor(llm.RoleOrchestrator)
	if len(calls) != 2 || !strings.Contains(calls[1].Prompt(), `unknown key(s) "Capability"`) {
		t.Fatalf("orchestrator calls %d; the re-prompt must show the parse error", len(calls))
	}
	if len(o.of(agent.EventRetry)) != 1 {
		t.Errorf("retry events %d", len(o.of(agent.EventRetry)))
	}
}

func TestGraphHallucinatedCapabilityReclassifies(t *testing.T) {
	m := llmtest.New().
		Script(llm.RoleTaskExtraction, llmtest.Text(taskReply)).
		Script(llm.RoleClassifier, llmtest.Text(selectReply), llmtest.Text(selectReply)).
		Script(llm.RoleOrchestrator, llmtest.Text(`{"steps": [{"context_key": "x", "capability": "beam_oracle", "task_objective": "know it"}]}`), llmtest.Text(goodPlanReply)).
		Script(llm.RoleResponse, llmtest.Text(answerReply))
	o := runTurn(t, config(smallPlant(t), m, ""), "beam current?")
	checkAnswer(t, o, answerReply)
	cl := m.CallsFor(llm.RoleClassifier)
	if len(cl) != 2 || !strings.Contains(cl[1].Prompt(), "Previous approach failed") || !strings.Contains(cl[1].Prompt(), "beam_oracle") {
		t.Fatalf("classifier calls %d; the second must say why the first selection failed", len(cl))
	}
}

func TestGraphForwardInputKeyReplans(t *testing.T) {
	forward := `{"steps": [
	 {"context_key": "val", "capability": "channel_read", "task_objective": "read", "inputs": [{"CHANNEL_ADDRESSES": "ch"}]},
	 {"context_key": "ch", "capability": "channel_finding", "task_objective": "find", "expected_output": "CHANNEL_ADDRESSES"}]}`
	m := llmtest.New().
		Script(llm.RoleTaskExtraction, llmtest.Text(taskReply)).
		Script(llm.RoleClassifier, llmtest.Text(selectReply)).
		Script(llm.RoleOrchestrator, llmtest.Text(forward), llmtest.Text(goodPlanReply)).
		Script(llm.RoleResponse, llmtest.Text(answerReply))
	cfg := config(smallPlant(t), m, "")
	o := runTurn(t, cfg, "beam current?")
	checkAnswer(t, o, answerReply)
	calls := m.CallsFor(llm.RoleOrchestrator)
	if len(calls) != 2 || !strings.Contains(calls[1].Prompt(), "REPLANNING") || !strings.Contains(calls[1].Prompt(), "produced by step 2") {
		t.Fatalf("orchestrator calls %d; the second prompt must carry the failure:\n%s", len(calls), calls[len(calls)-1].Prompt())
	}
}

func TestGraphRateLimitHonoursRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := llmtest.New().
			Script(llm.RoleTaskExtraction, llmtest.Text(taskReply)).
			Script(llm.RoleClassifier, llmtest.Fail(&llm.Error{Kind: llm.ErrRateLimited, Role: llm.RoleClassifier, StatusCode: 429, Delay: 7 * time.Second}),
				llmtest.Text(selectReply)).
			Script(llm.RoleOrchestrator, llmtest.Text(goodPlanReply)).
			Script(llm.RoleResponse, llmtest.Text(answerReply))
		start := time.Now()
		o := runTurn(t, config(smallPlant(t), m, ""), "beam current?")
		checkAnswer(t, o, answerReply)
		retries := o.of(agent.EventRetry)
		if len(retries) != 1 || retries[0].Retry.Delay != 7*time.Second {
			t.Fatalf("retry events %+v, want one with the server's 7s", retries)
		}
		if waited := time.Since(start); waited < 7*time.Second {
			t.Errorf("the turn took %s; the retry must wait for Retry-After", waited)
		}
	})
}

func TestGraphRejectedKeyReachesErrorNode(t *testing.T) {
	m := llmtest.New().
		Script(llm.RoleTaskExtraction, llmtest.Text(taskReply)).
		Script(llm.RoleClassifier, llmtest.Fail(&llm.Error{Kind: llm.ErrAuth, Role: llm.RoleClassifier, StatusCode: 401, APIKeyEnv: "OPENAI_API_KEY"}))
	o := runTurn(t, config(smallPlant(t), m, ""), "beam current?")
	msg := o.message()
	if msg == nil || msg.Kind != state.KindErrorReport || !strings.Contains(msg.Content, "the API key for role classifier was rejected") {
		t.Fatalf("message %+v", msg)
	}
	if len(m.CallsFor(llm.RoleClassifier)) != 1 {
		t.Errorf("a rejected key must not be retried: %d calls", len(m.CallsFor(llm.RoleClassifier)))
	}
}

func TestGraphClassifierCallFailingForOneCapability(t *testing.T) {
	m := llmtest.New().
		Script(llm.RoleTaskExtraction, llmtest.Text(taskReply)).
		On(llmtest.PromptContains("Capability: channel_finding"), func(llm.Request) llmtest.Reply {
			return llmtest.Fail(&llm.Error{Kind: llm.ErrServer, Role: llm.RoleClassifier, StatusCode: 502})
		}).
		On(llmtest.RoleIs(llm.RoleClassifier), func(llm.Request) llmtest.Reply { return llmtest.Text(`{"is_match": true}`) }).
		Script(llm.RoleOrchestrator, llmtest.Text(goodPlanReply)).
		Script(llm.RoleResponse, llmtest.Text(answerReply))
	o := runTurn(t, config(smallPlant(t), m, nodes.PerCapability), "beam current?")
	checkAnswer(t, o, answerReply)
	found := false
	for _, e := range o.of(agent.EventStatus) {
		if e.Capability == "channel_finding" && strings.Contains(e.Text, "502") {
			found = true
		}
	}
	if !found {
		t.Errorf("no status event says channel_finding was not considered: %+v", o.of(agent.EventStatus))
	}
	// Dependency expansion still brings channel_finding in for channel_read.
	if caps := o.of(agent.EventCapabilities); len(caps) != 1 || !strings.Contains(strings.Join(caps[0].Capabilities, ","), "channel_finding") {
		t.Errorf("capabilities %+v", caps)
	}
	// The classifier's concurrent calls are each a model_call event of the
	// classifier node, the failed one with its error.
	var calls, failed int
	for _, e := range o.of(agent.EventModelCall) {
		if e.Node != "classifier" || e.Call == nil || e.Call.Role != string(llm.RoleClassifier) {
			continue
		}
		calls++
		if strings.Contains(e.Err, "502") {
			failed++
		}
	}
	if n := len(m.CallsFor(llm.RoleClassifier)); calls != n || n < 2 || failed != 1 {
		t.Errorf("%d classifier model_call events (%d failed) for %d calls", calls, failed, n)
	}
}

func TestGraphOfflineAnswer(t *testing.T) {
	o := runTurn(t, agent.Config{Registry: smallPlant(t)}, "What is the beam current?")
	checkAnswer(t, o, "SR:DCCT:CURRENT = 500.2 mA")
	if m := o.message(); !strings.Contains(m.Content, nodes.OfflineNotice) {
		t.Errorf("an offline answer must say so: %q", m.Content)
	}
}

func TestGraphRespondFailureEndsInErrorReport(t *testing.T) {
	m := llmtest.New().
		Script(llm.RoleTaskExtraction, llmtest.Text(taskReply)).
		Script(llm.RoleClassifier, llmtest.Text(selectReply)).
		Script(llm.RoleOrchestrator, llmtest.Text(goodPlanReply)).
		On(llmtest.RoleIs(llm.RoleResponse), func(llm.Request) llmtest.Reply {
			return llmtest.Fail(&llm.Error{Kind: llm.ErrServer, Role: llm.RoleResponse, StatusCode: 500})
		})
	cfg := config(smallPlant(t), m, "")
	cfg.Nodes.RetryPolicy = fastRetry()
	o := runTurn(t, cfg, "beam current?")
	msg := o.message()
	if msg == nil || msg.Kind != state.KindErrorReport {
		t.Fatalf("message %+v: a failing respond must end in the error node, never silently", msg)
	}
	if got := len(m.CallsFor(llm.RoleResponse)); got != 3 {
		t.Errorf("respond called %d times, want 3 (the retry policy's attempts)", got)
	}
}

func TestGraphClarify(t *testing.T) {
	m := llmtest.New().
		Script(llm.RoleTaskExtraction, llmtest.Text(`{"task": "show the vacuum", "depends_on_chat_history": false}`)).
		Script(llm.RoleClassifier, llmtest.Text(`{"capabilities": []}`)).
		Script(llm.RoleOrchestrator, llmtest.Text(`{"steps": [{"context_key": "q", "capability": "clarify", "task_objective": "which sector and time range"}]}`)).
		Script(llm.RoleResponse, llmtest.Text("1. Which sector?\n2. Now or over a time range?"))
	o := runTurn(t, config(smallPlant(t), m, ""), "show the vacuum")
	msg := o.message()
	if msg == nil || msg.Kind != state.KindClarification || msg.Content != "1. Which sector?\n2. Now or over a time range?" {
		t.Fatalf("message %+v", msg)
	}
	if p := m.CallsFor(llm.RoleResponse)[0].Prompt(); !strings.Contains(p, "What is unclear: which sector and time range") {
		t.Errorf("clarify prompt lacks the planner's reason:\n%s", p)
	}
}

func TestGraphPlansThatNeverValidateEndInErrorReport(t *testing.T) {
	forward := `{"steps": [
	 {"context_key": "val", "capability": "channel_read", "task_objective": "read", "inputs": [{"CHANNEL_ADDRESSES": "ch"}]},
	 {"context_key": "ch", "capability": "channel_finding", "task_objective": "find", "expected_output": "CHANNEL_ADDRESSES"}]}`
	m := llmtest.New().
		Script(llm.RoleTaskExtraction, llmtest.Text(taskReply)).
		Script(llm.RoleClassifier, llmtest.Text(selectReply)).
		On(llmtest.RoleIs(llm.RoleOrchestrator), func(llm.Request) llmtest.Reply { return llmtest.Text(forward) })
	o := runTurn(t, config(smallPlant(t), m, ""), "beam current?")
	msg := o.message()
	if msg == nil || msg.Kind != state.KindErrorReport || !strings.Contains(msg.Content, "available keys: (none)") {
		t.Fatalf("message %+v", msg)
	}
	if got := len(m.CallsFor(llm.RoleOrchestrator)); got != 2 {
		t.Errorf("orchestrator calls %d, want 2 (the default planning budget)", got)
	}
}
