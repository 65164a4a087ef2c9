package nodes

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/prompts"
	"github.com/capgraph/capgraph/state"
)

// TaskShape is the reply task extraction expects.
const TaskShape = `{"task": "<self-contained task>", "depends_on_chat_history": true|false}`

// shortFollowUpWords: an offline follow-up this short is joined with the
// previous user message ("and the RF voltage?").
const shortFollowUpWords = 6

// TaskExtractionNode turns the chat into a self-contained task.
type TaskExtractionNode struct{ base }

// NewTaskExtraction returns the task extraction node.
func NewTaskExtraction(cfg Config) (*TaskExtractionNode, error) {
	b, err := newBase(cfg, TaskExtraction)
	if err != nil {
		return nil, err
	}
	return &TaskExtractionNode{b}, nil
}

// Run sets Turn.Task. With SkipTaskExtraction, or without a model, the task
// is the user's message (joined with the previous one for a short follow-up).
func (n *TaskExtractionNode) Run(ctx context.Context, s state.State) (state.Update, error) {
	t := cloneTurn(s.Turn)
	t.Control.Error = nil
	graph.Emit(ctx, Status{Node: n.name, Text: "Understanding the request…"})
	if s.Turn.Options.SkipTaskExtraction {
		t.Task = offlineTask(s)
		graph.Emit(ctx, TaskExtracted{Task: t.Task.Text, DependsOnHistory: t.Task.DependsOnHistory, Offline: true})
		return state.Update{Turn: &t}, nil
	}
	sys, err := n.render(prompts.TaskExtraction, prompts.TaskExtractionData{History: history(s), Message: s.Turn.Input})
	if err != nil {
		return state.Update{}, err
	}
	c, err := n.generate(ctx, llm.RoleTaskExtraction, sys, s.Turn.Input, true, nil)
	if err != nil {
		return state.Update{}, err
	}
	offline := c.offline
	if offline {
		t.Task = offlineTask(s)
	} else {
		task, err := parseTask(c.text)
		if err != nil {
			return state.Update{Tokens: tokens(llm.RoleTaskExtraction, c)}, formatError(n.name, err.Error(), TaskShape, c.text, nil)
		}
		t.Task = task
	}
	graph.Emit(ctx, TaskExtracted{Task: t.Task.Text, DependsOnHistory: t.Task.DependsOnHistory, Offline: offline})
	return state.Update{Turn: &t, Tokens: tokens(llm.RoleTaskExtraction, c)}, nil
}

func parseTask(reply string) (*state.Task, error) {
	raw, err := extractJSON(reply)
	if err != nil {
		return nil, err
	}
	m, err := strictObject(raw, "the reply", "task", "depends_on_chat_history", "depends_on_user_memory")
	if err != nil {
		return nil, err
	}
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
	return &task, nil
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
	return &state.Task{Text: msg, Intent: offlineIntent(msg)}
}

// offlineIntentRE: an imperative change with a value, "set the Q1 current
// to 105 A". replaced by h2-intent (a deliberately minimal rule so that the
// write demo keeps working on this branch).
var offlineIntentRE = regexp.MustCompile(`(?i)^\s*(?:please\s+)?(?:set|change|adjust|write)\s+(.+?)\s+to\s+([-+]?\d+(?:\.\d+)?)\s*([a-zA-Zµ]+)?\s*[.!]?\s*$`)

// offlineIntent reads whether msg asks for a change. replaced by h2-intent.
func offlineIntent(msg string) state.Intent {
	m := offlineIntentRE.FindStringSubmatch(msg)
	if m == nil {
		return state.Intent{Kind: state.IntentRead}
	}
	v, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		return state.Intent{Kind: state.IntentRead}
	}
	return state.Intent{Kind: state.IntentChange, Changes: []state.RequestedChange{{Target: m[1], Value: &v, Unit: m[3]}}}
}

// followUpJoin separates the messages of an offline follow-up task.
const followUpJoin = " — follow-up: "

var (
	followUpStarts = []string{"and ", "and,", "what about", "how about", "also", "same ", "now ", "then ", "ok ", "okay "}
	followUpRefs   = map[string]bool{"it": true, "its": true, "that": true, "those": true, "them": true, "this": true, "these": true, "there": true, "same": true}
)

// refersBack reports whether a message has a word referring back ("it",
// "its", "those").
func refersBack(msg string) bool {
	for _, w := range tokenizeRaw(msg) {
		if followUpRefs[w] {
			return true
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
	for _, w := range words {
		if followUpRefs[w] {
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
