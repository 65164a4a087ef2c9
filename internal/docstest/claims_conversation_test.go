package docstest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

// What docs/writing-capabilities.md says the human sees when a write asks
// for approval, on a compiled agent: the Definition.Approval summary when
// it gives one, else Action.Summary, else one written from the changes.
func TestApprovalShowsTheApprovalSummaryThenTheActions(t *testing.T) {
	for _, tc := range []struct {
		name, approval, action, want string
	}{
		{"both", "set Q1 from 92 A to 105 A (approval's words)", "Q1 to 105 A (action's words)", "set Q1 from 92 A to 105 A (approval's words)"},
		{"action only", "", "Q1 to 105 A (action's words)", "Q1 to 105 A (action's words)"},
		{"neither", "", "", "set_current: set BTS:MAG:Q1:CURRENT to 105 A"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := capabilities.Define(capabilities.Definition{
				Name: "set_current", Description: "Set the quadrupole Q1 magnet current to a value.", Provides: []string{"WRITE_RESULT"}, SideEffects: true,
				Action: func(capabilities.Step) (capabilities.Action, error) {
					return capabilities.Action{Summary: tc.action, Changes: []capabilities.Change{{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0, Unit: "A"}}}, nil
				},
				Approval: func(capabilities.Step) (bool, string) { return true, tc.approval },
				Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
					return capabilities.Result("WRITE_RESULT", 105.0, "Q1 set to 105 A"), nil
				},
			})
			reg := capabilities.NewRegistry()
			if err := reg.Register(c); err != nil {
				t.Fatal(err)
			}
			a, err := agent.New(agent.Config{Registry: reg, Options: state.Options{WritesEnabled: true}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var ap *state.Approval
			for e, err := range a.Run(ctx, agent.TurnRequest{Thread: fmt.Sprint(time.Now().UnixNano()), Input: "Set the quadrupole Q1 magnet current to 105 A"}) {
				if err != nil {
					t.Fatal(err)
				}
				if e.Type == agent.EventApprovalRequired {
					ap = e.Approval
				}
			}
			if ap == nil || ap.Summary != tc.want {
				t.Fatalf("approval %+v, want the summary %q", ap, tc.want)
			}
		})
	}
}

// What docs/web.md says of a conversation's title is what the page and
// the server do: the first question whatever client started the thread
// (the server stores it as its "title": server.TestThreadTitleFromFirstQuestion),
// else "Conversation" and the id's first 8 characters.
func TestWebTitleRuleIsThePagesRule(t *testing.T) {
	repo := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(repo, "docs", "web.md"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(repo, "server", "web", "app.js"))
	if err != nil {
		t.Fatal(err)
	}
	goSrc, err := os.ReadFile(filepath.Join(repo, "server", "runrecord.go"))
	if err != nil {
		t.Fatal(err)
	}
	claim := strings.Join(strings.Fields(string(doc)), " ")
	if !strings.Contains(claim, `title (the first question, whichever client started the conversation — the page, a chat client over `+"`/v1`"+`, AG-UI, MCP; "Conversation" and the first 8 characters of its id for one with no question yet; until renamed)`) {
		t.Fatal("docs/web.md no longer states the title rule this test checks")
	}
	for _, code := range []string{`(th.metadata && th.metadata.title) || "Conversation " + th.id.slice(0, 8)`, `metadata: { title: app.pendingTitle }`} {
		if !strings.Contains(string(js), code) {
			t.Errorf("server/web/app.js no longer has %q: update docs/web.md's title rule", code)
		}
	}
	if !strings.Contains(string(goSrc), "s.titleFromQuestion(ctx, sp, &t)") {
		t.Error("server/runrecord.go no longer titles a thread with its first question: update docs/web.md's title rule")
	}
}
