package nodes

import (
	"context"
	"errors"
	"fmt"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/prompts"
	"github.com/capgraph/capgraph/state"
)

// MetaPart names, on a format error of the classifier when it asked for
// the task and the selection apart, the reply that was unusable: PartTask
// or PartSelection. Its retry shows the error with that question.
const MetaPart = "reply_part"

// The parts of the classifier's work when it also extracts the task.
const (
	PartTask      = "task"
	PartSelection = "selection"
)

// taskSelectionShape is the reply of the combined call: the task's keys
// and the selection's.
const taskSelectionShape = `{"task": "<self-contained task>", "depends_on_chat_history": true|false, ` +
	`"intent": {"kind": "read"|"change"|"hypothetical", "changes": [...]}, "capabilities": ["<capability name>", ...]}`

// taskSelectionFor is the combined reply's shape, its names the
// candidates'.
func taskSelectionFor(cands []capabilities.Capability) replyShape {
	names := make([]string, len(cands))
	for i, c := range cands {
		names[i] = c.Name()
	}
	fields := append(append([]shapeField(nil), taskReply.fields...), required("capabilities", jsonArray(jsonEnum(names...))))
	return newShape("task_selection", fields...)
}

// taskSelectionKeys are the keys the combined reply may have.
var taskSelectionKeys = append(taskReply.keys(), "capabilities")

// parseTaskSelection parses a combined reply as strictly as each of its
// parts: the task's keys as task extraction reads them, and a
// "capabilities" list.
func parseTaskSelection(reply string) (*state.Task, []string, error) {
	raw, err := extractJSON(reply, taskSelectionKeys...)
	if err != nil {
		return nil, nil, err
	}
	m, err := strictObject(raw, "the reply", taskSelectionKeys...)
	if err != nil {
		return nil, nil, err
	}
	task, err := taskFields(m)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	ok, err := field(m, "capabilities", "the reply", &names)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, errors.New(`the reply has no "capabilities" list`)
	}
	return task, names, nil
}

// taskAndSelection is the classifier's work when task extraction left the
// task to it: one call of the classifier's model returns the task and the
// selection together (prompts.TaskSelection). When that reply is unusable
// or cut off — or, on a retry, after such a failure — it asks task
// extraction's model for the task and then its own for the selection,
// apart, as the nodes would have. It sets t.Task (the intent decided from
// the user's words, as task extraction does) and returns the selection
// and the tokens used by role.
func (n *ClassifierNode) taskAndSelection(ctx context.Context, s state.State, t *state.Turn, retry prompts.FormatRetry, part string) ([]string, map[string]int, bool, error) {
	in := intentOf(*t)
	var used map[string]int
	setTask := func(task *state.Task) {
		n.resolveIntent(ctx, s, task)
		t.Task = task
		graph.Emit(ctx, TaskExtracted{Task: task.Text, DependsOnHistory: task.DependsOnHistory, Intent: task.Intent})
	}
	if retry == (prompts.FormatRetry{}) {
		cands := n.candidates(in)
		infos := make([]prompts.ClassifierCapability, len(cands))
		for i, c := range cands {
			infos[i] = n.info(c)
		}
		p, err := n.prompt(prompts.TaskSelection, prompts.TaskSelectionData{Capabilities: infos, History: history(s), Message: s.Turn.Input})
		if err != nil {
			return nil, nil, false, err
		}
		shape := taskSelectionFor(cands)
		c, err := n.generate(ctx, llm.RoleClassifier, p.System, p.Turn, &shape, nil)
		used = addTokens(used, llm.RoleClassifier, c)
		if err == nil && c.offline {
			setTask(offlineTask(s))
			return n.offlineSelect(taskText(*t), t.Input, in), used, true, nil
		}
		var task *state.Task
		var names []string
		if err == nil {
			task, names, err = parseTaskSelection(c.text)
			if err != nil {
				err = formatError(n.name, err.Error(), taskSelectionShape, c.text, nil)
			}
		}
		switch {
		case err == nil:
			setTask(task)
			return n.registered(ctx, names), used, false, nil
		case !errors.Is(err, ErrFormat) && !errors.Is(err, llm.ErrTruncated):
			return nil, used, false, err
		}
		graph.Emit(ctx, Status{Node: n.name, Text: fmt.Sprintf("The reply with the task and the selection was unusable (%v); asking for them apart…", err)})
	}
	var taskRetry, selRetry prompts.FormatRetry
	if part == PartTask {
		taskRetry = retry
	} else {
		selRetry = retry
	}
	task, c, err := n.askTask(ctx, s, taskRetry, n.name, map[string]any{MetaPart: PartTask})
	used = addTokens(used, llm.RoleTaskExtraction, c)
	if err != nil {
		return nil, used, false, err
	}
	setTask(task)
	selected, calls, offline, err := n.classify(ctx, taskText(*t), t.Input, "", selRetry, "", intentOf(*t))
	used = addTokens(used, llm.RoleClassifier, calls...)
	return selected, used, offline, err
}
