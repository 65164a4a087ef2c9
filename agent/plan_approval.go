package agent

import (
	"context"
	"slices"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/state"
)

// planApprovalNode asks a human to approve the turn's plan before any step
// runs (Options.PlanApproval). It is a graph node of its own rather than part
// of the orchestrator: an interrupt discards the interrupting node's update,
// so asking inside the orchestrator would plan again (another LLM call, maybe
// another plan) after the answer. Here the plan is already in the checkpoint.
func (a *Agent) planApprovalNode() graph.NodeFunc[state.State, state.Update] {
	return func(ctx context.Context, s state.State) (state.Update, error) {
		now := a.cfg.Now()
		if u, stop := a.overLimit(s, now); stop {
			return u, nil
		}
		t := s.Turn
		if t.Plan == nil {
			t.Control.Error = &state.ErrorInfo{Node: state.NodePlanApproval, StepIndex: -1, At: now, Message: "plan approval ran without a plan",
				Classification: capabilities.Classification{Severity: capabilities.Critical, Kind: capabilities.KindUnknown, UserMessage: "internal routing error: plan approval without a plan"}}
			return state.Update{Turn: &t, NodeSteps: 1}, nil
		}
		id := planApprovalID(t, t.Plan.Number)
		d, ok := answerOf(ctx)
		if !ok || (d.ID != id && d.Approved) {
			return state.Update{}, graph.Interrupt(a.planApproval(t.Plan, id, now))
		}
		if !d.Approved {
			t.Done = true
			msg := state.Message{Role: state.RoleAssistant, Kind: state.KindRejected, Turn: t.Number, Time: now,
				Content: planNotApprovedText(d)}
			return state.Update{Turn: &t, Messages: []state.Message{msg}, NodeSteps: 1}, nil
		}
		p := *t.Plan
		p.Steps = slices.Clone(p.Steps)
		if d.Plan != nil {
			steps, err := a.validateEdited(s, d.Plan)
			if err != nil {
				// Resume validates an edited plan before resuming; this is the
				// backstop (a resume value written by another replica): ask again.
				ap := a.planApproval(t.Plan, id, now)
				ap.Summary = "The edited plan was not accepted (" + err.Error() + ").\n\n" + ap.Summary
				return state.Update{}, graph.Interrupt(ap)
			}
			p.Steps = steps
			for _, st := range steps {
				if c := st.Capability; !slices.Contains(t.ActiveCapabilities, c) && c != state.NodeRespond && c != state.NodeClarify {
					t.ActiveCapabilities = append(slices.Clip(t.ActiveCapabilities), c)
				}
			}
			emit(ctx, Event{Type: EventPlan, Node: state.NodePlanApproval, Plan: &p, Total: len(p.Steps), Text: "plan edited by a human"})
		}
		p.Approved = true
		t.Plan = &p
		return state.Update{Turn: &t, NodeSteps: 1}, nil
	}
}

func (a *Agent) planApproval(p *state.Plan, id string, now time.Time) state.Approval {
	cp := *p
	return state.Approval{ID: id, Kind: state.ApprovalPlan, StepIndex: -1, Summary: planSummary(p), Plan: &cp,
		Created: now, Expires: a.expires(now)}
}

// validateEdited checks a human's edited plan with the orchestrator's
// rules, and that every step names a capability the turn may use (see
// TurnRequest.AllowedCapabilities): the person approving may not be the
// caller, and a plan is approved to run, so a step the step wrapper would
// refuse is refused here, before anything runs.
func (a *Agent) validateEdited(s state.State, p *state.Plan) ([]state.PlanStep, error) {
	planned := make([]capabilities.PlannedStep, len(p.Steps))
	for i, st := range p.Steps {
		planned[i] = st.PlannedStep
		if !allowed(s, st.Capability) {
			return nil, &NotAllowedError{Step: i, Capability: st.Capability}
		}
	}
	return nodes.ValidatePlan(planned, a.cfg.Registry, s.Context, s.Turn)
}
