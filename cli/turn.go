package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

// Outcome is how a turn ended: its assistant message, the approval it waits
// for (if any), its status and how many retries it took.
type Outcome struct {
	Message  *state.Message
	Approval *state.Approval
	Status   agent.RunStatus
	Retries  int
	// Artifacts are the renderable results the turn's steps returned.
	Artifacts []capabilities.Artifact
	// Outcomes are the audit records of the turn's side-effecting attempts
	// that ended (refused, failed, confirmed, mismatch, unconfirmed,
	// unrequested), in order.
	Outcomes []agent.AuditRecord
}

// consume drains a turn's events into p and returns its outcome. A
// *agent.FatalError or any other failure of the run is returned as the error.
func consume(events iter.Seq2[agent.Event, error], p progress) (Outcome, error) {
	var out Outcome
	defer p.stop()
	for e, err := range events {
		if err != nil {
			return out, err
		}
		p.event(e)
		switch e.Type {
		case agent.EventMessage:
			out.Message = e.Message
		case agent.EventApprovalRequired:
			out.Approval = e.Approval
		case agent.EventRetry:
			out.Retries++
		case agent.EventArtifact:
			out.Artifacts = keepArtifact(out.Artifacts, e.Artifact)
		case agent.EventAudit:
			if e.Audit != nil && e.Audit.Outcome != "" {
				out.Outcomes = append(out.Outcomes, *e.Audit)
			}
		case agent.EventDone:
			out.Status = e.Status
			if e.Err != "" && e.Status != agent.RunAnswered && e.Status != agent.RunInterrupted {
				return out, errors.New(e.Err)
			}
		}
	}
	return out, nil
}

// outcomeLines says what became of each change of a turn, one line each:
// "step 1: confirmed — set BTS:MAG:Q1:CURRENT 92.00 → 105.00 A (readback
// 105.00 A)." ("" when the turn changed nothing).
func outcomeLines(recs []agent.AuditRecord) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "step %d: %s — %s\n", r.Step+1, agent.OutcomeLabel(r.Outcome), agent.DescribeOutcome(r))
	}
	return b.String()
}

// approvalQuestion is what the terminal shows of an approval: its summary
// and each change beside the value its target has now.
func approvalQuestion(a *state.Approval) string {
	s := a.Summary
	for _, l := range agent.DescribeBefore(a) {
		s += "\n  " + l
	}
	return s
}

// fatalReason renders a FATAL failure as one line.
func fatalReason(err error) (string, bool) {
	var fe *agent.FatalError
	if !errors.As(err, &fe) {
		return "", false
	}
	where := fe.Node
	if fe.Capability != "" {
		where = fe.Capability
	}
	msg := fe.Classification.UserMessage
	if msg == "" && fe.Err != nil {
		msg = fe.Err.Error()
	}
	return "fatal error in " + where + ": " + msg, true
}

// Ask runs one turn on r and writes a plain line per notable event to
// events (nil discards them): the task, the plan, each step, each retry, an
// approval request. It is what `run` does without a terminal, for programs
// (the examples) that drive an agent themselves. A FATAL failure is returned
// as the *agent.FatalError.
func Ask(ctx context.Context, r agent.Runner, req agent.TurnRequest, events io.Writer) (Outcome, error) {
	if events == nil {
		events = io.Discard
	}
	return consume(r.Run(ctx, req), &eventLines{w: events})
}

// Answer resumes a turn waiting for approval with the human's words
// ("yes", "no"), like Ask. Words that are neither a yes nor a no decide
// nothing: the error is an *agent.ApprovalError of kind
// agent.ErrApprovalUnclear, and the approval stays pending.
func Answer(ctx context.Context, r agent.Runner, thread string, approval *state.Approval, text string, events io.Writer) (Outcome, error) {
	if events == nil {
		events = io.Discard
	}
	ans := agent.Answer{Text: text}
	if approval != nil {
		ans.ApprovalID = approval.ID
	}
	return consume(r.Resume(ctx, thread, ans), &eventLines{w: events})
}
