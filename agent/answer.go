package agent

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/replytext"
	"github.com/capgraph/capgraph/prompts"
	"github.com/capgraph/capgraph/state"
)

// Only a human approves (docs/approvals.md, "How an answer is read"): an
// approval is granted by an explicit affirmative only — a button, or a
// short answer that is exactly one of yesWords. A model may read a
// free-text answer into "rejected" or "unclear", never into "approved";
// an unclear answer decides nothing and the human is asked again.

// The short answers read as a clear yes or no, compared after
// normalizeAnswer: exact answers only, so "yes but later", "ok?", "not
// yes" and "\"yes\"" are none of them. English (the reference's words and
// those of our prompts and buttons), German and French.
var (
	yesWords = answerWords(
		"y", "yes", "yep", "yeah", "ok", "okay", "sure", "approve", "approved", "confirm", "confirmed",
		"go", "go ahead", "proceed", "do it", "yes please", "yes, go ahead", "retry", "yes, retry",
		"ja", "jawohl", "ja, bitte", "genehmigt", "genehmige", "einverstanden", "bestätigt", "bestätige", "freigegeben", "weiter", "ja, weiter",
		"oui", "ouais", "d'accord", "approuvé", "approuve", "j'approuve", "confirmé", "je confirme", "validé", "vas-y", "allez-y", "oui, vas-y", "bien sûr",
	)
	noWords = answerWords(
		"n", "no", "nope", "nah", "cancel", "reject", "rejected", "deny", "denied", "stop", "abort", "give up", "no, give up",
		"don't", "do not", "no thanks",
		"nein", "nee", "nein danke", "abbrechen", "ablehnen", "abgelehnt", "stopp", "halt", "aufgeben",
		"non", "non merci", "annuler", "annule", "refuser", "refusé", "arrête", "arrêter", "abandonner", "pas question",
	)
)

func answerWords(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[normalizeAnswer(w)] = true
	}
	return m
}

// answerFolding spells alike what keyboards spell differently: typographic
// apostrophes, accents typed as combining marks, and the space around a
// comma.
var answerFolding = strings.NewReplacer("’", "'", "ʼ", "'", "e\u0301", "é", "a\u0308", "ä", "u\u0302", "û", "e\u0302", "ê", ",", " , ")

// normalizeAnswer lower-cases, folds (answerFolding) and collapses the
// space of a short answer and drops one closing "." or any "!": "Yes!",
// "yes." and " YES " are "yes"; "yes?" (a question) and "yes..." (a
// hesitation) stay what they are.
func normalizeAnswer(text string) string {
	t := strings.Join(strings.Fields(answerFolding.Replace(strings.ToLower(text))), " ")
	t = strings.ReplaceAll(t, " ,", ",")
	switch {
	case strings.HasSuffix(t, "!"):
		t = strings.TrimRight(t, "!")
	case strings.HasSuffix(t, ".") && !strings.HasSuffix(t, ".."):
		t = strings.TrimSuffix(t, ".")
	}
	return strings.TrimSpace(t)
}

// ParseYes reports a clear yes: the whole answer is one of the yes words
// (docs/approvals.md lists them), give or take letter case, space and a
// closing "." or "!".
func ParseYes(text string) bool { return yesWords[normalizeAnswer(text)] }

// ParseNo reports a clear no, read as ParseYes reads a yes. Text that is
// neither is unclear: not an approval, and not a decision.
func ParseNo(text string) bool { return noWords[normalizeAnswer(text)] }

// reading is what an answer's text says: a clear yes, a rejection, or
// nothing decidable.
type reading int

const (
	readUnclear reading = iota
	readYes
	readNo
)

// approvalTimeout bounds the approval model's call.
const approvalTimeout = 20 * time.Second

// interpret reads an answer's text. A clear yes or no is read by the
// keyword rules (rule state.AnswerToken when the message named the
// approval's token, else state.AnswerKeyword); anything else is shown to
// the approval model when one is configured, and is a rejection (rule
// state.AnswerModel) only when the model says "reject" unanimously. Every
// other case — no model, a failed call, a reply saying anything else, even
// "approved" — is unclear: never an approval.
// It also returns the tokens the model call used, which are reported in
// the turn's usage (ApprovalDecision.Tokens).
func (a *Agent) interpret(ctx context.Context, ap state.Approval, text string, token bool) (reading, string, int) {
	keyword := state.AnswerKeyword
	if token {
		keyword = state.AnswerToken
	}
	switch {
	case ParseYes(text):
		return readYes, keyword, 0
	case ParseNo(text):
		return readNo, keyword, 0
	case strings.TrimSpace(text) == "":
		return readUnclear, keyword, 0
	}
	m, ok := a.cfg.Models.For(llm.RoleApproval)
	if !ok || m == nil {
		return readUnclear, keyword, 0
	}
	set := a.cfg.Nodes.Prompts
	if set == nil {
		set = prompts.Default()
	}
	system, err := set.Render(prompts.Approval, prompts.ApprovalData{Kind: string(ap.Kind), Summary: ap.Summary})
	if err != nil {
		return readUnclear, state.AnswerModel, 0
	}
	ctx, cancel := context.WithTimeout(ctx, approvalTimeout)
	defer cancel()
	resp, err := llm.Ask(ctx, m, llm.Request{Role: llm.RoleApproval, DefaultMaxTokens: approvalMaxTokens, JSON: true, Schema: approvalSchema,
		Messages: []llm.Message{
			{Role: "system", Content: system},
			{Role: "user", Content: "The human's reply:\n" + text},
		}}, llm.AskOptions{CutRetries: 1})
	if err != nil || !modelRejects(resp.Text) {
		return readUnclear, state.AnswerModel, resp.Usage.Total()
	}
	return readNo, state.AnswerModel, resp.Usage.Total()
}

// approvalMaxTokens caps the approval model's reply when
// models.approval.max_tokens (or models.default.max_tokens) does not.
const approvalMaxTokens = 50

// The approval model's two answers: it has no word for "approved".
const (
	modelReject  = "reject"
	modelUnclear = "unclear"
)

// approvalSchema is the approval reply's JSON schema (structured output).
var approvalSchema = &llm.Schema{Name: "approval_reading", Strict: true, Schema: map[string]any{
	"type": "object", "properties": map[string]any{"decision": map[string]any{"type": "string", "enum": []string{modelReject, modelUnclear}}},
	"required": []string{"decision"}, "additionalProperties": false}}

// modelRejects reads the approval model's reply: reasoning, code fences
// and prose around the JSON are tolerated (replytext), but the reply
// rejects only when it holds an object whose "decision" is the string
// "reject" and no object saying anything else about the answer (another
// decision, or an "approved" of any value): a reply that says both is
// unclear, and so is one that says nothing.
func modelRejects(reply string) bool {
	rejects := false
	for _, raw := range replytext.Objects(reply) {
		var v map[string]json.RawMessage
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		if _, ok := v["approved"]; ok {
			return false
		}
		d, ok := v["decision"]
		if !ok {
			continue
		}
		if string(d) != `"`+modelReject+`"` {
			return false
		}
		rejects = true
	}
	return rejects
}
