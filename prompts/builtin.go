package prompts

import (
	"strconv"
	"strings"
)

// The embedded templates of the roles a turn asks on every turn, written out
// as Go: text/template looks up every field by reflection, which was a tenth
// of a turn's CPU. New uses one only while its template is the embedded
// default; an overridden template is executed as written.
// TestBuiltinRenderersMatchTemplates holds each to its template's bytes.
//
// Each returns the template's output before Render trims it, and false for
// data of a type its template was not written for (then the template runs).
var builtinRenderers = map[string]func(b *strings.Builder, data any) bool{
	TaskExtractionTurn: renderTaskExtractionTurn,
	ClassifierBatched:  renderClassifierBatched,
	ClassifierTurn:     renderClassifierTurn,
	Orchestrator:       renderOrchestrator,
	OrchestratorTurn:   renderOrchestratorTurn,
	Response:           renderResponse,
	ResponseTurn:       renderResponseTurn,
}

// writeFormatRetry is the turn templates' shared "previous reply" block.
func writeFormatRetry(b *strings.Builder, r FormatRetry) {
	if r.FormatError == "" {
		return
	}
	b.WriteString("\n\nYour previous reply could not be used: ")
	b.WriteString(r.FormatError)
	if r.PreviousReply != "" {
		b.WriteString("\nPrevious reply:\n")
		b.WriteString(r.PreviousReply)
	}
	b.WriteString("\nReply again with only one JSON object in this shape: ")
	b.WriteString(r.ExpectedShape)
}

func writeHistory(b *strings.Builder, history []HistoryMessage) {
	for _, m := range history {
		b.WriteString("\n")
		b.WriteString(m.Role)
		b.WriteString(": ")
		b.WriteString(m.Content)
	}
}

func renderTaskExtractionTurn(b *strings.Builder, data any) bool {
	var (
		history []HistoryMessage
		message string
		retry   FormatRetry
	)
	switch d := data.(type) {
	case TaskExtractionData:
		history, message, retry = d.History, d.Message, d.FormatRetry
	case TaskSelectionData:
		history, message, retry = d.History, d.Message, d.FormatRetry
	default:
		return false
	}
	if len(history) > 0 {
		b.WriteString("Chat history:")
		writeHistory(b, history)
		b.WriteString("\n\n")
	}
	b.WriteString("Latest user message:\n")
	b.WriteString(message)
	writeFormatRetry(b, retry)
	b.WriteString("\n")
	return true
}

func renderClassifierBatched(b *strings.Builder, data any) bool {
	d, ok := data.(ClassifierBatchedData)
	if !ok {
		return false
	}
	b.WriteString("You are an expert task classification assistant. Select every capability needed to complete the user's task, which comes in the user message, and only those.\n\nCapabilities:")
	for _, c := range d.Capabilities {
		b.WriteString("\n\n## ")
		b.WriteString(c.Name)
		b.WriteString("\n")
		b.WriteString(c.Description)
		if c.Instructions != "" {
			b.WriteString("\nWhen it is needed: ")
			b.WriteString(c.Instructions)
		}
		if len(c.Examples) > 0 {
			b.WriteString("\nExamples:")
			for _, e := range c.Examples {
				b.WriteString("\n- Request: ")
				b.WriteString(strconv.Quote(e.Query))
				if e.Result {
					b.WriteString(" → needed")
				} else {
					b.WriteString(" → not needed")
				}
				if e.Reason != "" {
					b.WriteString(" (")
					b.WriteString(e.Reason)
					b.WriteString(")")
				}
			}
		}
	}
	b.WriteString("\n\nReply with one JSON object and nothing else, listing capability names exactly as written above:\n" +
		"{\"capabilities\": [\"<name>\", ...]}\nAn empty list is right when the task is only conversation.\n")
	return true
}

func renderClassifierTurn(b *strings.Builder, data any) bool {
	var (
		task, previous string
		retry          FormatRetry
	)
	switch d := data.(type) {
	case ClassifierBatchedData:
		task, previous, retry = d.Task, d.PreviousFailure, d.FormatRetry
	case ClassifierData:
		task, previous, retry = d.Task, d.PreviousFailure, d.FormatRetry
	default:
		return false
	}
	b.WriteString("User request:\n")
	b.WriteString(task)
	if previous != "" {
		b.WriteString("\n\nPrevious approach failed: ")
		b.WriteString(previous)
		b.WriteString("\nTake this into account.")
	}
	writeFormatRetry(b, retry)
	b.WriteString("\n")
	return true
}

// orchestratorHead is orchestrator.tmpl up to its capabilities.
const orchestratorHead = `You are an expert execution planner. Write the plan of steps that completes the task with the capabilities below. The task, and what the turn already knows, come in the user message.

Each step is a JSON object with exactly these keys:
- "context_key": a unique name for the step's output (lower_snake_case)
- "capability": the capability that runs the step, exactly as named below
- "task_objective": a complete, self-sufficient description of what the step must do
- "success_criteria": how to tell the step succeeded
- "expected_output": the context type the step produces
- "parameters": an object of parameters for the capability (may be empty)
- "inputs": a list of {"CONTEXT_TYPE": "context_key"} naming the outputs of earlier steps (or available context) the step reads

Guidelines:
- Include every context the step needs in "inputs", using exact context keys of earlier steps or of the available context.
- A step may only read outputs of steps before it.
- Reuse available context by key where it still fits (for example channel names found earlier); produce fresh data when the task asks for current values.
- Never invent data; every value must come from a capability.
- The plan must end with exactly one "respond" step (answer the user) or "clarify" step (ask the user), and contain no other respond or clarify step.

Reply with one JSON object and nothing else: {"steps": [ ... ]}

# CAPABILITY PLANNING GUIDELINES`

func renderOrchestrator(b *strings.Builder, data any) bool {
	d, ok := data.(OrchestratorData)
	if !ok {
		return false
	}
	b.WriteString(orchestratorHead)
	for _, c := range d.Capabilities {
		b.WriteString("\n\n## ")
		b.WriteString(c.Name)
		b.WriteString("\n")
		b.WriteString(c.Description)
		if c.SideEffects {
			b.WriteString("\nChanges the outside world: only for a change the user asked for (see USER INTENT).")
		}
		if len(c.Provides) > 0 {
			b.WriteString("\nProvides: ")
			b.WriteString(strings.Join(c.Provides, ", "))
		}
		if len(c.Requires) > 0 {
			b.WriteString("\nRequires: ")
			b.WriteString(strings.Join(c.Requires, ", "))
		}
		if c.Instructions != "" {
			b.WriteString("\n")
			b.WriteString(c.Instructions)
		}
		if c.Parameters != "" {
			b.WriteString("\nParameters (JSON Schema; the step's \"parameters\" must match it): ")
			b.WriteString(c.Parameters)
		}
		for _, e := range c.Examples {
			b.WriteString("\nExample ")
			b.WriteString(strconv.Itoa(e.Number))
			b.WriteString(": ")
			b.WriteString(e.Scenario)
			b.WriteString("\n")
			b.WriteString(e.Step)
			if e.Notes != "" {
				b.WriteString("\nNotes: ")
				b.WriteString(e.Notes)
			}
		}
	}
	b.WriteString("\n")
	return true
}

func renderOrchestratorTurn(b *strings.Builder, data any) bool {
	d, ok := data.(OrchestratorData)
	if !ok {
		return false
	}
	b.WriteString("TASK TO PLAN: ")
	b.WriteString(d.Task)
	if d.Intent != "" {
		b.WriteString("\n\nUSER INTENT: ")
		b.WriteString(d.Intent)
	}
	if len(d.History) > 0 {
		b.WriteString("\n\nChat history:")
		writeHistory(b, d.History)
	}
	if len(d.AvailableContext) > 0 {
		b.WriteString("\n\nAVAILABLE CONTEXT (already produced, kept from earlier turns or by steps of this turn; reuse it by key where it still fits):")
		for _, c := range d.AvailableContext {
			b.WriteString("\n- {\"")
			b.WriteString(c.Type)
			b.WriteString("\": \"")
			b.WriteString(c.Key)
			b.WriteString("\"}")
			if c.Turn != 0 {
				b.WriteString(" (turn ")
				b.WriteString(strconv.Itoa(c.Turn))
				b.WriteString(")")
			}
			b.WriteString(": ")
			b.WriteString(c.TaskObjective)
			if c.Summary != "" {
				b.WriteString(" — ")
				b.WriteString(c.Summary)
			}
		}
	}
	if d.ReplanReason != "" {
		b.WriteString("\n\nREPLANNING: the previous plan failed")
		if d.FailedStep != "" {
			b.WriteString(" at step ")
			b.WriteString(d.FailedStep)
		}
		b.WriteString(". Make a new plan that avoids the failure.\n")
		b.WriteString(d.ReplanReason)
	}
	if d.FormatError != "" {
		b.WriteString("\n\nYour previous reply could not be used: ")
		b.WriteString(d.FormatError)
		if d.PreviousReply != "" {
			b.WriteString("\nPrevious reply:\n")
			b.WriteString(d.PreviousReply)
		}
		b.WriteString("\nReply again with only the JSON object in the shape described above.")
	}
	b.WriteString("\n")
	return true
}

func renderResponse(b *strings.Builder, data any) bool {
	d, ok := data.(ResponseData)
	if !ok {
		return false
	}
	if d.Conversational {
		b.WriteString("You are the assistant of an agent that operates scientific and industrial facilities. No tool ran for this message: answer conversationally and briefly. If the user asks what you can do, describe these capabilities:\n")
		b.WriteString(d.CapabilityOverview)
		b.WriteString("\nNever invent measurements or values.")
	} else {
		b.WriteString("You are the assistant of an agent that operates scientific and industrial facilities. Answer the user's task from the results in the user message, and only from them.\n\n" +
			"Rules:\n- Quote values with their units exactly as given.\n- If a result is missing or a step failed, say so plainly; never invent data.\n- Be brief and concrete.")
	}
	b.WriteString("\n")
	return true
}

func writeResults(b *strings.Builder, items []ContextItem) {
	for _, c := range items {
		b.WriteString("\n- ")
		b.WriteString(c.Type)
		b.WriteString(" \"")
		b.WriteString(c.Key)
		b.WriteString("\"")
		if c.TaskObjective != "" {
			b.WriteString(" (")
			b.WriteString(c.TaskObjective)
			b.WriteString(")")
		}
		b.WriteString(": ")
		b.WriteString(c.Summary)
	}
}

func renderResponseTurn(b *strings.Builder, data any) bool {
	d, ok := data.(ResponseData)
	if !ok {
		return false
	}
	if len(d.History) > 0 {
		b.WriteString("Earlier conversation:")
		writeHistory(b, d.History)
		b.WriteString("\n\n")
	}
	b.WriteString("Task: ")
	b.WriteString(d.Task)
	if !d.Conversational {
		b.WriteString("\n\nResults:")
		if len(d.Context) == 0 {
			b.WriteString("\n(none)")
		}
		writeResults(b, d.Context)
		if len(d.EarlierContext) > 0 {
			b.WriteString("\n\nEarlier results (from previous turns, used by this turn's steps):")
			writeResults(b, d.EarlierContext)
		}
	}
	if len(d.Notes) > 0 {
		b.WriteString("\n\nMention these in the answer:")
		for _, n := range d.Notes {
			b.WriteString("\n- ")
			b.WriteString(n.Capability)
			b.WriteString(": ")
			b.WriteString(n.Note)
		}
	}
	b.WriteString("\n")
	return true
}
