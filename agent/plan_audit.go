package agent

import (
	"context"
	"errors"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/state"
)

// auditPlanning records what planning decided about side effects, so the
// audit log shows a change proposed as well as one carried out: a plan
// refused because a side-effecting step is not what the user asked for
// (event and outcome unrequested, the reason and, in Message, what the
// operator is told), and an accepted plan holding side-effecting steps
// (planned, one record per such step). u is the orchestrator's update as
// the wrapper keeps it (its plan numbered), err the node's error.
func (a *Agent) auditPlanning(ctx context.Context, s state.State, u state.Update, err error, now time.Time) {
	if err != nil {
		pe, ok := errors.AsType[*nodes.PlanError](err)
		if !ok || !errors.Is(pe.Kind, nodes.ErrUnrequestedChange) {
			return
		}
		name := pe.Action.Capability
		if name == "" {
			name = state.NodeOrchestrator
		}
		rec := auditBase(ctx, s, name, pe.Step, state.PlanStep{}, 0, now)
		// The plan was never made: no plan number, no attempt to key.
		rec.Plan, rec.IdempotencyKey = 0, ""
		rec.Event, rec.Outcome, rec.Message = AuditUnrequested, capabilities.OutcomeUnrequested, pe.Operator
		rec.Reason = RefusedNoChangeIntent
		if errors.Is(pe, intent.ErrMismatch) {
			rec.Reason = RefusedIntentMismatch
		}
		rec.setAction(pe.Action)
		a.auditBestEffort(ctx, rec)
		return
	}
	if u.Turn == nil || u.Turn.Plan == nil {
		return
	}
	planned := s
	planned.Turn = *u.Turn
	for i, ps := range u.Turn.Plan.Steps {
		c, ok := a.cfg.Registry.Get(ps.Capability)
		if !ok || !capabilities.HasSideEffects(c) {
			continue
		}
		rec := auditBase(ctx, planned, ps.Capability, i, ps, 0, now)
		rec.IdempotencyKey = ""
		rec.Event, rec.Summary = AuditPlanned, ps.TaskObjective
		a.auditBestEffort(ctx, rec)
	}
}
