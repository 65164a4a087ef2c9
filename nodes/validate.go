package nodes

import (
	"fmt"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

// ValidatePlan applies the orchestrator's plan rules to a plan a human
// edited (plan approval): the same checks as a planned reply, so an edited
// plan can do nothing a planned one could not, including a side-effecting
// step the turn's intent does not ask for. turn gives the task and its
// intent (a turn without a task is a read). It returns the steps to run,
// with dependencies and a terminal respond step added as the orchestrator
// adds them, or a *PlanError (unknown capability, invalid input key, a
// parameter that is not a finite number, an unrequested change) or a *FormatError (a structural problem, e.g. respond
// before the last step).
func ValidatePlan(steps []capabilities.PlannedStep, reg *capabilities.Registry, store capabilities.ContextStore, turn state.Turn) ([]state.PlanStep, error) {
	if reg == nil {
		return nil, fmt.Errorf("nodes: ValidatePlan needs a registry")
	}
	valid, prob := validatePlan(steps, reg, store, taskText(turn), intentOf(turn))
	if prob != nil {
		if prob.plan != nil {
			return nil, prob.plan
		}
		return nil, &FormatError{Node: state.NodeOrchestrator, Problem: prob.format, Shape: planShape}
	}
	return toPlanSteps(valid), nil
}
