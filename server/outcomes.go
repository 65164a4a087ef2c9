package server

import (
	"context"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/native"
)

// How an attempt of a side-effecting step ended (capabilities.Outcome) is
// shown on every face: the agent's audit records that carry an outcome
// (ended, refused, unrequested) go to the run's followers as "audit"
// events (the page draws a badge per step, AG-UI sends CUSTOM "outcome"),
// and a chat answer ends with one line per outcome (outcomeMarkdown).

// publicOutcome is what a run's followers see of an audit record: nil for
// a record without an outcome (planned, asked, approved, started), else
// the attempt's outcome without who ran it, the approval id (it ends in a
// secret of the turn), the idempotency key or the stored result.
func publicOutcome(r *agent.AuditRecord) *agent.AuditRecord {
	if r == nil || r.Outcome == "" {
		return nil
	}
	return &agent.AuditRecord{Time: r.Time, Event: r.Event, Outcome: r.Outcome, Reason: r.Reason, Message: r.Message,
		Capability: r.Capability, Summary: r.Summary, Changes: r.Changes, Target: r.Target, Turn: r.Turn, Plan: r.Plan, Step: r.Step, Attempt: r.Attempt,
		Before: r.Before, Readback: r.Readback, Reconciled: r.Reconciled, ResultSummary: r.ResultSummary, Duration: r.Duration}
}

// Outcomes lists what became of a thread's changes (GET
// /api/threads/{thread}/outcomes): each attempt's outcome as its followers
// saw it (publicOutcome), oldest first, from the agent's audit log — none
// for an agent that keeps none.
func (n serverNative) Outcomes(ctx context.Context, th native.Thread) ([]*agent.AuditRecord, error) {
	ar, ok := n.s.cfg.Runner.(AuditReader)
	if !ok {
		return nil, nil
	}
	recs, err := ar.Audit(ctx, agent.AuditFilter{Thread: th.Internal, Limit: maxAuditLimit})
	if err != nil {
		return nil, err
	}
	var out []*agent.AuditRecord
	for _, e := range recs {
		if p := publicOutcome(&e.AuditRecord); p != nil {
			out = append(out, p)
		}
	}
	return out, nil
}
