package chatanswer

import (
	"fmt"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/server/internal/answertext"
	"github.com/capgraph/capgraph/state"
)

// Piece is one output of the rendering of an event: a status line, a
// reasoning (trace) fragment, or answer content.
type Piece struct {
	Status    *Status
	Reasoning string
	Content   string
}

// Status is a status line (Open WebUI's status frame): Done marks the
// last one.
type Status struct {
	Description string
	Done        bool
}

// Renderer turns agent events into the three Chat Completions channels
// (frontends.md §4): Open WebUI status frames, the plan and step trace in
// reasoning_content, and the answer in content. What it gathered is read
// once the run ended.
type Renderer struct {
	plan *state.Plan
	// streamed holds the answer text streamed since the last reset, so the
	// final message repeats only what was not streamed already.
	streamed  strings.Builder
	Approval  *state.Approval
	Usage     agent.Usage
	Status    agent.RunStatus
	Content   strings.Builder
	Reasoning strings.Builder
	// Artifacts are the turn's, shown after the answer (artifacts.go);
	// Base is the server's address their images link to.
	Artifacts []capabilities.Artifact
	Base      string
	// outcomes are the turn's side-effecting attempts that ended
	// (outcomes.go), said at the end of the answer; answered is set once
	// the answer's own text has come.
	outcomes []agent.AuditRecord
	answered bool
	// lastStatus is the status line shown last: a node that says what
	// it does ("Planning…") as it starts is the line shown already.
	lastStatus string
	// pieces is the array Render returns its pieces in, reused by the
	// next call: every event is rendered, and most make one piece or none.
	pieces []Piece
}

// repeatsStatus reports whether st says again the line shown last (one
// line per phase, not "Planning" then "Planning…"), and remembers it.
func (c *Renderer) repeatsStatus(st *Status) bool {
	key := strings.TrimRight(strings.TrimSpace(st.Description), "….")
	if key == c.lastStatus && !st.Done {
		return true
	}
	c.lastStatus = key
	return false
}

// Render is what ev adds to the answer, in the order to send it. The
// pieces are valid until the next call.
func (c *Renderer) Render(ev agent.Event) []Piece {
	out := c.pieces[:0]
	switch ev.Type {
	case agent.EventNodeStart:
		if text, ok := nodeStatus[ev.Node]; ok {
			out = append(out, Piece{Status: &Status{Description: text}})
		}
	case agent.EventStatus:
		if ev.Text != "" {
			out = append(out, Piece{Status: &Status{Description: ev.Text}})
		}
	case agent.EventTask:
		out = append(out, Piece{Reasoning: "Task: " + ev.Text + "\n"})
	case agent.EventCapabilities:
		if len(ev.Capabilities) > 0 {
			out = append(out, Piece{Reasoning: "Capabilities: " + strings.Join(ev.Capabilities, ", ") + "\n"})
		}
	case agent.EventPlan:
		c.plan = ev.Plan
		out = append(out, Piece{Reasoning: formatPlan(ev.Plan)})
	case agent.EventStepStart:
		line := fmt.Sprintf("%d/%d %s", ev.Step+1, max(ev.Total, ev.Step+1), ev.Capability)
		if obj := c.objective(ev.Step); obj != "" {
			line += " — " + obj
		}
		out = append(out, Piece{Status: &Status{Description: "Step " + line}}, Piece{Reasoning: "▶ " + line + "\n"})
	case agent.EventStepEnd:
		line := fmt.Sprintf("%d/%d %s", ev.Step+1, max(ev.Total, ev.Step+1), ev.Capability)
		if ev.Err != "" {
			out = append(out, Piece{Reasoning: "✖ " + line + " — " + ev.Err + "\n"})
		} else {
			out = append(out, Piece{Reasoning: "✔ " + line + answertext.DurationNote(ev.Duration) + "\n"})
		}
	case agent.EventRetry:
		if ev.Retry != nil {
			what := ev.Retry.What()
			if obj := c.objective(ev.Retry.Step); ev.Retry.Capability != "" && obj != "" {
				what += " — " + obj
			}
			out = append(out, Piece{Reasoning: fmt.Sprintf("↻ %s failed (attempt %d/%d), retrying in %s: %s\n",
				what, ev.Retry.Attempt, ev.Retry.Max, ev.Retry.Delay.Round(time.Millisecond), ev.Retry.Reason)})
		}
	case agent.EventToken:
		if ev.Text != "" {
			c.answered = true
			c.streamed.WriteString(ev.Text)
			out = append(out, Piece{Content: ev.Text})
		}
	case agent.EventAnswerReset:
		// Chat Completions cannot take text back: say plainly that what
		// was shown is void; the retry (or the error report) follows.
		if c.streamed.Len() > 0 {
			out = append(out, Piece{Content: AnswerResetNote})
		}
		c.streamed.Reset()
	case agent.EventMessage:
		if ev.Message != nil {
			if rest := answertext.Unstreamed(ev.Message.Content, c.streamed.String()); rest != "" {
				c.answered = true
				out = append(out, Piece{Content: rest})
			}
		}
		c.streamed.Reset()
	case agent.EventArtifact:
		c.Artifacts = collectArtifact(c.Artifacts, ev)
	case agent.EventDenied:
		out = append(out, Piece{Reasoning: "⛔ " + ev.Text + "\n"})
	case agent.EventApprovalRequired:
		c.Approval = ev.Approval
		out = append(out, Piece{Status: &Status{Description: "Waiting for your approval", Done: true}})
	case agent.EventModelCall:
		// The usage a client sums: the model calls this request's run made
		// (a turn paused for approval reports each part once, in its own
		// response); 0 when no model was called (offline).
		if ev.Call != nil {
			u := ev.Call.Usage
			c.Usage.PromptTokens += u.PromptTokens
			c.Usage.CompletionTokens += u.CompletionTokens
			c.Usage.TotalTokens += u.TotalTokens
			c.Usage.CachedPromptTokens += u.CachedPromptTokens
		}
	case agent.EventAudit:
		if ev.Audit != nil && ev.Audit.Outcome != "" {
			c.outcomes = append(c.outcomes, *ev.Audit)
		}
	case agent.EventDone:
		c.Status = ev.Status
		if tail := c.closing(); tail != "" {
			out = append(out, Piece{Content: tail})
		}
	}
	// Once the answer has started, later trace lines are dropped: Open WebUI
	// would open a second reasoning block below the answer.
	kept := out[:0]
	for _, p := range out {
		if p.Reasoning != "" && c.Content.Len() > 0 {
			continue
		}
		if p.Status != nil && c.repeatsStatus(p.Status) {
			continue
		}
		c.Content.WriteString(p.Content)
		c.Reasoning.WriteString(p.Reasoning)
		kept = append(kept, p)
	}
	c.pieces = out[:0]
	return kept
}

// closing is what the answer ends with when the run is done: the outcome
// of each side-effecting attempt and, when the run waits for an approval,
// what is to be approved with the values before (the approval token
// follows, approvalText). The caller appends it to the content.
func (c *Renderer) closing() string {
	var parts []string
	if md := OutcomeMarkdown(c.outcomes); md != "" {
		parts = append(parts, md)
	}
	if c.Status == agent.RunInterrupted && c.Approval != nil {
		if c.answered {
			// The answer asked already; the values before are still news.
			if b := approvalBefore(c.Approval); b != "" {
				parts = append(parts, b)
			}
		} else {
			parts = append(parts, ApprovalPrompt(c.Approval))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	tail := strings.Join(parts, "\n\n")
	if c.Content.Len() > 0 {
		tail = "\n\n" + tail
	}
	return tail
}

// AnswerResetNote marks streamed answer text that a failed attempt left
// behind, in frontends that cannot remove it.
const AnswerResetNote = "\n\n*(The answer above was interrupted; it is written again below.)*\n\n"

// nodeStatus is the status line shown while an infrastructure node runs
// (capability steps get theirs from step_start).
var nodeStatus = map[string]string{
	state.NodeTaskExtraction: "Understanding the request",
	state.NodeClassifier:     "Selecting capabilities",
	state.NodeOrchestrator:   "Planning",
	state.NodeRespond:        "Writing the answer",
	state.NodeClarify:        "Asking for clarification",
	state.NodeError:          "Explaining what went wrong",
}

// ApprovalText is what ends an approval request: the token the next
// request must carry, and how to answer.
func ApprovalText(a *state.Approval, token string, hadContent bool) string {
	var b strings.Builder
	if !hadContent && a != nil {
		b.WriteString(ApprovalPrompt(a))
	}
	fmt.Fprintf(&b, "\n\nApproval ID: %s — reply \"yes\" to proceed or \"no\" to cancel.", token)
	return b.String()
}

func (c *Renderer) objective(step int) string {
	if c.plan == nil || step < 0 || step >= len(c.plan.Steps) {
		return ""
	}
	return c.plan.Steps[step].TaskObjective
}

func formatPlan(p *state.Plan) string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	if p.Number > 1 {
		fmt.Fprintf(&b, "Plan (attempt %d):\n", p.Number)
	} else {
		b.WriteString("Plan:\n")
	}
	for i, st := range p.Steps {
		fmt.Fprintf(&b, "%d. %s", i+1, st.Capability)
		if st.TaskObjective != "" {
			b.WriteString(" — " + st.TaskObjective)
		}
		b.WriteString("\n")
	}
	return b.String()
}
