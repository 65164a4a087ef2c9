package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
)

// The scripted model's replies, by topic of the turn: the plans a model
// writes for the demo's questions (a real model's fence and sentence
// around the plan), the selections, the tasks, and an answer streamed in
// pieces.
var (
	selections = map[string]string{
		"read":     `["channel_finding", "channel_read"]`,
		"history":  `["channel_finding", "archiver_retrieval"]`,
		"write":    `["channel_finding", "channel_write"]`,
		"followup": `["archiver_retrieval"]`,
	}
	plans = map[string]string{
		"read": `{"steps": [
 {"context_key": "beam_channel", "capability": "channel_finding", "task_objective": "Find the storage ring beam current channel", "expected_output": "CHANNEL_ADDRESSES", "parameters": {"query": "storage ring beam current"}},
 {"context_key": "beam_value", "capability": "channel_read", "task_objective": "Read the storage ring beam current", "expected_output": "CHANNEL_VALUES", "inputs": [{"CHANNEL_ADDRESSES": "beam_channel"}]},
 {"context_key": "answer", "capability": "respond", "task_objective": "Answer with the beam current"}]}`,
		"history": `{"steps": [
 {"context_key": "rf_channels", "capability": "channel_finding", "task_objective": "Find the RF cavity voltage channels", "expected_output": "CHANNEL_ADDRESSES", "parameters": {"query": "RF cavity voltage"}},
 {"context_key": "rf_history", "capability": "archiver_retrieval", "task_objective": "Retrieve the RF cavity voltages over the last 2 hours", "expected_output": "ARCHIVER_DATA", "parameters": {"duration": "2h"}, "inputs": [{"CHANNEL_ADDRESSES": "rf_channels"}]},
 {"context_key": "answer", "capability": "respond", "task_objective": "Summarise the RF cavity voltages"}]}`,
		"write": `{"steps": [
 {"context_key": "q1_channel", "capability": "channel_finding", "task_objective": "Find the BTS Q1 quadrupole current channel", "expected_output": "CHANNEL_ADDRESSES", "parameters": {"query": "BTS Q1 quadrupole current"}},
 {"context_key": "q1_write", "capability": "channel_write", "task_objective": "Set BTS:MAG:Q1:CURRENT to 105 A", "expected_output": "CHANNEL_WRITE_RESULTS", "parameters": {"value": 105}, "inputs": [{"CHANNEL_ADDRESSES": "q1_channel"}]},
 {"context_key": "answer", "capability": "respond", "task_objective": "Say what was set"}]}`,
		"followup": `{"steps": [
 {"context_key": "beam_history", "capability": "archiver_retrieval", "task_objective": "Retrieve the storage ring beam current over the last hour", "expected_output": "ARCHIVER_DATA", "parameters": {"duration": "1h"}, "inputs": [{"CHANNEL_ADDRESSES": "beam_channel"}]},
 {"context_key": "answer", "capability": "respond", "task_objective": "Summarise the beam current over the last hour"}]}`,
	}
	followUpTask = "Show the storage ring beam current over the last hour"
	answer       = []string{"The storage ring beam current ", "is 500.1 mA ", "(SR:DCCT:CURRENT), ", "steady over the period."}
)

// topic reads which demo question a text is about.
func topic(text string) string {
	switch {
	case strings.Contains(text, "Q1"):
		return "write"
	case strings.Contains(text, "RF cavity"):
		return "history"
	case strings.Contains(text, "last hour"):
		return "followup"
	}
	return "read"
}

// after returns the line after marker in the request's last message (the
// turn's content), or that whole message.
func after(req llm.Request, marker string) string {
	msg := req.Messages[len(req.Messages)-1].Content
	if i := strings.Index(msg, marker); i >= 0 {
		msg = msg[i+len(marker):]
	}
	line, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	return line
}

// taskJSON is the task extraction's reply for the latest user message:
// the follow-up made self-contained, any other message as it is.
func taskJSON(msg string) string {
	task, history, in := msg, false, `{"kind": "read", "changes": []}`
	switch topic(msg + followUpHint(msg)) {
	case "followup":
		task, history = followUpTask, true
	case "write":
		in = `{"kind": "change", "changes": [{"target": "quadrupole Q1 current in the BTS line", "value": 105, "unit": "A"}]}`
	}
	return fmt.Sprintf(`"task": %q, "depends_on_chat_history": %v, "intent": %s`, task, history, in)
}

// followUpHint makes the follow-up ("And what was it over the last
// hour?") read as one.
func followUpHint(msg string) string {
	if strings.HasPrefix(msg, "And ") {
		return " last hour"
	}
	return ""
}

// newModel is the scripted model: every call answers after latency, the
// answer streams (its last piece half a latency after its first), and cached prompt tokens are reported as a provider
// with automatic prompt caching would.
func newModel(latency time.Duration) *llmtest.Model {
	text := func(s string) llmtest.Reply { return llmtest.Reply{Text: s, Delay: latency} }
	return llmtest.New().NoLog().CachePrompts().
		On(llmtest.All(llmtest.RoleIs(llm.RoleClassifier), llmtest.PromptContains("and select every capability")), func(req llm.Request) llmtest.Reply {
			msg := after(req, "Latest user message:\n")
			return text("```json\n{" + taskJSON(msg) + `, "capabilities": ` + selections[topic(msg+followUpHint(msg))] + "}\n```")
		}).
		On(llmtest.RoleIs(llm.RoleTaskExtraction), func(req llm.Request) llmtest.Reply {
			return text("{" + taskJSON(after(req, "Latest user message:\n")) + "}")
		}).
		On(llmtest.RoleIs(llm.RoleClassifier), func(req llm.Request) llmtest.Reply {
			return text(`{"capabilities": ` + selections[topic(after(req, "User request:\n"))] + "}")
		}).
		On(llmtest.RoleIs(llm.RoleOrchestrator), func(req llm.Request) llmtest.Reply {
			return text("Here is the plan.\n```json\n" + plans[topic(after(req, "TASK TO PLAN: "))] + "\n```")
		}).
		On(llmtest.RoleIs(llm.RoleResponse), func(llm.Request) llmtest.Reply {
			// The answer streams over half a latency after its first piece.
			return llmtest.Reply{Chunks: answer, Delay: latency, ChunkDelay: latency / time.Duration(2*(len(answer)-1))}
		}).
		Only(llm.RoleTaskExtraction, llm.RoleClassifier, llm.RoleOrchestrator, llm.RoleResponse)
}
