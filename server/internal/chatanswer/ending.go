package chatanswer

import (
	"errors"
	"slices"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/state"
)

// Reply is what a finished chat turn said: its answer and its trace.
type Reply struct {
	Content   string
	Reasoning string
}

// outcomeLine is one attempt's outcome as a line of Markdown:
//
//	**confirmed** — set BTS:MAG:Q1:CURRENT 92.00 → 105.00 A (readback 105.00 A).
func outcomeLine(r agent.AuditRecord) string {
	return "**" + agent.OutcomeLabel(r.Outcome) + "** — " + agent.DescribeOutcome(r)
}

// OutcomeMarkdown is the outcomes of a turn's side-effecting steps, one
// paragraph each, to end a chat answer with ("" when there were none).
func OutcomeMarkdown(recs []agent.AuditRecord) string {
	lines := make([]string, len(recs))
	for i, r := range recs {
		lines[i] = outcomeLine(r)
	}
	return strings.Join(lines, "\n\n")
}

// ApprovalPrompt is what an approval request shows a human in a chat
// answer: its summary and, for each change, the value now beside the value
// asked ("- BTS:MAG:Q1:CURRENT: now 92.00 A → 105.00 A").
func ApprovalPrompt(a *state.Approval) string {
	if b := approvalBefore(a); b != "" {
		return a.Summary + "\n\n" + b
	}
	return a.Summary
}

// approvalBefore is agent.DescribeBefore as a Markdown list ("" when the
// capability cannot read its targets).
func approvalBefore(a *state.Approval) string {
	lines := agent.DescribeBefore(a)
	for i, l := range lines {
		lines[i] = "- " + l
	}
	return strings.Join(lines, "\n")
}

// ShutdownNote ends the answer of a run the server's shutdown stopped.
const ShutdownNote = "\n\n(The server is shutting down: this run stopped at its last checkpoint. Send your message again to continue.)"

// CanceledNote ends the answer of a run a cancel request stopped (the
// operator's page, the API), so that a chat client waiting on it gets
// more than an empty message.
const CanceledNote = "\n\n(This run was canceled before it finished. Send your message again to continue.)"

// EndNote is what an answer's text ends with for how its run ended: a
// note when the shutdown or a cancel request stopped it, else nothing.
func EndNote(status agent.RunStatus, shutdown bool) string {
	switch {
	case shutdown:
		return ShutdownNote
	case status == agent.RunCanceled:
		return CanceledNote
	}
	return ""
}

// Join appends a closing sentence to an answer's text.
func Join(content, sentence string) string {
	if content == "" {
		return sentence
	}
	return content + "\n\n" + sentence
}

// Answerable reports whether a run's error is an answer to the client —
// a FATAL failure the agent classified, or the turn's time limit — rather
// than a failure of the request: a Chat Completions client gets it as the
// assistant's message (200), so no SDK retries it into a second run.
func Answerable(err error) bool {
	var (
		fe *agent.FatalError
		te *apierror.TurnTimeoutError
	)
	return errors.As(err, &fe) || errors.As(err, &te)
}

// collectArtifact keeps an artifact event's artifact, replacing one with
// the same id (a step run again after a crash).
func collectArtifact(arts []capabilities.Artifact, ev agent.Event) []capabilities.Artifact {
	if ev.Artifact == nil {
		return arts
	}
	if i := slices.IndexFunc(arts, func(a capabilities.Artifact) bool { return a.ID == ev.Artifact.ID }); i >= 0 {
		arts[i] = *ev.Artifact
		return arts
	}
	return append(arts, *ev.Artifact)
}
