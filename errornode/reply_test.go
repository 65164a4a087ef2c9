package errornode_test

import (
	"strings"
	"testing"

	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/state"
)

// The explanation is shown without the model's reasoning; one cut off by
// the token limit (after one larger try) is replaced by the deterministic
// one rather than shown as if complete.
func TestExplanationReadLikeEveryReply(t *testing.T) {
	m := llmtest.New().Script(llm.RoleError, llmtest.Text("<think>\nThe timeout {\"maybe\": 1}.\n</think>\n\nThe beam current channel did not answer in time."))
	msg := run(t, m, failedTurn()).Messages[0]
	c := msg.Content
	if msg.Report.Explanation != "The beam current channel did not answer in time." || !strings.Contains(c, "**Analysis:** The beam current channel did not answer in time.") || strings.Contains(c, "think") {
		t.Fatalf("content:\n%s", c)
	}
	if got := m.Calls()[0].Request; got.MaxTokens != 0 || got.DefaultMaxTokens != 300 {
		t.Errorf("request limits %d/%d: the role's max_tokens must win over the default 300", got.MaxTokens, got.DefaultMaxTokens)
	}

	m = llmtest.New().Script(llm.RoleError, llmtest.Cut("The beam current channel did"), llmtest.Cut("The beam current channel did not"))
	u := run(t, m, failedTurn())
	c = u.Messages[0].Content
	if u.Messages[0].Report.ExplainedBy != state.ExplainedByRules || strings.Contains(c, "channel did") {
		t.Fatalf("a cut explanation was shown:\n%s", c)
	}
	calls := m.Calls()
	if len(calls) != 2 || calls[1].Request.MaxTokens != llm.GrowMaxTokens(300) || u.Tokens[string(llm.RoleError)] == 0 {
		t.Errorf("calls %d, second limit %d, tokens %v", len(calls), calls[len(calls)-1].Request.MaxTokens, u.Tokens)
	}
}
