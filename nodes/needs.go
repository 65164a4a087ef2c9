package nodes

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/prompts"
	"github.com/capgraph/capgraph/state"
)

// What a turn needs a model for. With a model, a turn's time is its
// sequential model calls; the nodes leave out the calls the turn does not
// need, deciding by rules and the configuration before any call, and say
// so (ModelDecision):
//   - task extraction asks only when the message needs the earlier turns
//     to be understood (historyNeed), or always with TaskAlways;
//   - the classifier makes every candidate active when their guides fit
//     the planner's prompt (Config.SelectAllWithinTokens), and asks its
//     model otherwise, and always after a RECLASSIFICATION;
//   - where both need their model, the classifier asks once for the task
//     and the selection (taskDeferred), unless SeparateTaskAndSelection.

type allowedKey struct{}

// WithAllowed returns ctx saying which capabilities the turn's caller may
// use (the agent passes its allowed set); without it every capability is.
// The classifier selects without its model only when the caller may use
// every capability it would choose from, so a request needing one the
// caller may not use is still named as such.
func WithAllowed(ctx context.Context, allowed func(name string) bool) context.Context {
	return context.WithValue(ctx, allowedKey{}, allowed)
}

func callerAllows(ctx context.Context, name string) bool {
	allowed, _ := ctx.Value(allowedKey{}).(func(string) bool)
	return allowed == nil || allowed(name)
}

// minSelfContainedWords: a message shorter than this on a thread with
// earlier turns may lean on them ("the RF voltage?", "why?"): task
// extraction asks.
const minSelfContainedWords = 4

// Words that refer back to an earlier turn or continue it, in the
// languages the intent rules read (English, German, French). Articles that
// double as pronouns (das, le, la) are left out: they would make every
// message a follow-up.
var (
	backReferences = wordSet(`it it's its that those them this these same again instead previous previously earlier above
		former latter mentioned other another ones also too either neither more compare compared versus vs difference
		es ihn ihm dessen deren davon dies diese dieser dieses dasselbe derselbe dieselbe gleiche gleichen nochmal wieder
		auch stattdessen vorher vorhin dort damit dazu
		ça cela ceci celui celle ceux celles même mêmes aussi encore précédent précédente dessus`)
	continuationStarts = wordSet(`and but so then now also ok okay yes no why und aber dann ja nein warum et mais alors oui non pourquoi`)
	continuationPairs  = []string{"what about", "how about", "and what", "was ist mit", "und was", "et pour", "et le", "et la"}
)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// messageWords splits a message into lower-case words of letters, digits
// and apostrophes (any script).
func messageWords(msg string) []string {
	msg = strings.ReplaceAll(msg, "’", "'")
	return strings.FieldsFunc(strings.ToLower(msg), func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'')
	})
}

// latinOnly reports whether every letter of s is in the Latin script, the
// one the rules' word lists are written in.
func latinOnly(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) && !unicode.Is(unicode.Latin, r) {
			return false
		}
	}
	return true
}

// historyNeed decides by rules whether the turn's message needs the
// earlier turns to be understood, and says why in a line. Unsure, it says
// yes: asking the model costs a call, a task that lost its subject costs
// the answer. A first message needs nothing; a later one does when it
// answers the assistant's question, continues or refers back to an
// earlier message (by the intent rules, a word such as "it", "those",
// "again", "and …" at its start), is shorter than minSelfContainedWords
// words, or is written in a script the word lists do not cover.
func historyNeed(s state.State) (bool, string) {
	var earlier []state.Message
	for _, m := range s.History() {
		if m.Role == state.RoleUser || m.Role == state.RoleAssistant {
			earlier = append(earlier, m)
		}
	}
	if len(earlier) == 0 {
		return false, "the thread's first message is the task"
	}
	msg := latestUserMessage(s)
	if last := earlier[len(earlier)-1]; last.Role == state.RoleAssistant {
		switch {
		case last.Kind == state.KindClarification || last.Kind == state.KindApprovalRequest:
			return true, "the message answers the assistant's questions"
		case strings.HasSuffix(strings.TrimSpace(last.Content), "?"):
			return true, "the message may answer the assistant's question"
		}
	}
	rules := userFinding(s)
	if rules.Reason == intent.ReasonContinuation {
		return true, "the message continues an earlier change"
	}
	for _, c := range rules.Intent.Changes {
		if c.Refers != "" {
			return true, fmt.Sprintf("the message's %q refers to an earlier message", c.Target)
		}
	}
	if !latinOnly(msg) {
		return true, "the message is in a script the rules do not read"
	}
	words := messageWords(msg)
	for i, w := range words {
		if backReferences[w] && !expletiveIt(words, i) { // "is it raining", "what time is it"
			return true, fmt.Sprintf("the message's %q may refer to an earlier one", w)
		}
	}
	if len(words) > 0 && continuationStarts[words[0]] {
		return true, fmt.Sprintf("the message starts with %q, as a follow-up does", words[0])
	}
	start := strings.Join(words[:min(len(words), 3)], " ") + " "
	for _, p := range continuationPairs {
		if strings.HasPrefix(start, p+" ") {
			return true, fmt.Sprintf("the message starts with %q, as a follow-up does", p)
		}
	}
	if len(words) < minSelfContainedWords {
		return true, fmt.Sprintf("the message is too short (%d words) to be sure it stands alone", len(words))
	}
	return false, "the message names what it asks about: no earlier turn is needed"
}

// taskNeedsModel says whether task extraction asks its model this turn,
// and why (empty when the configuration alone decides).
func (b base) taskNeedsModel(s state.State) (bool, string) {
	if s.Turn.Options.SkipTaskExtraction || !b.online(llm.RoleTaskExtraction) {
		return false, ""
	}
	if b.cfg.TaskExtraction == TaskAlways {
		return true, ""
	}
	return historyNeed(s)
}

// candidates are the capabilities the classifier decides on: all but the
// always-active ones, and without side effects unless the user asks for a
// change (the model is not even asked about them).
func (b base) candidates(in intent.Intent) []capabilities.Capability {
	allow := allowedFor(b.cfg.Registry, in)
	var out []capabilities.Capability
	for _, c := range b.cfg.Registry.All() {
		if !isTerminal(c.Name()) && allow(c.Name()) {
			out = append(out, c)
		}
	}
	return out
}

// plannerTokens estimates the orchestrator's system prompt with the guides
// of cands, in tokens (four characters a token); -1 when it cannot be
// rendered. Rendered once per set of capabilities.
func (b base) plannerTokens(cands []capabilities.Capability) int {
	names := make([]string, len(cands))
	for i, c := range cands {
		names[i] = c.Name()
	}
	key := strings.Join(names, "\x00")
	if v, ok := b.sizes.Load(key); ok {
		return v.(int)
	}
	n := -1
	if sys, err := b.cfg.Prompts.Render(prompts.Orchestrator, prompts.OrchestratorData{Capabilities: prompts.PlannerCapabilities(cands)}); err == nil {
		n = (len(sys) + 3) / 4
	}
	b.sizes.Store(key, n)
	return n
}

// selectAll decides whether the classifier makes every candidate active
// without a model call: its model is configured (offline the lexical
// classifier chooses, as ever), it is not asked again after a failure,
// the caller may use every candidate, and the planner's prompt with all of
// their guides fits Config.SelectAllWithinTokens. The reason says why,
// either way.
func (b base) selectAll(ctx context.Context, t state.Turn, cands []capabilities.Capability) (bool, string) {
	if t.Control.Error != nil || t.Control.Reclassifications > 0 {
		return false, "asked again after a failure"
	}
	if b.cfg.SelectAllWithinTokens < 0 {
		return false, ""
	}
	for _, c := range cands {
		if !callerAllows(ctx, c.Name()) {
			return false, fmt.Sprintf("this caller may not use %s: asking the model", c.Name())
		}
	}
	n := b.plannerTokens(cands)
	if n < 0 || n > b.cfg.SelectAllWithinTokens {
		return false, fmt.Sprintf("the guides of %s take %d tokens of the planner's prompt, over %d: asking the model",
			countCapabilities(len(cands)), n, b.cfg.SelectAllWithinTokens)
	}
	return true, fmt.Sprintf("all %s fit the planner's prompt (%d of %d tokens), no model call",
		countCapabilities(len(cands)), n, b.cfg.SelectAllWithinTokens)
}

func countCapabilities(n int) string {
	if n == 1 {
		return "1 capability"
	}
	return fmt.Sprintf("%d capabilities", n)
}

// classifierNeedsModel says whether the classifier will ask its model for
// the selection of a first classification with intent in.
func (b base) classifierNeedsModel(ctx context.Context, t state.Turn, in intent.Intent) bool {
	if t.Options.SkipClassification || !b.online(llm.RoleClassifier) {
		return false
	}
	cands := b.candidates(in)
	if len(cands) == 0 {
		return false
	}
	all, _ := b.selectAll(ctx, t, cands)
	return !all
}

// taskDeferred says whether task extraction leaves the task to the
// classifier's combined call: both need their model, the classifier is
// batched and the configuration does not keep them apart. Task extraction
// and the classifier both decide it from the same state and
// configuration, so they agree; in is the intent of the user's words.
func (b base) taskDeferred(ctx context.Context, s state.State, in intent.Intent) bool {
	if b.cfg.SeparateTaskAndSelection || b.cfg.ClassifierMode != Batched {
		return false
	}
	if need, _ := b.taskNeedsModel(s); !need {
		return false
	}
	first := s.Turn
	first.Control.Error, first.Control.Reclassifications = nil, 0
	return b.classifierNeedsModel(ctx, first, in)
}

// rulesIntent is the intent of the user's own words (userFinding).
func rulesIntent(s state.State) intent.Intent {
	in, _ := intent.Decide(userFinding(s), nil)
	return in
}
