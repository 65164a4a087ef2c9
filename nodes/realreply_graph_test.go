package nodes_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest/openaitest"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/state"
)

// System prompt openings of the roles (prompts/templates), to route the
// scripted server's replies.
var (
	taskPrompt     = openaitest.SystemContains("You convert a chat into one self-contained task")
	batchedPrompt  = openaitest.SystemContains("Select every capability needed")
	perCapPrompt   = openaitest.SystemContains("Decide whether the capability below is needed")
	planPrompt     = openaitest.SystemContains("You are an expert execution planner")
	responsePrompt = openaitest.SystemContains("Answer the user's task from the results")
	errorPrompt    = openaitest.SystemContains("why their request to an assistant failed")
)

// realModels configures roles on langchaingo's openai provider, pointed at
// the scripted server (other roles run offline).
func realModels(t *testing.T, srv *openaitest.Server, rc func(llm.Role, *llm.RoleConfig), roles ...llm.Role) *llm.Set {
	t.Helper()
	cfg := llm.Config{Roles: map[llm.Role]llm.RoleConfig{}, LookupEnv: func(string) (string, bool) { return "", false }}
	for _, r := range roles {
		c := llm.RoleConfig{Provider: llm.ProviderOpenAI, Model: "qwen3-32b", BaseURL: srv.BaseURL()}
		if rc != nil {
			rc(r, &c)
		}
		cfg.Roles[r] = c
	}
	ms, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func realConfig(ms llm.Models, mode nodes.ClassifierMode) agent.Config {
	return agent.Config{Registry: nil, Models: ms, Nodes: everyCall(nodes.Config{ClassifierMode: mode, RetryPolicy: fastRetry()})}
}

// seen is everything the user saw: the streamed answer as a frontend shows
// it (shown) and the final message.
func seen(o turn) string {
	s := shown(o.events)
	if m := o.message(); m != nil {
		s += "\n---\n" + m.Content
	}
	return s
}

// Reasoning markers the styles put into replies; none may reach the user.
var reasoningMarkers = []string{"<think", "</think", "maybe", "Let me think", "Okay, let me", "draft"}

func noReasoningShown(t *testing.T, o turn) {
	t.Helper()
	s := seen(o)
	for _, e := range o.events {
		if e.Type == agent.EventToken || e.Type == agent.EventStatus || e.Type == agent.EventTask {
			s += "\n" + e.Text
		}
	}
	for _, m := range reasoningMarkers {
		if strings.Contains(s, m) {
			t.Errorf("the user saw %q:\n%s", m, s)
		}
	}
}

// replyStyle writes a reply the way one kind of real model does: JSON for
// the JSON roles, text for the answer. seq gives the replies in order (the
// last one repeats).
type replyStyle struct {
	name string
	seq  func(body string) []openaitest.Reply
	// calls is how many calls each role takes.
	calls int
}

var styles = []replyStyle{
	{"clean", func(b string) []openaitest.Reply { return []openaitest.Reply{openaitest.Text(b)} }, 1},
	{"fenced", func(b string) []openaitest.Reply {
		if strings.HasPrefix(b, "{") {
			b = "```json\n" + b + "\n```"
		}
		return []openaitest.Reply{openaitest.Text(b)}
	}, 1},
	{"prose-wrapped", func(b string) []openaitest.Reply {
		if strings.HasPrefix(b, "{") {
			b = "Here is my answer:\n" + b + "\nLet me know if you need anything else!"
		}
		return []openaitest.Reply{openaitest.Text(b)}
	}, 1},
	{"reasoning_content", func(b string) []openaitest.Reply {
		return []openaitest.Reply{{Content: b, Reasoning: "Let me think. The user wants the current {\"maybe\": 1}."}}
	}, 1},
	{"think block with braces", func(b string) []openaitest.Reply {
		return []openaitest.Reply{openaitest.Text("<think>\nLet me think. Maybe {\"maybe\": 1} or a draft {\"task\": \"draft\", \"capabilities\": [\"draft\"]}?\n</think>\n\n" + b)}
	}, 1},
	{"think opened in the prompt", func(b string) []openaitest.Reply {
		return []openaitest.Reply{openaitest.Text("Okay, let me see what {\"maybe\": 1} means here.\n</think>\n\n" + b)}
	}, 1},
	{"unterminated think cut by the limit", func(b string) []openaitest.Reply {
		return []openaitest.Reply{openaitest.Cut("<think>\nLet me think about {\"maybe\": 1} and whether"), openaitest.Text("<think>short</think>" + b)}
	}, 2},
	{"429 with Retry-After", func(b string) []openaitest.Reply {
		return []openaitest.Reply{openaitest.Status(429, "Rate limit reached", map[string]string{"Retry-After": "0.02"}), openaitest.Text(b)}
	}, 2},
}

// Each reply style real models use, on every role of the compiled agent,
// through langchaingo's openai provider: the turn answers, the user sees no
// reasoning, and no reply is rejected (no extra calls beyond the style's).
func TestGraphRealProviderReplyStyles(t *testing.T) {
	for _, st := range styles {
		t.Run(st.name, func(t *testing.T) {
			srv := openaitest.New(t).
				On(taskPrompt, st.seq(taskReply)...).
				On(batchedPrompt, st.seq(selectReply)...).
				On(planPrompt, st.seq(goodPlanReply)...).
				On(responsePrompt, st.seq(answerReply)...)
			cfg := realConfig(realModels(t, srv, func(_ llm.Role, rc *llm.RoleConfig) { rc.MaxTokens = 2500 }, nodeRoles...), nodes.Batched)
			cfg.Registry = smallPlant(t)
			o := runTurn(t, cfg, "What is the beam current?")
			checkAnswer(t, o, answerReply)
			noReasoningShown(t, o)
			if m := o.message(); strings.Contains(m.Content, "incomplete") {
				t.Errorf("a complete answer got a note: %q", m.Content)
			}
			for name, p := range map[string]openaitest.Matcher{"task": taskPrompt, "classifier": batchedPrompt, "plan": planPrompt, "response": responsePrompt} {
				reqs := srv.Matching(p)
				if len(reqs) != st.calls {
					t.Errorf("%s: %d calls, want %d", name, len(reqs), st.calls)
					continue
				}
				if name != "response" && reqs[0].ResponseFormat() != "json_schema" {
					t.Errorf("%s: response_format %q, want structured output", name, reqs[0].ResponseFormat())
				}
				if st.name == "unterminated think cut by the limit" && reqs[1].MaxTokens <= reqs[0].MaxTokens {
					t.Errorf("%s: asked again with %d tokens after a cut at %d", name, reqs[1].MaxTokens, reqs[0].MaxTokens)
				}
			}
		})
	}
}

// An answer cut off by the token limit is asked again with a larger limit;
// the user's screen drops the cut text first (answer_reset).
func TestGraphRealProviderCutAnswerRetried(t *testing.T) {
	cut := "The stored beam current in the storage ring (DCCT) is"
	srv := openaitest.New(t).
		On(taskPrompt, openaitest.Text(taskReply)).On(batchedPrompt, openaitest.Text(selectReply)).On(planPrompt, openaitest.Text(goodPlanReply)).
		On(responsePrompt, openaitest.Cut(cut), openaitest.Text(cut+" 500.2 mA."))
	cfg := realConfig(realModels(t, srv, func(r llm.Role, rc *llm.RoleConfig) { rc.MaxTokens = 16 }, nodeRoles...), nodes.Batched)
	cfg.Registry = smallPlant(t)
	o := runTurn(t, cfg, "What is the beam current?")
	checkAnswer(t, o, cut+" 500.2 mA.")
	if len(o.of(agent.EventAnswerReset)) != 1 {
		t.Errorf("answer resets %d, want one before the larger try", len(o.of(agent.EventAnswerReset)))
	}
	if got := seen(o); !strings.HasPrefix(got, cut+" 500.2 mA.\n---\n") {
		t.Errorf("the user saw %q", got)
	}
	reqs := srv.Matching(responsePrompt)
	if len(reqs) != 2 || reqs[0].MaxTokens != 16 || reqs[1].MaxTokens != llm.GrowMaxTokens(16) {
		t.Errorf("response calls with limits %v", reqs)
	}
}

// An answer still cut after the larger try is shown and stored with a note
// saying so — never as if complete.
func TestGraphRealProviderCutAnswerMarked(t *testing.T) {
	cut := "The stored beam current in the storage ring (DCCT) is"
	srv := openaitest.New(t).
		On(taskPrompt, openaitest.Text(taskReply)).On(batchedPrompt, openaitest.Text(selectReply)).On(planPrompt, openaitest.Text(goodPlanReply)).
		On(responsePrompt, openaitest.Cut(cut))
	cfg := realConfig(realModels(t, srv, func(r llm.Role, rc *llm.RoleConfig) { rc.MaxTokens = 16 }, nodeRoles...), nodes.Batched)
	cfg.Registry = smallPlant(t)
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var o turn
	for ev, err := range a.Run(context.Background(), agent.TurnRequest{Thread: "cut", Input: "What is the beam current?"}) {
		o.events = append(o.events, ev)
		if err != nil {
			t.Fatal(err)
		}
	}
	m := o.message()
	if m == nil || m.Kind != state.KindAnswer || !strings.HasPrefix(m.Content, cut) || !strings.Contains(m.Content, "This answer is incomplete: it was cut off at the model's limit of 4096 tokens") ||
		!strings.Contains(m.Content, "models.response.max_tokens") {
		t.Fatalf("message %+v", m)
	}
	if got := seen(o); !strings.Contains(got[:strings.Index(got, "\n---\n")], "This answer is incomplete") {
		t.Errorf("the streamed answer lacks the note: %q", got)
	}
	s, _, err := a.State(context.Background(), "cut")
	if err != nil {
		t.Fatal(err)
	}
	if last := s.Messages[len(s.Messages)-1]; !strings.Contains(last.Content, "incomplete") {
		t.Errorf("stored without the note: %q", last.Content)
	}
}

// A JSON reply cut off by the token limit is asked again with larger limits,
// then the turn ends in a report that says which max_tokens to raise — not
// in three identical calls that are cut again.
func TestGraphRealProviderCutJSONSaysRaiseMaxTokens(t *testing.T) {
	srv := openaitest.New(t).On(taskPrompt, openaitest.Cut(`{"task": "What is the beam cur`))
	cfg := realConfig(realModels(t, srv, func(r llm.Role, rc *llm.RoleConfig) { rc.MaxTokens = 5000 }, nodeRoles...), nodes.Batched)
	cfg.Registry = smallPlant(t)
	o := runTurn(t, cfg, "What is the beam current?")
	m := o.message()
	if m == nil || m.Kind != state.KindErrorReport || !strings.Contains(m.Content, "Raise models.task_extraction.max_tokens") ||
		!strings.Contains(m.Content, "cut off at 20000 tokens") {
		t.Fatalf("message %+v\nevents %+v", m, o.events)
	}
	var limits []int
	for _, r := range srv.Requests() {
		limits = append(limits, r.MaxTokens)
	}
	if fmt.Sprint(limits) != "[5000 10000 20000]" {
		t.Errorf("limits sent %v, want doubled twice and no blind retry", limits)
	}
}

// The batched classifier's wrong capability names are left out and
// reported; the answer still comes from the right one.
func TestGraphRealProviderWrongCapabilityNames(t *testing.T) {
	srv := openaitest.New(t).
		On(taskPrompt, openaitest.Text(taskReply)).
		On(batchedPrompt, openaitest.Text(`{"capabilities": ["channel_reader", "Channel_Read", "channel_read"]}`)).
		On(planPrompt, openaitest.Text(goodPlanReply)).On(responsePrompt, openaitest.Text(answerReply))
	cfg := realConfig(realModels(t, srv, nil, nodeRoles...), nodes.Batched)
	cfg.Registry = smallPlant(t)
	o := runTurn(t, cfg, "What is the beam current?")
	checkAnswer(t, o, answerReply)
	var notes []string
	for _, e := range o.of(agent.EventStatus) {
		if strings.Contains(e.Text, "was not considered") {
			notes = append(notes, e.Capability)
		}
	}
	if fmt.Sprint(notes) != "[channel_reader Channel_Read]" {
		t.Errorf("reported names %v", notes)
	}
	// The schema lists the registered names, so a server with structured
	// output cannot produce the wrong ones.
	rf := srv.Matching(batchedPrompt)[0].Body["response_format"].(map[string]any)
	if !strings.Contains(fmt.Sprint(rf), "enum:[channel_finding channel_read]") {
		t.Errorf("selection schema %v", rf)
	}
}

// Format errors are re-prompted with the parse error, the expected shape
// and the previous reply in task extraction and the batched classifier (as
// in the orchestrator): the retry's prompt differs from the first.
func TestGraphFormatErrorsReprompted(t *testing.T) {
	srv := openaitest.New(t).
		On(taskPrompt, openaitest.Text(`{"task": "What is the beam current?", "Depends_on_chat_history": false}`), openaitest.Text(taskReply)).
		On(batchedPrompt, openaitest.Text(`Sure! The capabilities are channel_read.`), openaitest.Text(selectReply)).
		On(planPrompt, openaitest.Text(goodPlanReply)).On(responsePrompt, openaitest.Text(answerReply))
	cfg := realConfig(realModels(t, srv, nil, nodeRoles...), nodes.Batched)
	cfg.Registry = smallPlant(t)
	o := runTurn(t, cfg, "What is the beam current?")
	checkAnswer(t, o, answerReply)
	for _, tc := range []struct {
		name       string
		prompt     openaitest.Matcher
		parseError string
		shape      string
		previous   string
	}{
		{"task extraction", taskPrompt, `unknown key(s) "Depends_on_chat_history"`, nodes.TaskShape, `"Depends_on_chat_history": false`},
		{"classifier", batchedPrompt, "the reply contains no JSON object", nodes.SelectedShape, "Sure! The capabilities are channel_read."},
	} {
		reqs := srv.Matching(tc.prompt)
		if len(reqs) != 2 {
			t.Fatalf("%s: %d calls", tc.name, len(reqs))
		}
		// The failure is the turn's content: the system prompt stays the
		// same bytes (the provider's cache still serves it), the user
		// message says what was wrong.
		if reqs[0].User == reqs[1].User {
			t.Errorf("%s: the retry's user message is byte-identical to the first", tc.name)
		}
		if reqs[0].System != reqs[1].System {
			t.Errorf("%s: the retry changed the system prompt", tc.name)
		}
		for _, want := range []string{"Your previous reply could not be used: ", tc.parseError, "in this shape: " + tc.shape, "Previous reply:\n", tc.previous} {
			if !strings.Contains(reqs[1].User, want) {
				t.Errorf("%s: retry prompt lacks %q:\n%s", tc.name, want, reqs[1].User)
			}
		}
	}
}

// Per-capability classification: an unusable reply for one capability is
// asked again with its parse error shown, instead of the capability being
// dropped; the answer has the value.
func TestGraphPerCapabilityMalformedReplyRetried(t *testing.T) {
	for _, bad := range []openaitest.Reply{
		openaitest.Text("Yes, channel_read is needed."),
		openaitest.Text(`{"match": true}`),
		openaitest.Text("<think>Is it {\"maybe\": 1}?"), // cut in the reasoning without saying so
	} {
		srv := openaitest.New(t).
			On(taskPrompt, openaitest.Text(taskReply)).
			On(openaitest.SystemContains("Capability: channel_read"), bad, openaitest.Text(`{"is_match": true}`)).
			On(perCapPrompt, openaitest.Text(`{"is_match": false}`)).
			On(planPrompt, openaitest.Text(goodPlanReply)).On(responsePrompt, openaitest.Text(answerReply))
		cfg := realConfig(realModels(t, srv, nil, nodeRoles...), nodes.PerCapability)
		cfg.Registry = smallPlant(t)
		o := runTurn(t, cfg, "What is the beam current?")
		checkAnswer(t, o, answerReply)
		caps := o.of(agent.EventCapabilities)
		if len(caps) == 0 || !strings.Contains(fmt.Sprint(caps[len(caps)-1].Capabilities), "channel_read") {
			t.Fatalf("reply %q: selection %v", bad.Content, caps)
		}
		reqs := srv.Matching(openaitest.SystemContains("Capability: channel_read"))
		if len(reqs) != 2 || !strings.Contains(reqs[1].User, "Your previous reply could not be used") || !strings.Contains(reqs[1].User, nodes.MatchShape) {
			t.Errorf("reply %q: channel_read asked %d times; retry prompt:\n%s", bad.Content, len(reqs), reqs[len(reqs)-1].User)
		}
		if n := len(srv.Matching(openaitest.SystemContains("Capability: channel_finding"))); n != 1 {
			t.Errorf("channel_finding asked %d times, want once (only the bad reply is asked again)", n)
		}
	}
}

// Still unusable after the in-place retry, the classifier fails RETRIABLE
// (its retry shows the error again) — the capability is never silently lost.
func TestGraphPerCapabilityStillMalformedFailsRetriable(t *testing.T) {
	srv := openaitest.New(t).
		On(taskPrompt, openaitest.Text(taskReply)).
		On(openaitest.SystemContains("Capability: channel_read"), openaitest.Text("yes"), openaitest.Text("yes!"), openaitest.Text(`{"is_match": true}`)).
		On(perCapPrompt, openaitest.Text(`{"is_match": false}`)).
		On(planPrompt, openaitest.Text(goodPlanReply)).On(responsePrompt, openaitest.Text(answerReply))
	cfg := realConfig(realModels(t, srv, nil, nodeRoles...), nodes.PerCapability)
	cfg.Registry = smallPlant(t)
	o := runTurn(t, cfg, "What is the beam current?")
	checkAnswer(t, o, answerReply)
	retries := o.of(agent.EventRetry)
	if len(retries) != 1 || retries[0].Node != state.NodeClassifier || !strings.Contains(retries[0].Retry.Reason, "channel_read") {
		t.Fatalf("retries %+v", retries)
	}
	reqs := srv.Matching(openaitest.SystemContains("Capability: channel_read"))
	if len(reqs) != 3 || !strings.Contains(reqs[2].User, "Previous reply:\nyes!") {
		t.Errorf("channel_read asked %d times; the node's retry prompt:\n%s", len(reqs), reqs[len(reqs)-1].User)
	}
}

// exploding is an application's own llm.Model and llm.Models.
type exploding struct{}

func (exploding) For(llm.Role) (llm.Model, bool) { return exploding{}, true }
func (exploding) Generate(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, errors.New("backend exploded")
}

// Errors of an application's own model name the role that failed.
func TestGraphCustomModelErrorsNameTheRole(t *testing.T) {
	cfg := agent.Config{Registry: smallPlant(t), Models: exploding{}, Nodes: everyCall(nodes.Config{RetryPolicy: fastRetry()}),
		InfraRetry: map[string]capabilities.RetryPolicy{}}
	o := runTurn(t, cfg, "What is the beam current?")
	m := o.message()
	if m == nil || m.Kind != state.KindErrorReport {
		t.Fatalf("message %+v", m)
	}
	if !strings.Contains(m.Content, "role task_extraction") || strings.Contains(m.Content, "role  ") || strings.Contains(m.Content, "role :") {
		t.Errorf("the report does not name the role:\n%s", m.Content)
	}
	for _, r := range o.of(agent.EventRetry) {
		if !strings.Contains(r.Retry.Reason, "role task_extraction") {
			t.Errorf("retry reason %q", r.Retry.Reason)
		}
	}
}

// The error role's explanation has its reasoning stripped, and its limit
// comes from models.error.max_tokens (300 when unset).
func TestGraphErrorRoleStripsReasoningAndUsesMaxTokens(t *testing.T) {
	for _, limit := range []int{0, 900} {
		srv := openaitest.New(t).
			On(taskPrompt, openaitest.Status(401, "Incorrect API key provided", nil)).
			On(errorPrompt, openaitest.Text("<think>\nThe key {\"maybe\": 1} was wrong.\n</think>\n\nThe assistant could not reach its language model because the API key was rejected. Ask an administrator to check it."))
		ms := realModels(t, srv, func(r llm.Role, rc *llm.RoleConfig) {
			if r == llm.RoleError {
				rc.MaxTokens = limit
			}
		}, llm.RoleTaskExtraction, llm.RoleError)
		o := runTurn(t, agent.Config{Registry: smallPlant(t), Models: ms, Nodes: everyCall(nodes.Config{})}, "What is the beam current?")
		m := o.message()
		if m == nil || m.Kind != state.KindErrorReport || !strings.Contains(m.Content, "**Analysis:** The assistant could not reach its language model") {
			t.Fatalf("message %+v", m)
		}
		noReasoningShown(t, o)
		want := limit
		if want == 0 {
			want = 300
		}
		if got := srv.Matching(errorPrompt)[0].MaxTokens; got != want {
			t.Errorf("max_tokens %d: the error role asked for %d tokens, want %d", limit, got, want)
		}
	}
}
