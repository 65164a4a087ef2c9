package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/prompts"
	"github.com/capgraph/capgraph/state"
)

// taskShape is the reply task extraction expects. "intent" says whether the
// user asks to read, to change or hypothetically, and for a change each
// target, value (a number or null) and unit. The rules decide from the
// user's words whatever it says; where it reads otherwise an event says so
// (intent.Decide).
const taskShape = `{"task": "<self-contained task>", "depends_on_chat_history": true|false, ` +
	`"intent": {"kind": "read"|"change"|"hypothetical", "changes": [{"target": "<as the user named it>", "value": <number>|null, "unit": "<unit>"}]}}`

// taskReply is taskShape's keys and JSON schema.
var taskReply = newShape("task_reply",
	required("task", jsonString()),
	required("depends_on_chat_history", jsonBoolean()),
	optional("depends_on_user_memory", jsonBoolean()),
	optional("intent", jsonObject(intentFields...)),
)

// intentFields and changeFields are the keys of the reply's "intent" and of
// each of its "changes".
var (
	changeFields = []shapeField{required("target", jsonString()), optional("value", jsonNumber()), optional("unit", jsonString())}
	intentFields = []shapeField{required("kind", jsonEnum(string(intent.KindRead), string(intent.KindChange), string(intent.KindHypothetical))),
		optional("changes", jsonArray(jsonObject(changeFields...)))}
)

func fieldKeys(fs []shapeField) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.key
	}
	return out
}

// shortFollowUpWords: an offline follow-up this short is joined with the
// previous user message ("and the RF voltage?").
const shortFollowUpWords = 6

// TaskExtractionNode turns the chat into a self-contained task.
type TaskExtractionNode struct{ base }

// NewTaskExtraction returns the task extraction node.
func NewTaskExtraction(cfg Config) (*TaskExtractionNode, error) {
	b, err := newBase(cfg, state.NodeTaskExtraction)
	if err != nil {
		return nil, err
	}
	return &TaskExtractionNode{b}, nil
}

// Run sets Turn.Task. With SkipTaskExtraction, or without a model, the task
// is the user's message (joined with the previous one for a short
// follow-up). With a model and TaskWhenNeeded, the model is asked only when
// the message needs the earlier turns (historyNeed), and when the
// classifier will ask its model too, the task is left to the classifier's
// one call for both (taskDeferred): the task is the user's words until
// then. Each decision is a ModelDecision event.
func (n *TaskExtractionNode) Run(ctx context.Context, s state.State) (state.Update, error) {
	t := cloneTurn(s.Turn)
	retry := formatRetry(t.Control.Error, n.name)
	t.Control.Error = nil
	graph.Emit(ctx, Status{Node: n.name, Text: "Understanding the request…"})
	if s.Turn.Options.SkipTaskExtraction {
		t.Task = offlineTask(s)
		n.resolveIntent(ctx, s, t.Task)
		graph.Emit(ctx, TaskExtracted{Task: t.Task.Text, DependsOnHistory: t.Task.DependsOnHistory, Offline: true, Intent: t.Task.Intent})
		return state.Update{Turn: &t}, nil
	}
	if n.online(llm.RoleTaskExtraction) {
		need, why := n.taskNeedsModel(s)
		switch {
		case !need:
			t.Task = offlineTask(s)
			n.resolveIntent(ctx, s, t.Task)
			graph.Emit(ctx, ModelDecision{Node: n.name, Skipped: true, Reason: why + ", no model call"})
			graph.Emit(ctx, TaskExtracted{Task: t.Task.Text, DependsOnHistory: t.Task.DependsOnHistory, Intent: t.Task.Intent})
			return state.Update{Turn: &t}, nil
		case retry == (prompts.FormatRetry{}) && n.taskDeferred(ctx, s, rulesIntent(s)):
			// The user's words stand in until the classifier's call returns
			// the task with the selection.
			t.Task = offlineTask(s)
			t.Task.DependsOnHistory = true
			n.resolveIntent(ctx, s, t.Task)
			graph.Emit(ctx, ModelDecision{Node: n.name, Skipped: true, Reason: deferredReason(why)})
			return state.Update{Turn: &t}, nil
		case why != "":
			graph.Emit(ctx, ModelDecision{Node: n.name, Reason: why + ": asking the model"})
		}
	}
	task, c, err := n.askTask(ctx, s, retry, n.name)
	if err != nil {
		return state.Update{Tokens: tokens(llm.RoleTaskExtraction, c)}, err
	}
	t.Task = task
	n.resolveIntent(ctx, s, t.Task)
	graph.Emit(ctx, TaskExtracted{Task: t.Task.Text, DependsOnHistory: t.Task.DependsOnHistory, Offline: c.offline, Intent: t.Task.Intent})
	return state.Update{Turn: &t, Tokens: tokens(llm.RoleTaskExtraction, c)}, nil
}

func deferredReason(why string) string {
	const asked = "the task is asked together with the capability selection, in one call"
	if why == "" {
		return asked
	}
	return why + "; " + asked
}

// askTask asks the task extraction model for the task (the offline task
// when it has none or cannot be reached); node names the node whose format
// error an unusable reply is. The intent is not resolved yet.
func (b base) askTask(ctx context.Context, s state.State, retry prompts.FormatRetry, node string, extra ...map[string]any) (*state.Task, call, error) {
	p, err := b.prompt(prompts.TaskExtraction, prompts.TaskExtractionData{History: history(s), Message: s.Turn.Input, FormatRetry: retry})
	if err != nil {
		return nil, call{}, err
	}
	c, err := b.generate(ctx, llm.RoleTaskExtraction, p.System, p.Turn, &taskReply, nil)
	if err != nil {
		return nil, c, err
	}
	if c.offline {
		return offlineTask(s), c, nil
	}
	task, err := parseTask(c.text)
	if err != nil {
		var md map[string]any
		if len(extra) > 0 {
			md = extra[0]
		}
		return nil, c, formatError(node, err.Error(), taskShape, c.text, md)
	}
	return task, c, nil
}

func parseTask(reply string) (*state.Task, error) {
	raw, err := extractJSON(reply, taskReply.keys()...)
	if err != nil {
		return nil, err
	}
	m, err := strictObject(raw, "the reply", taskReply.keys()...)
	if err != nil {
		return nil, err
	}
	return taskFields(m)
}

// taskFields reads the task keys of a reply's object (taskReply's).
func taskFields(m map[string]json.RawMessage) (*state.Task, error) {
	var task state.Task
	if _, err := field(m, "task", "the reply", &task.Text); err != nil {
		return nil, err
	}
	if _, err := field(m, "depends_on_chat_history", "the reply", &task.DependsOnHistory); err != nil {
		return nil, err
	}
	task.Text = strings.TrimSpace(task.Text)
	if task.Text == "" {
		return nil, fmt.Errorf(`"task" is missing or empty`)
	}
	var rawIntent json.RawMessage
	if ok, err := field(m, "intent", "the reply", &rawIntent); err != nil {
		return nil, err
	} else if ok {
		if task.Intent, err = parseIntent(rawIntent); err != nil {
			return nil, err
		}
	}
	return &task, nil
}

// parseIntent parses the reply's "intent" strictly. Changes stated for a
// read or a hypothetical are dropped: only a change has any.
func parseIntent(raw json.RawMessage) (intent.Intent, error) {
	const where = `"intent"`
	m, err := strictObject(raw, where, fieldKeys(intentFields)...)
	if err != nil {
		return intent.Intent{}, err
	}
	var kind string
	if _, err := field(m, "kind", where, &kind); err != nil {
		return intent.Intent{}, err
	}
	in := intent.Intent{Kind: intent.Kind(strings.ToLower(strings.TrimSpace(kind)))}
	switch in.Kind {
	case intent.KindRead, intent.KindChange, intent.KindHypothetical:
	default:
		return intent.Intent{}, fmt.Errorf(`"intent.kind" must be "read", "change" or "hypothetical", got %q`, kind)
	}
	var rawChanges []json.RawMessage
	if _, err := field(m, "changes", where, &rawChanges); err != nil {
		return intent.Intent{}, err
	}
	if !in.IsChange() {
		return in, nil
	}
	for i, rc := range rawChanges {
		at := fmt.Sprintf(`"intent.changes[%d]"`, i)
		cm, err := strictObject(rc, at, fieldKeys(changeFields)...)
		if err != nil {
			return intent.Intent{}, err
		}
		var c intent.RequestedChange
		if _, err := field(cm, "target", at, &c.Target); err != nil {
			return intent.Intent{}, err
		}
		var v float64
		if ok, err := field(cm, "value", at, &v); err != nil {
			return intent.Intent{}, fmt.Errorf("%s: \"value\" must be a number or null (put the unit in \"unit\")", at)
		} else if ok {
			c.Value = &v
		}
		if _, err := field(cm, "unit", at, &c.Unit); err != nil {
			return intent.Intent{}, err
		}
		c.Target, c.Unit = strings.TrimSpace(c.Target), intent.CanonicalUnit(c.Unit)
		in.Changes = append(in.Changes, c)
	}
	return in, nil
}

// resolveIntent sets the task's intent from the user's own words (the
// rules, userFinding); a model's reading is not taken into it
// (intent.Decide), and where the model read otherwise an event says so.
// A model's task text that asks for another change than the user's words
// (a change for a read, another value) is replaced by the user's words, so
// no later node plans from it.
func (b base) resolveIntent(ctx context.Context, s state.State, task *state.Task) {
	var model *intent.Intent
	if task.Intent.Kind != "" {
		in := task.Intent
		model = &in
	}
	in, differs := intent.Decide(userFinding(s), model)
	if differs != "" {
		graph.Emit(ctx, Status{Node: b.name, Text: differs})
	}
	if !taskAgrees(task.Text, in) {
		own := offlineTask(s)
		graph.Emit(ctx, Status{Node: b.name, Text: "The model's task asked for a change your words do not; the task is your own words: " + own.Text})
		task.Text = own.Text
		task.DependsOnHistory = task.DependsOnHistory || own.DependsOnHistory
	}
	// A dated restore ("yesterday's value") points to a time fixed now,
	// so the planner, the capability and the gate read the same moment.
	task.Intent = in.Dated(b.cfg.Now())
}

// userFinding is what the user's own words ask, by the rules: read as the
// answer to the assistant's question (intent.FromAnswer) when the turn
// answers a clarification, else as a message of the conversation
// (intent.FromMessages). Only the kind of the assistant's message counts,
// never its words.
func userFinding(s state.State) intent.Finding {
	msg, earlier := latestUserMessage(s), earlierUserMessages(s)
	if answersClarification(s) {
		return intent.FromAnswer(msg, earlier)
	}
	return intent.FromMessages(msg, earlier)
}

// answersClarification reports whether the assistant's last message before
// the turn asked the user a clarifying question.
func answersClarification(s state.State) bool {
	h := s.History()
	for i := len(h) - 1; i >= 0; i-- {
		switch h[i].Role {
		case state.RoleAssistant:
			return h[i].Kind == state.KindClarification
		case state.RoleUser:
			return false
		}
	}
	return false
}

// taskAgrees reports whether a model's task text asks for no change the
// intent does not: read by the same rules, each change in it must be one
// of the intent's (intent.Intent.Includes: its targets, its values).
func taskAgrees(text string, in intent.Intent) bool {
	f := intent.FromMessage(text)
	if !f.Intent.IsChange() {
		return true
	}
	for _, c := range f.Intent.Changes {
		if !in.Includes(c) {
			return false
		}
	}
	return true
}

// latestUserMessage is the turn's user message.
func latestUserMessage(s state.State) string {
	if msg := strings.TrimSpace(s.Turn.Input); msg != "" {
		return msg
	}
	for i := len(s.Messages) - 1; i >= 0; i-- {
		if s.Messages[i].Role == state.RoleUser {
			return strings.TrimSpace(s.Messages[i].Content)
		}
	}
	return ""
}

// earlierUserMessages are the user's messages before this turn's, oldest
// first: only the user's own words, never a model's or a tool's.
func earlierUserMessages(s state.State) []string {
	var out []string
	for _, m := range s.History() {
		if m.Role == state.RoleUser {
			out = append(out, m.Content)
		}
	}
	return out
}

// offlineTask: the last user message; a short follow-up is joined with the
// previous user message so "and the RF voltage?" keeps its subject.
func offlineTask(s state.State) *state.Task {
	msg := strings.TrimSpace(s.Turn.Input)
	if msg == "" {
		for i := len(s.Messages) - 1; i >= 0; i-- {
			if s.Messages[i].Role == state.RoleUser {
				msg = strings.TrimSpace(s.Messages[i].Content)
				break
			}
		}
	}
	if isFollowUp(msg) {
		// Walk back over earlier follow-ups to the message that named the
		// subject, so a chain ("find the beam current channel" → "read it" →
		// "show its history") keeps it: the subject, then every follow-up.
		h := s.History()
		text := msg
		for i := len(h) - 1; i >= 0; i-- {
			if h[i].Role != state.RoleUser {
				continue
			}
			prev := strings.TrimSpace(h[i].Content)
			text = prev + followUpJoin + text
			if !isFollowUp(prev) {
				break
			}
		}
		if text != msg {
			return &state.Task{Text: text, DependsOnHistory: true}
		}
	}
	return &state.Task{Text: msg}
}

// followUpJoin separates the messages of an offline follow-up task.
const followUpJoin = " — follow-up: "

var (
	followUpStarts = []string{"and ", "and,", "what about", "how about", "also", "same ", "now ", "then ", "ok ", "okay ",
		// A comparison or a chart of what was just shown: "compare with
		// yesterday", "vs last week", "plot it".
		"compare", "vs ", "vs.", "versus", "plot", "chart", "graph",
		// Another time window for the same thing: "over the last 3 hours",
		// "since yesterday".
		"over the", "for the last", "for the past", "in the last", "in the past", "since ", "during ", "yesterday", "today"}
	followUpRefs = map[string]bool{"it": true, "its": true, "that": true, "those": true, "them": true, "this": true, "these": true, "there": true, "same": true,
		"ihn": true, "ihm": true, "dessen": true, "davon": true, "cela": true}
)

// refersBack reports whether a message has a word referring back ("it",
// "its", "those").
func refersBack(msg string) bool {
	words := tokenizeRaw(msg)
	for i, w := range words {
		if followUpRefs[w] && !expletiveIt(words, i) {
			return true
		}
	}
	return false
}

// impersonal: words after which "it" refers to nothing said before ("is it
// raining", "what time is it"), so the message starts a new subject.
var impersonal = map[string]bool{
	"raining": true, "rain": true, "snowing": true, "snow": true, "sunny": true, "cloudy": true,
	"windy": true, "foggy": true, "stormy": true, "cold": true, "hot": true, "warm": true,
	"freezing": true, "humid": true, "dark": true, "night": true, "morning": true,
	"today": true, "tomorrow": true, "time": true, "day": true, "date": true, "weather": true,
}

// expletiveIt reports whether words[i] is an "it" that names nothing: the
// weather's or the clock's it ("is it raining in London?", "it's cold",
// "what time is it"), or a tag question's ("isn't it?").
func expletiveIt(words []string, i int) bool {
	if w := words[i]; w != "it" && w != "it's" {
		return false
	}
	// A tag question's it is the sentence's own subject ("…, isn't it?").
	if i == len(words)-1 && i >= 1 && strings.HasSuffix(words[i-1], "n't") {
		return true
	}
	// "what time is it", "what day is it": the question word comes first.
	if i >= 2 && words[i-1] == "is" && impersonal[words[i-2]] {
		return true
	}
	for j := i + 1; j < len(words) && j <= i+4; j++ {
		switch w := words[j]; {
		case impersonal[w]:
			return true
		case w == "is" || w == "was" || w == "be" || w == "will" || w == "going" || w == "to" || w == "gonna" || w == "getting" || w == "s":
			continue // "it is going to be cold"
		default:
			return false
		}
	}
	return false
}

// isFollowUp: a short message that starts like a continuation or refers
// back to something ("and the RF voltage?", "plot it").
func isFollowUp(msg string) bool {
	words := tokenizeRaw(msg)
	if len(words) == 0 || len(words) > 2*shortFollowUpWords {
		return false
	}
	// A word referring back makes a message of up to twice the short length
	// a follow-up ("show its history over the last hour"); a continuation
	// opener only a short one.
	for i, w := range words {
		if followUpRefs[w] && !expletiveIt(words, i) {
			return true
		}
	}
	if len(words) > shortFollowUpWords {
		return false
	}
	l := strings.ToLower(strings.TrimSpace(msg))
	for _, p := range followUpStarts {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

func tokenizeRaw(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '\'')
	})
}
