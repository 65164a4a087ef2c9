package nodes

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/prompts"
	"github.com/capgraph/capgraph/state"
)

// OfflineNotice starts every answer written without a language model.
const OfflineNotice = "(Offline mode: no language model was used; this answer is assembled from the capability results.)"

// RespondNode writes the turn's answer.
type RespondNode struct{ base }

// NewRespond returns the respond node.
func NewRespond(cfg Config) (*RespondNode, error) {
	b, err := newBase(cfg, state.NodeRespond)
	if err != nil {
		return nil, err
	}
	return &RespondNode{b}, nil
}

// Run writes the turn's one assistant message (kind answer), streaming it as
// Token payloads, marks the respond step done and sets Turn.Done. It answers
// from the summaries of the context this turn's steps produced, in plan
// order, and — only when the task depends on history — the earlier turns'
// context those steps read (answerContext); when no step ran it answers
// conversationally with the capability overview.
//
// The model's reasoning is never streamed (llm.Ask filters it). When the
// model's stream fails after chunks were sent, or its reply was cut off by
// the token limit and is asked again with a larger one, Run emits
// AnswerReset first, so a frontend drops the partial text before the answer
// streams again. An answer still cut off (or stopped by a content filter)
// ends with a note saying so, streamed and stored with it.
func (n *RespondNode) Run(ctx context.Context, s state.State) (state.Update, error) {
	a := n.prepare(ctx, s)
	if !n.online(llm.RoleResponse) {
		return n.written(ctx, a, call{offline: true}, false)
	}
	p, err := n.prompt(prompts.Response, a.data)
	if err != nil {
		return state.Update{}, err
	}
	c, err := n.generate(ctx, llm.RoleResponse, p.System, p.Turn, nil, a.stream)
	if err != nil {
		return state.Update{Tokens: tokens(llm.RoleResponse, c)}, err
	}
	return n.written(ctx, a, c, true)
}

// answering is what an answer is written from. It is kept on the heap, and
// Run's own frame small, because Run waits in the model call for most of a
// turn: a goroutine's stack is halved by the collector only while less than
// a quarter of it is in use (docs/performance.md, "Memory per live
// conversation").
type answering struct {
	name string
	t    state.Turn
	data prompts.ResponseData
}

// prepare gathers what the answer is written from.
//
//go:noinline
func (n *RespondNode) prepare(ctx context.Context, s state.State) *answering {
	a := &answering{name: n.name, t: cloneTurn(s.Turn)}
	a.data = prompts.ResponseData{Task: taskText(a.t), Notes: stepNotes(a.t),
		Conversational: !stepsRan(a.t), CapabilityOverview: n.cfg.Registry.Overview()}
	graph.Emit(ctx, Status{Node: n.name, Text: "Writing the answer…"})
	a.data.Context, a.data.EarlierContext = answerContext(s)
	if a.t.Task != nil && a.t.Task.DependsOnHistory || a.data.Conversational {
		a.data.History = history(s)
	}
	return a
}

// stream emits a chunk of the answer.
func (a *answering) stream(ctx context.Context, chunk string) error {
	if chunk != "" {
		graph.Emit(ctx, Token{Node: a.name, Text: chunk})
	}
	return nil
}

// written finishes the turn with the answer of c (offline: assembled from
// the capability results), or fails it when there is none. asked: a model
// call was made (c counts).
//
//go:noinline
func (n *RespondNode) written(ctx context.Context, a *answering, c call, asked bool) (state.Update, error) {
	var calls []call
	if asked {
		calls = append(calls, c)
	}
	text := strings.TrimSpace(c.text)
	t := a.t
	switch {
	case c.offline:
		text = offlineAnswer(a.data) + hypotheticalNote(t) + understoodNote(t)
		graph.Emit(ctx, Token{Node: n.name, Text: text})
	default:
		if note := finishNote(c); note != "" && text != "" {
			// Never passed off as complete: the note is streamed and stored with it.
			graph.Emit(ctx, Token{Node: n.name, Text: "\n\n" + note})
			text += "\n\n" + note
		}
		if note := understoodNote(t); note != "" && text != "" {
			graph.Emit(ctx, Token{Node: n.name, Text: note})
			text += note
		}
	}
	if text == "" {
		used := state.Update{Tokens: tokens(llm.RoleResponse, calls...)}
		if len(calls) > 0 && calls[0].finish == llm.FinishLength {
			// All reasoning, cut before the answer began: the same limit would cut it again.
			return used, llm.CapabilityError(&llm.Error{Kind: llm.ErrTruncated, Role: llm.RoleResponse, MaxTokens: calls[0].maxTokens})
		}
		problem := "the reply is empty"
		if len(calls) > 0 && strings.TrimSpace(calls[0].raw) != "" {
			problem = "the reply holds only the model's reasoning and no answer"
		}
		return used, formatError(n.name, problem, "a non-empty answer", "", nil)
	}
	return finish(t, n.name, n.cfg.Now(), text, state.KindAnswer, calls, llm.RoleResponse), nil
}

// finishNote is the note an answer the model did not finish gets: cut off
// by the token limit (after asking again with a larger one), or stopped by
// the provider's content filter. "" for a finished answer.
func finishNote(c call) string {
	switch c.finish {
	case llm.FinishLength:
		return fmt.Sprintf("*(This answer is incomplete: it was cut off at the model's limit of %s. "+
			"Ask for less at once, or raise models.%s.max_tokens in the configuration.)*", tokenLimit(c.maxTokens), llm.RoleResponse)
	case llm.FinishContentFilter:
		return "*(This answer is incomplete: the model provider's content filter stopped it.)*"
	}
	return ""
}

// finish marks the terminal step done, clears the node's own error and
// writes the turn's single assistant message.
func finish(t state.Turn, node string, now time.Time, text string, kind state.MessageKind, calls []call, role llm.Role) state.Update {
	if t.Plan != nil {
		for i, st := range t.Plan.Steps {
			if st.Capability == node && st.Status == state.StepPending {
				st.Status = state.StepDone
				st.Attempts++
				t.Plan.Steps[i] = st
				t.Results = append(t.Results, state.StepResult{StepIndex: i, Capability: node, TaskObjective: st.TaskObjective,
					Success: true, Attempt: st.Attempts, At: now, Plan: t.Plan.Number})
				break
			}
		}
	}
	if e := t.Control.Error; e != nil && e.Node == node {
		t.Control.Error = nil
	}
	t.Done = true
	msg := state.Message{Role: state.RoleAssistant, Content: text, Kind: kind, Turn: t.Number, Time: now}
	return state.Update{Turn: &t, Messages: []state.Message{msg}, Tokens: tokens(role, calls...)}
}

func stepsRan(t state.Turn) bool {
	if t.Plan == nil {
		return false
	}
	for _, st := range t.Plan.Steps {
		if !isTerminal(st.Capability) && st.Status == state.StepDone {
			return true
		}
	}
	for _, r := range t.Results {
		if !isTerminal(r.Capability) {
			return true
		}
	}
	return false
}

// answerContext returns the context an answer is written from. this is what
// the turn's steps produced (entries stamped with this turn), in plan order:
// by the step whose context key (or capability and objective) made it, or
// the step that read it when a replaced plan made it, then by creation. earlier is empty unless the task depends on history; then it
// holds the earlier turns' entries that this turn's steps read as inputs, in
// the order the steps read them, unless the step that read one made a
// result of its type anew. Other earlier results are not repeated: the chat history
// already carries the answers given from them.
func answerContext(s state.State) (this, earlier []prompts.ContextItem) {
	t := s.Turn
	var steps []state.PlanStep
	if t.Plan != nil {
		steps = t.Plan.Steps
	}
	done := func(i int) bool { return !isTerminal(steps[i].Capability) && steps[i].Status == state.StepDone }
	producer := func(e capabilities.ContextEntry) int {
		for i := range steps {
			if done(i) && steps[i].ContextKey == e.Key {
				return i
			}
		}
		for i := range steps {
			if done(i) && steps[i].Effective() == e.Capability && steps[i].TaskObjective == e.TaskObjective {
				return i
			}
		}
		return -1
	}
	// rank orders entries by plan position: 2i+1 for step i's output, 2i for
	// an entry step i reads that no step of this plan produced (an output of
	// a replaced plan of this turn), so it comes just before its reader.
	rank := func(e capabilities.ContextEntry) int {
		if i := producer(e); i >= 0 {
			return 2*i + 1
		}
		for i := range steps {
			if done(i) && slices.ContainsFunc(steps[i].Inputs, func(in capabilities.InputRef) bool { return in.Type == e.Type && in.Key == e.Key }) {
				return 2 * i
			}
		}
		return 2*len(steps) + 1
	}
	type ranked struct {
		e    capabilities.ContextEntry
		step int
	}
	var mine []ranked
	for _, e := range s.Context.Entries() {
		// An entry without a turn stamp (written outside the agent) counts
		// when a finished step of this plan names its key.
		if e.Turn == t.Number && t.Number != 0 || e.Turn == 0 && producer(e) >= 0 && steps[producer(e)].ContextKey == e.Key {
			mine = append(mine, ranked{e, rank(e)})
		}
	}
	slices.SortStableFunc(mine, func(a, b ranked) int {
		if a.step != b.step {
			return a.step - b.step
		}
		return a.e.Created.Compare(b.e.Created)
	})
	for _, r := range mine {
		this = append(this, contextItem(r.e))
	}
	if t.Task == nil || !t.Task.DependsOnHistory {
		return this, nil
	}
	seen := map[[2]string]bool{}
	remade := map[int]map[string]bool{} // step → types it made this turn
	for _, r := range mine {
		seen[[2]string{r.e.Type, r.e.Key}] = true
		if i := producer(r.e); i >= 0 {
			if remade[i] == nil {
				remade[i] = map[string]bool{}
			}
			remade[i][r.e.Type] = true
		}
	}
	for i := range steps {
		if !done(i) {
			continue
		}
		for _, in := range steps[i].Inputs {
			k := [2]string{in.Type, in.Key}
			if seen[k] || remade[i][in.Type] {
				// An earlier input the step made anew itself (a
				// follow-up's channels found again) is not repeated.
				continue
			}
			if e, ok := s.Context.Get(in.Type, in.Key); ok {
				seen[k] = true
				earlier = append(earlier, contextItem(e))
			}
		}
	}
	return this, earlier
}

func contextItem(e capabilities.ContextEntry) prompts.ContextItem {
	return prompts.ContextItem{Type: e.Type, Key: e.Key, TaskObjective: e.TaskObjective, Summary: summaryOf(e), Turn: e.Turn}
}

func summaryOf(e capabilities.ContextEntry) string {
	if e.Summary != "" {
		return e.Summary
	}
	return truncate(string(e.Value), 500)
}

// stepNotes says which steps recovered after a retry, used a fallback,
// failed or were skipped, so the answer can mention it.
func stepNotes(t state.Turn) []prompts.StepNote {
	if t.Plan == nil {
		return nil
	}
	var out []prompts.StepNote
	for i, st := range t.Plan.Steps {
		if isTerminal(st.Capability) {
			continue
		}
		switch {
		case st.Fallback != "" && st.Status == state.StepDone:
			out = append(out, prompts.StepNote{Capability: st.Capability,
				Note: fmt.Sprintf("failed; the result comes from the fallback %s", st.Fallback)})
		case st.Status == state.StepFailed:
			out = append(out, prompts.StepNote{Capability: st.Capability, Note: "failed: " + lastError(t, i)})
		case st.Status == state.StepSkipped:
			out = append(out, prompts.StepNote{Capability: st.Capability, Note: "was skipped"})
		case st.Status == state.StepRejected:
			out = append(out, prompts.StepNote{Capability: st.Capability, Note: "was rejected by a human and not carried out"})
		case st.Recovered:
			out = append(out, prompts.StepNote{Capability: st.Capability,
				Note: fmt.Sprintf("succeeded after %d attempts (recovered from a transient failure)", max(st.Attempts, 2))})
		}
	}
	return out
}

func lastError(t state.Turn, step int) string {
	for i := len(t.Results) - 1; i >= 0; i-- {
		if r := t.Results[i]; r.StepIndex == step && !r.Success && r.Error != "" {
			return r.Error
		}
	}
	return "no result"
}

// hypotheticalNote ends an offline answer to a hypothetical question: the
// template responder cannot predict, so it says so and that nothing changed.
func hypotheticalNote(t state.Turn) string {
	if in := intentOf(t); in.Kind != intent.KindHypothetical || in.Note != "" {
		return "" // a note of its own says what was understood (understoodNote)
	}
	return "\n\nNothing was changed: you asked what would happen, which offline mode cannot predict; the results above (if any) show the present state."
}

// understoodNote ends an answer when the user's words sounded like a change
// the rules would not carry out (no value, a question mark, reported words,
// a value to restore): what they understood, in the framework's words, so
// a model's answer cannot leave it out (intent.Intent.Note).
func understoodNote(t state.Turn) string {
	if note := intentOf(t).Note; note != "" {
		return "\n\n" + note
	}
	return ""
}

// offlineAnswer is the template responder: the offline notice, then the
// results' summaries, then notes about recovered, fallback or failed steps.
func offlineAnswer(d prompts.ResponseData) string {
	var b strings.Builder
	b.WriteString(OfflineNotice)
	b.WriteString("\n\n")
	if d.Conversational {
		b.WriteString("I could not match your request to any of my capabilities, so I ran nothing. I can:\n")
		b.WriteString(d.CapabilityOverview)
		b.WriteString("\n\nAsk for one of these in your own words, naming what you need (for example a channel, a place or a time range).")
		return b.String()
	}
	fmt.Fprintf(&b, "Results for: %s\n", d.Task)
	if len(d.Context) == 0 {
		b.WriteString("\nNo results were produced.")
	}
	for _, c := range d.Context {
		fmt.Fprintf(&b, "\n• %s", c.Summary)
	}
	if len(d.EarlierContext) > 0 {
		b.WriteString("\n\nEarlier results used:")
		for _, c := range d.EarlierContext {
			fmt.Fprintf(&b, "\n• %s", c.Summary)
		}
	}
	if len(d.Notes) > 0 {
		b.WriteString("\n\nNotes:")
		for _, nt := range d.Notes {
			fmt.Fprintf(&b, "\n• %s %s.", nt.Capability, nt.Note)
		}
	}
	return b.String()
}
