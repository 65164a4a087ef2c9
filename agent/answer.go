package agent

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/replytext"
	"github.com/capgraph/capgraph/state"
)

// The words read as a clear answer (after normalising: trimmed, lower case,
// trailing . ! ? removed). The reference's lists (yes|y|yep|yeah|ok|okay and
// no|n|nope|nah|cancel) plus the words of our own prompts and buttons.
var (
	yesWords = []string{"y", "yes", "yep", "yeah", "ok", "okay", "approve", "approved", "go", "go ahead", "proceed",
		"retry", "yes, retry", "confirm", "confirmed", "sure"}
	noWords = []string{"n", "no", "nope", "nah", "cancel", "reject", "rejected", "deny", "denied", "stop", "abort",
		"give up", "no, give up", "don't", "do not"}
)

func normalizeAnswer(text string) string {
	t := strings.ToLower(strings.TrimSpace(text))
	t = strings.TrimRight(t, ".!? ")
	return strings.Join(strings.Fields(t), " ")
}

// ParseYes reads a human's short answer: true only for a clear yes.
func ParseYes(text string) bool {
	t := normalizeAnswer(text)
	for _, w := range yesWords {
		if t == w {
			return true
		}
	}
	return false
}

// ParseNo reports a clear no. Text that is neither ParseYes nor ParseNo is
// unclear, and an unclear answer is not an approval.
func ParseNo(text string) bool {
	t := normalizeAnswer(text)
	for _, w := range noWords {
		if t == w {
			return true
		}
	}
	return false
}

// approvalTimeout bounds the approval model's call.
const approvalTimeout = 20 * time.Second

const approvalPrompt = `A human was asked to approve an action of an assistant and replied. Decide whether the reply clearly approves the action.
Answer with a JSON object {"approved": true} only if the reply clearly and unconditionally says yes to this action; otherwise {"approved": false}.
A conditional, hesitant, off-topic or ambiguous reply is not an approval.`

// interpret decides an answer's text: a clear yes or no deterministically;
// anything else is asked of the approval model when one is configured, and
// is a rejection when none is, when the call fails, or when its reply is
// anything but {"approved": true}.
// It also returns the tokens the model call used, which count against the
// turn's budget (ApprovalDecision.Tokens).
func (a *Agent) interpret(ctx context.Context, ap state.Approval, text string) (bool, string, int) {
	switch {
	case ParseYes(text):
		return true, state.AnswerKeyword, 0
	case ParseNo(text), strings.TrimSpace(text) == "":
		return false, state.AnswerKeyword, 0
	}
	m, ok := a.cfg.Models.For(llm.RoleApproval)
	if !ok || m == nil {
		return false, state.AnswerKeyword, 0
	}
	ctx, cancel := context.WithTimeout(ctx, approvalTimeout)
	defer cancel()
	resp, err := llm.Ask(ctx, m, llm.Request{Role: llm.RoleApproval, DefaultMaxTokens: approvalMaxTokens, JSON: true, Schema: approvalSchema,
		Messages: []llm.Message{
			{Role: "system", Content: approvalPrompt},
			{Role: "user", Content: "Action: " + ap.Summary + "\n\nThe human's reply: " + text},
		}}, llm.AskOptions{CutRetries: 1})
	if err != nil {
		return false, state.AnswerModel, resp.Usage.Total()
	}
	return approvedReply(resp.Text), state.AnswerModel, resp.Usage.Total()
}

// approvalMaxTokens caps the approval model's reply when
// models.approval.max_tokens (or models.default.max_tokens) does not.
const approvalMaxTokens = 50

// approvalSchema is the approval reply's JSON schema (structured output).
var approvalSchema = &llm.Schema{Name: "approval_decision", Strict: true, Schema: map[string]any{
	"type": "object", "properties": map[string]any{"approved": map[string]any{"type": "boolean"}},
	"required": []string{"approved"}, "additionalProperties": false}}

// approvedReply reads the approval model's reply: reasoning, code fences and
// prose around the JSON are tolerated (replytext), but only objects whose
// "approved" is the boolean true approve, and every object in the reply
// that says "approved" must say true — a reply that says both is unclear,
// and unclear is not an approval.
func approvedReply(reply string) bool {
	seen := false
	for _, raw := range replytext.Objects(reply) {
		var v map[string]json.RawMessage
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		a, ok := v["approved"]
		if !ok {
			continue
		}
		if string(a) != "true" {
			return false
		}
		seen = true
	}
	return seen
}
