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

// What docs/writing-capabilities.md says of a side effect's summary, on a
// compiled agent: there is one, the Action's (else one written from the
// changes); the human approves it and the audit log records it; a
// Definition that also gives Approval is refused at registration, naming
// it.
func TestApprovalShowsTheActionsSummaryAndTheAuditRecordsIt(t *testing.T) {
	for _, tc := range []struct {
		name, action, want string
	}{
		{"action's summary", "Q1 to 105 A (action's words)", "Q1 to 105 A (action's words)"},
		{"none", "", "set_current: set BTS:MAG:Q1:CURRENT to 105 A"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := capabilities.Definition{
				Name: "set_current", Description: "Set the quadrupole Q1 magnet current to a value.", Provides: []string{"WRITE_RESULT"}, SideEffects: true,
				Action: func(capabilities.Step) (capabilities.Action, error) {
					return capabilities.Action{Summary: tc.action, Changes: []capabilities.Change{{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0, Unit: "A"}}}, nil
				},
				Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
					return capabilities.Result("WRITE_RESULT", 105.0, "Q1 set to 105 A"), nil
				},
			}
			a, err := agent.New(agent.Config{Capabilities: []capabilities.Capability{capabilities.Define(d)}, Options: state.Options{WritesEnabled: true}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			thread := fmt.Sprint(time.Now().UnixNano())
			var ap *state.Approval
			for e, err := range a.Run(ctx, agent.TurnRequest{Thread: thread, Input: "Set the quadrupole Q1 magnet current to 105 A"}) {
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
			records, err := a.Audit(ctx, agent.AuditFilter{Thread: thread})
			if err != nil || len(records) == 0 {
				t.Fatalf("audit: %v, %d records", err, len(records))
			}
			described := 0
			for _, r := range records {
				if r.Capability != "set_current" || len(r.Changes) == 0 {
					continue // the plan's record ("planned") has the step's objective: no action is described yet
				}
				described++
				if r.Summary != tc.want {
					t.Errorf("audit record %s summary %q, want the approved %q", r.Event, r.Summary, tc.want)
				}
			}
			if described == 0 {
				t.Errorf("no audit record of the action among %+v", records)
			}

			d.Approval = func(capabilities.Step) (bool, string) { return true, "other words" }
			if _, err := agent.New(agent.Config{Capabilities: []capabilities.Capability{capabilities.Define(d)}}); err == nil ||
				!strings.Contains(err.Error(), `"set_current": has SideEffects and Approval`) {
				t.Errorf("Approval beside SideEffects: %v", err)
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
