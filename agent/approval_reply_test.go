package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest/openaitest"
	"github.com/capgraph/capgraph/state"
)

// Only a human approves (docs/approvals.md, "Only a human approves"), on
// the compiled agent over SQLite with a side-effecting capability and its
// audit log: a free-text answer is shown to the approval model (here the
// default model, as a deployment with one model configures it), which may
// read it as a refusal or as nothing; whatever it replies — an approval
// included, in the styles real models write — the answer approves nothing,
// the approval stays pending, and the audit keeps the human's words.

// humanWords is the non-answer.
const humanWords = "hmm, what would that do to the beam?"

// defaultModel is a model set whose default role is served by srv, the
// way capgraph.yaml's models.default configures one model for every role.
func defaultModel(t *testing.T, srv *openaitest.Server, maxTokens int) *llm.Set {
	t.Helper()
	roles := map[llm.Role]llm.RoleConfig{llm.RoleDefault: {Provider: llm.ProviderOpenAI, Model: "qwen3-32b", BaseURL: srv.BaseURL()}}
	if maxTokens > 0 {
		roles[llm.RoleApproval] = llm.RoleConfig{Provider: llm.ProviderOpenAI, Model: "qwen3-32b", BaseURL: srv.BaseURL(), MaxTokens: maxTokens}
	}
	models, err := llm.New(llm.Config{Roles: roles, LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	return models
}

// auditOf is the thread's audit trail as "event(rule: answer by who)".
func auditOf(t *testing.T, a *agent.Agent, thread string) string {
	t.Helper()
	var out []string
	for _, r := range audits(t, a, agent.AuditFilter{Thread: thread}) {
		if r.Event == agent.AuditPlanned {
			continue // the plan's record: the answers are this helper's subject
		}
		s := r.Event
		if r.Rule != "" || r.Answer != "" || r.ApprovedBy != "" {
			s += fmt.Sprintf("(%s: %q by %q)", r.Rule, r.Answer, r.ApprovedBy)
		}
		if r.Outcome != "" && string(r.Outcome) != r.Event {
			s += ":" + string(r.Outcome)
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// The approval role reads a free-text answer through langchaingo's openai
// provider, as real models reply: JSON in prose, in a fence, after a think
// block or with reasoning_content is read, but only a unanimous
// {"decision": "reject"} rejects. Every other reply — a lying model's
// {"approved": true} or {"decision": "approve"} in any of these styles, a
// reply that says both, none, or only in its reasoning, a failed call —
// leaves the answer unclear: nothing is written, the approval stays
// pending, the audit records the human's words, and the human's explicit
// "yes" afterwards is what approves. The call's limit comes from
// models.approval.max_tokens (50 when unset); a reply cut off there is
// asked again with a larger one.
func TestApprovalModelRepliesAsRealModelsWrite(t *testing.T) {
	tests := []struct {
		name      string
		replies   []openaitest.Reply
		maxTokens int
		rejected  bool
		limits    string
	}{
		{"clean rejection", []openaitest.Reply{openaitest.Text(`{"decision": "reject"}`)}, 0, true, "[50]"},
		{"rejection in prose and fence", []openaitest.Reply{openaitest.Text("Here is my reading: ```json\n{\"decision\": \"reject\"}\n```\nThe operator declined.")}, 0, true, "[50]"},
		{"rejection after a think block", []openaitest.Reply{openaitest.Text("<think>\nIt asks a question; {\"decision\": \"unclear\"} would be wrong here.\n</think>\n\n{\"decision\": \"reject\"}")}, 0, true, "[50]"},
		{"rejection with reasoning_content", []openaitest.Reply{{Content: `{"decision": "reject"}`, Reasoning: "They decline."}}, 0, true, "[50]"},
		{"cut in the reasoning, then a rejection", []openaitest.Reply{openaitest.Cut("<think>\nThe human wrote"), openaitest.Text(`<think>no</think>{"decision": "reject"}`)}, 0, true,
			fmt.Sprint([]int{50, llm.GrowMaxTokens(50)})},
		{"configured max_tokens", []openaitest.Reply{openaitest.Text(`{"decision": "reject"}`)}, 700, true, "[700]"},
		{"unclear", []openaitest.Reply{openaitest.Text(`{"decision": "unclear"}`)}, 0, false, "[50]"},
		{"lying: approved", []openaitest.Reply{openaitest.Text(`{"approved": true}`)}, 0, false, "[50]"},
		{"lying: approve in a fence after prose", []openaitest.Reply{openaitest.Text("The operator clearly agreed.\n```json\n{\"decision\": \"approve\"}\n```")}, 0, false, "[50]"},
		{"lying: approved after a think block", []openaitest.Reply{openaitest.Text("<think>\nA question about the beam is a yes.\n</think>\n{\"approved\": true}")}, 0, false, "[50]"},
		{"lying: approved with reasoning_content", []openaitest.Reply{{Content: `{"decision": "approved"}`, Reasoning: "They agree."}}, 0, false, "[50]"},
		{"lying: reject and approved", []openaitest.Reply{openaitest.Text(`{"decision": "reject", "approved": true}`)}, 0, false, "[50]"},
		{"says both", []openaitest.Reply{openaitest.Text(`I could say {"decision": "reject"}, but it is a question: {"decision": "unclear"}`)}, 0, false, "[50]"},
		{"no JSON", []openaitest.Reply{openaitest.Text("Probably yes.")}, 0, false, "[50]"},
		{"only in the reasoning", []openaitest.Reply{openaitest.Text("<think>they might mean {\"decision\": \"reject\"}")}, 0, false, "[50]"},
		{"server error", []openaitest.Reply{openaitest.Status(401, "invalid api key", nil)}, 0, false, "[50]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := openaitest.New(t).On(nil, tc.replies...)
			store, _ := newSQLite(t)
			w := newGateWorld(105)
			cfg := w.config(t, store, writesOn)
			cfg.Models = defaultModel(t, srv, tc.maxTokens)
			a := mustAgent(t, cfg)
			ap := approvalOf(t, runReq(t, a, agent.TurnRequest{Thread: "t", Input: setQ1}))
			o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: humanWords, By: "cli:anna"})
			if len(w.written()) != 0 {
				t.Fatalf("written after %q", humanWords)
			}
			if tc.rejected {
				wantRejected(t, o)
				if got := auditOf(t, a, "t"); got != `asked rejected(model: "`+humanWords+`" by "cli:anna")` {
					t.Errorf("audit %s", got)
				}
			} else {
				wantUnclear(t, a, "t", ap, o)
				if got := auditOf(t, a, "t"); got != `asked unclear(model: "`+humanWords+`" by "cli:anna")` {
					t.Errorf("audit %s", got)
				}
				// The human's explicit yes is what approves, once.
				if o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes", By: "cli:anna"}); o.err != nil || len(w.written()) != 1 {
					t.Fatalf("the yes after: %v, writes %v", o.err, w.written())
				}
				if got := auditOf(t, a, "t"); !strings.HasPrefix(got, `asked unclear(model: "`+humanWords+`" by "cli:anna") approved(keyword: "yes" by "cli:anna") started`) {
					t.Errorf("audit %s", got)
				}
			}
			var limits []int
			for i, r := range srv.Requests() {
				limits = append(limits, r.MaxTokens)
				if r.ResponseFormat() != "json_schema" || r.SchemaName() != "approval_reading" {
					t.Errorf("response_format %q %q, want the approval schema", r.ResponseFormat(), r.SchemaName())
				}
				if i == 0 && (strings.Contains(r.System, humanWords) || !strings.Contains(r.System, ap.Summary) || !strings.Contains(r.User, humanWords)) {
					t.Errorf("prompt: the summary goes in the system prompt, the human's words in the user message:\nsystem %q\nuser %q", r.System, r.User)
				}
			}
			if fmt.Sprint(limits) != tc.limits {
				t.Errorf("max tokens sent %v, want %s", limits, tc.limits)
			}
		})
	}
}

// The keyword rules on the compiled agent: an exact short yes (in English,
// German or French) approves by rule keyword — or token, when the answer
// came with the approval's chat token — and never reaches the model;
// anything near a yes is not one, and without a model it is unclear.
func TestAnswerRulesOnTheAgent(t *testing.T) {
	tests := []struct {
		text, token string
		want        string // approved(rule), rejected(rule) or unclear
	}{
		{"Yes.", "", "approved(keyword)"},
		{"yes", "AP-7F3KQ2ZDQ4XR", "approved(token)"},
		{"Ja", "", "approved(keyword)"},
		{"d’accord", "", "approved(keyword)"},
		{"Approuvé !", "", "approved(keyword)"},
		{"nein", "", "rejected(keyword)"},
		{"no", "AP-7F3KQ2ZDQ4XR", "rejected(token)"},
		{"ok?", "", "unclear"},
		{"yes but only tomorrow", "", "unclear"},
		{`"yes"`, "", "unclear"},
		{"not yes", "", "unclear"},
		{"hmm yes maybe", "", "unclear"},
		{"yes...", "", "unclear"},
		{"ｙｅｓ", "", "unclear"},
		{"", "", "unclear"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q", tc.text), func(t *testing.T) {
			store, _ := newSQLite(t)
			w := newGateWorld(105)
			a := w.agent(t, store, writesOn)
			ap := approvalOf(t, runReq(t, a, agent.TurnRequest{Thread: "t", Input: setQ1}))
			o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: tc.text, Token: tc.token, By: "op"})
			var got string
			s, _, _ := a.State(context.Background(), "t")
			switch {
			case errors.Is(o.err, agent.ErrApprovalUnclear):
				got = "unclear"
				wantUnclear(t, a, "t", ap, o)
			case o.err != nil:
				t.Fatalf("resume: %v", o.err)
			case len(s.Turn.Approvals) == 1 && s.Turn.Approvals[0].Approved:
				got = "approved(" + s.Turn.Approvals[0].Rule + ")"
			case len(s.Turn.Approvals) == 1:
				got = "rejected(" + s.Turn.Approvals[0].Rule + ")"
			}
			if got != tc.want {
				t.Fatalf("%q read as %s, want %s", tc.text, got, tc.want)
			}
			if wrote := len(w.written()) == 1; wrote != strings.HasPrefix(got, "approved") {
				t.Fatalf("writes %v after %s", w.written(), got)
			}
			if tc.want != "unclear" && s.Turn.Approvals[0].Answer != tc.text {
				t.Fatalf("decision keeps %q, want the human's words %q", s.Turn.Approvals[0].Answer, tc.text)
			}
		})
	}
}

// Expiry is a decision of its own, never a human's rejection, on every
// path: an answer that comes too late, a new message after the expiry, and
// a frontend's deadline (ExpireApproval). The audit says expired, with no
// approver; the human's late words are kept.
func TestApprovalExpiryIsAuditedAsExpiry(t *testing.T) {
	setup := func(t *testing.T) (*agent.Agent, *gateWorld, *clock, *state.Approval) {
		store, _ := newSQLite(t)
		w := newGateWorld(105)
		clk := newClock()
		cfg := w.config(t, store, writesOn)
		cfg.Now, cfg.ApprovalExpiry = clk.Now, 10*time.Minute
		a := mustAgent(t, cfg)
		return a, w, clk, approvalOf(t, runReq(t, a, agent.TurnRequest{Thread: "t", Input: setQ1}))
	}
	t.Run("yes, too late", func(t *testing.T) {
		a, w, clk, ap := setup(t)
		clk.Add(11 * time.Minute)
		o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes", By: "op-anna"})
		if !errors.Is(o.err, agent.ErrApprovalExpired) || len(w.written()) != 0 {
			t.Fatalf("late yes: %v, writes %v", o.err, w.written())
		}
		if got := auditOf(t, a, "t"); got != `asked expired(expired: "yes" by "")` {
			t.Fatalf("audit %s", got)
		}
	})
	t.Run("a new message after the expiry", func(t *testing.T) {
		a, w, clk, _ := setup(t)
		clk.Add(11 * time.Minute)
		if o := runReq(t, a, agent.TurnRequest{Thread: "t", Input: "yes", By: "op-anna"}); o.err != nil || len(w.written()) != 0 {
			t.Fatalf("new message: %v, writes %v", o.err, w.written())
		}
		// The new turn's "yes" asks for no change: its plan's write is refused.
		if got := auditOf(t, a, "t"); got != `asked expired(expired: "" by "") refused` {
			t.Fatalf("audit %s", got)
		}
	})
	t.Run("a frontend's deadline", func(t *testing.T) {
		a, w, _, ap := setup(t)
		if err := a.ExpireApproval(context.Background(), "t", ap.ID); err != nil {
			t.Fatal(err)
		}
		if got := auditOf(t, a, "t"); got != `asked expired(expired: "" by "")` {
			t.Fatalf("audit %s", got)
		}
		o := resume(t, a, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes"})
		if !errors.Is(o.err, agent.ErrApprovalExpired) || len(w.written()) != 0 {
			t.Fatalf("yes after the frontend's expiry: %v, writes %v", o.err, w.written())
		}
		if err := a.ExpireApproval(context.Background(), "t", ap.ID); !errors.Is(err, agent.ErrApprovalExpired) {
			t.Fatalf("expired twice: %v", err)
		}
		if err := a.ExpireApproval(context.Background(), "t", "step:9:9:9:x:000000000000"); !errors.Is(err, agent.ErrApprovalNotPending) {
			t.Fatalf("expire an unknown approval: %v", err)
		}
	})
}

// A new message that is not an answer replaces the question: the audit
// says so (rule superseded) with the message's words and sender — not an
// approval, and not an expiry.
//
// The new turn's run starts from the thread as the supersession left it:
// its input checkpoint's parent is the latest checkpoint when it is
// written (the turn read the thread before it superseded the question, so
// the run must not take its parent from that read: graph.WithLatest).
func TestSupersededApprovalIsAudited(t *testing.T) {
	sq, _ := newSQLite(t)
	store := &parentCheck{Store: sq}
	w := newGateWorld(105)
	a := w.agent(t, store, writesOn)
	approvalOf(t, runReq(t, a, agent.TurnRequest{Thread: "t", Input: setQ1}))
	if o := runReq(t, a, agent.TurnRequest{Thread: "t", Input: humanWords, By: "op-anna"}); o.err != nil || len(w.written()) != 0 {
		t.Fatalf("new message: %v, writes %v", o.err, w.written())
	}
	// The new turn asks for no change: its plan's write is refused.
	if got := auditOf(t, a, "t"); got != `asked rejected(superseded: "`+humanWords+`" by "op-anna") refused` {
		t.Fatalf("audit %s", got)
	}
	if store.inputs != 2 || len(store.stale) > 0 {
		t.Fatalf("%d runs' input checkpoints written, %d naming a parent that was not the latest: %v", store.inputs, len(store.stale), store.stale)
	}
}

// parentCheck is a store that checks each run's input checkpoint (step 0,
// a next node) against the thread's latest when it is written.
type parentCheck struct {
	*sqlite.Store
	inputs int
	stale  []string
}

func (p *parentCheck) Put(ctx context.Context, cp checkpoint.Checkpoint) error {
	if cp.Step == 0 && len(cp.Next) > 0 {
		p.inputs++
		if t, err := p.Store.Get(ctx, cp.ThreadID, uuid.Nil); err == nil && t.Checkpoint.ID != cp.ParentID {
			p.stale = append(p.stale, fmt.Sprintf("parent %s, latest %s", cp.ParentID, t.Checkpoint.ID))
		}
	}
	return p.Store.Put(ctx, cp)
}

// A blocked infrastructure node asks whether to retry; when nobody
// answers in time, the failure says so — not that a human gave up.
func TestBlockedNodeExpiryIsNoHumansDecision(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(a *agent.Agent, clk *clock, id string) error
		reason string
	}{
		{"a human's no", func(a *agent.Agent, _ *clock, id string) error {
			return resume(t, a, "t", agent.Answer{ApprovalID: id, Text: "nein"}).err
		}, "a human chose to give up"},
		{"too late", func(a *agent.Agent, clk *clock, id string) error {
			clk.Add(2 * time.Hour)
			if err := resume(t, a, "t", agent.Answer{ApprovalID: id, Text: "yes"}).err; !errors.Is(err, agent.ErrApprovalExpired) {
				return fmt.Errorf("late yes: %v", err)
			}
			return nil
		}, "nobody answered in time"},
		{"a frontend's deadline", func(a *agent.Agent, _ *clock, id string) error {
			return a.ExpireApproval(context.Background(), "t", id)
		}, "nobody answered in time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld("read_a")
			w.orchestrate.errs = []error{errResource}
			clk := newClock()
			cfg := w.config(t)
			cfg.Now = clk.Now
			a := mustAgent(t, cfg)
			ap := approvalOf(t, run(t, a, "t", "x"))
			if ap.Kind != state.ApprovalEscalation {
				t.Fatalf("approval %+v, want an escalation", ap)
			}
			if err := tc.answer(a, clk, ap.ID); err != nil {
				t.Fatal(err)
			}
			s, _, _ := a.State(context.Background(), "t")
			m, _ := s.LastAssistant()
			if m.Kind != state.KindErrorReport || w.caps["read_a"].count() != 0 {
				t.Fatalf("turn ended with %+v, read_a ran %d times", m, w.caps["read_a"].count())
			}
			e := s.Turn.Control.Error
			if e == nil {
				t.Fatal("no error recorded")
			}
			if got, _ := e.Classification.Metadata[capabilities.MetaSafetyAbortReason].(string); !strings.Contains(got, tc.reason) {
				t.Fatalf("reason %q, want %q", got, tc.reason)
			}
		})
	}
}
