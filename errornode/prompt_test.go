package errornode_test

import (
	"context"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/errornode"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/prompts"
	"github.com/capgraph/capgraph/state"
)

// The explanation prompt comes from the "error" template of package
// prompts, so an application's override is what the model receives; a
// broken override costs the explanation call, never the report.
func TestExplanationPromptFromTemplates(t *testing.T) {
	tests := []struct {
		name      string
		override  string
		wantCalls int
		wantInSys string
	}{
		{"default template", "", 1, "2 to 3 sentences"},
		{"override", "PLANT SAFETY OFFICE. Task {{.Task}}.\n{{.Report}}", 1, "PLANT SAFETY OFFICE. Task Read the storage ring beam current."},
		{"override failing at render", "{{.NoSuchField}}", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var set *prompts.Set
			if tt.override != "" {
				var err error
				if set, err = prompts.New(prompts.Config{Overrides: map[string]string{prompts.ErrorExplanation: tt.override}}); err != nil {
					t.Fatal(err)
				}
			}
			m := llmtest.New().Script(llm.RoleError, llmtest.Text("The channel did not answer. Try again later."))
			n, err := errornode.New(errornode.Config{Models: m, Router: rc, Now: clock, Prompts: set})
			if err != nil {
				t.Fatal(err)
			}
			u, err := n.Run(context.Background(), failedTurn())
			if err != nil || len(u.Messages) != 1 {
				t.Fatalf("update %+v, %v", u, err)
			}
			calls := m.Calls()
			if len(calls) != tt.wantCalls {
				t.Fatalf("%d calls, want %d", len(calls), tt.wantCalls)
			}
			if tt.wantCalls == 0 {
				if r := u.Messages[0].Report; r == nil || r.ExplainedBy != state.ExplainedByRules || !strings.HasPrefix(r.Explanation, "A timeout means the system did not answer") {
					t.Errorf("want the deterministic explanation: %+v", r)
				}
				return
			}
			sys := calls[0].Request.Messages[0]
			if sys.Role != "system" || !strings.Contains(sys.Content, tt.wantInSys) || !strings.Contains(sys.Content, "Failed operation: step 2 (read the beam current)") {
				t.Errorf("system prompt:\n%s", sys.Content)
			}
		})
	}
}
