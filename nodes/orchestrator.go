package nodes

import (
	"context"
	"fmt"
	"slices"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/prompts"
	"github.com/capgraph/capgraph/state"
)

// OrchestratorNode plans the steps of the turn.
type OrchestratorNode struct{ base }

// NewOrchestrator returns the orchestrator node.
func NewOrchestrator(cfg Config) (*OrchestratorNode, error) {
	b, err := newBase(cfg, state.NodeOrchestrator)
	if err != nil {
		return nil, err
	}
	return &OrchestratorNode{b}, nil
}

// Run sets Turn.Plan (numbered, steps pending, dependencies marked) and
// counts it in Control.PlansCreated. Its errors are typed: an unusable reply
// is a RETRIABLE format error whose metadata carries the parse error, the
// expected shape and the reply, which the next attempt shows the model; an
// unknown capability is RECLASSIFICATION; an invalid input key is REPLANNING.
func (n *OrchestratorNode) Run(ctx context.Context, s state.State) (state.Update, error) {
	t := cloneTurn(s.Turn)
	task := taskText(t)
	if task == "" {
		return state.Update{}, capabilities.NewError(capabilities.Critical, capabilities.KindInvalidInput,
			"the orchestrator ran without a task", ErrNoTask)
	}
	graph.Emit(ctx, Status{Node: n.name, Text: "Planning…"})
	data := prompts.OrchestratorData{Task: task, Capabilities: prompts.PlannerCapabilities(n.active(t))}
	if slices.ContainsFunc(data.Capabilities, func(c prompts.PlannerCapability) bool { return c.SideEffects }) {
		data.Intent = intentForPlanner(intentOf(t))
	}
	if t.Task != nil && t.Task.DependsOnHistory {
		data.DependsOnHistory = true
		data.History = history(s)
	}
	// Everything in the store can be reused: earlier turns' results and, when
	// replanning, what this turn's finished steps produced.
	// Listed oldest first, in the order produced, so the model reads them
	// as the conversation went.
	entries := s.Context.Entries()
	slices.SortStableFunc(entries, func(a, b capabilities.ContextEntry) int {
		if a.Turn != b.Turn {
			return a.Turn - b.Turn
		}
		return a.Created.Compare(b.Created)
	})
	for _, e := range entries {
		data.AvailableContext = append(data.AvailableContext, prompts.ContextItem{Type: e.Type, Key: e.Key,
			TaskObjective: e.TaskObjective, Summary: e.Summary, Turn: e.Turn})
	}
	if e := t.Control.Error; e != nil {
		applyFailure(&data, e, t.Plan)
	}

	var (
		steps   []capabilities.PlannedStep
		calls   []call
		offline bool
	)
	if n.online(llm.RoleOrchestrator) {
		p, err := n.prompt(prompts.Orchestrator, data)
		if err != nil {
			return state.Update{}, err
		}
		c, err := n.generate(ctx, llm.RoleOrchestrator, p.System, p.Turn, &planReply, nil)
		if err != nil {
			return state.Update{Tokens: tokens(llm.RoleOrchestrator, c)}, err
		}
		calls = append(calls, c)
		offline = c.offline
		if !offline {
			carry := map[string]any{}
			if data.ReplanReason != "" {
				carry[capabilities.MetaReplanningReason] = data.ReplanReason
			}
			// A rejected reply's tokens still count against the budget.
			used := state.Update{Tokens: tokens(llm.RoleOrchestrator, c)}
			parsed, err := parsePlan(c.text)
			if err != nil {
				return used, formatError(n.name, err.Error(), planShape, c.text, carry)
			}
			valid, prob := validatePlan(parsed, n.cfg.Registry, s.Context, task, intentOf(t))
			if prob != nil {
				if prob.plan != nil {
					return used, prob.plan.capabilityError()
				}
				return used, formatError(n.name, prob.format, planShape, c.text, carry)
			}
			steps = valid
		}
	} else {
		offline = true
	}
	if offline {
		var skipped []string
		steps, skipped = dependencyPlan(n.cfg.Registry, t.ActiveCapabilities, s.Context, task, t.Number, intentOf(t))
		for _, sk := range skipped {
			graph.Emit(ctx, Status{Node: n.name, Text: fmt.Sprintf("Offline planner: %s left out, its inputs are not available", sk)})
		}
		// The offline plan holds side-effecting steps only for a change;
		// checked like any plan, so no path skips the check.
		if pe := checkIntent(steps, n.cfg.Registry, s.Context, intentOf(t)); pe != nil {
			return state.Update{Tokens: tokens(llm.RoleOrchestrator, calls...)}, pe.capabilityError()
		}
	}
	for _, st := range steps {
		if !isTerminal(st.Capability) && !slices.Contains(t.ActiveCapabilities, st.Capability) {
			t.ActiveCapabilities = append(t.ActiveCapabilities, st.Capability)
		}
	}
	t.Control.PlansCreated++
	t.Control.Error = nil
	t.Plan = &state.Plan{Steps: toPlanSteps(steps), Number: t.Control.PlansCreated, Created: n.cfg.Now()}
	graph.Emit(ctx, PlanMade{Plan: *t.Plan, Offline: offline})
	return state.Update{Turn: &t, Tokens: tokens(llm.RoleOrchestrator, calls...)}, nil
}

// intentForPlanner says the intent in the planner's prompt: what a step
// that changes the outside world may do.
func intentForPlanner(in intent.Intent) string {
	if !in.IsChange() {
		return fmt.Sprintf("%s. The user did not ask to change anything: plan no step with a capability that changes the outside world (such a plan is rejected).", in.Summary())
	}
	if in.Relative() {
		return fmt.Sprintf("%s. A step that changes the outside world must change exactly what the user stated (target and amount), nothing else. "+
			"A change by an amount is relative: read the value now in an earlier step and set it to that value plus the amount (it is checked against a fresh reading before anyone is asked).", in.Summary())
	}
	return fmt.Sprintf("%s. A step that changes the outside world must change exactly what the user stated (target and value), nothing else.", in.Summary())
}

// intentOf is the turn's intent (a read when no task was extracted).
func intentOf(t state.Turn) intent.Intent {
	if t.Task == nil {
		return intent.Intent{}
	}
	return t.Task.Intent
}

// active returns the turn's active capabilities (all registered ones when the
// classifier has not run), without respond and clarify.
func (n *OrchestratorNode) active(t state.Turn) []capabilities.Capability {
	var out []capabilities.Capability
	names := t.ActiveCapabilities
	if len(names) == 0 {
		names = n.cfg.Registry.Names()
	}
	for _, name := range names {
		if c, ok := n.cfg.Registry.Get(name); ok && !isTerminal(name) {
			out = append(out, c)
		}
	}
	return out
}

// applyFailure puts the failure that led here into the prompt: a format
// error of the previous attempt (its parse error and reply), or the failed
// step's classification for replanning.
func applyFailure(d *prompts.OrchestratorData, e *state.ErrorInfo, plan *state.Plan) {
	c := e.Classification
	if e.Node == state.NodeOrchestrator && c.Kind == capabilities.KindFormat {
		d.FormatError, _ = c.Metadata[MetaParseError].(string)
		if d.FormatError == "" {
			d.FormatError = e.Message
		}
		d.PreviousReply, _ = c.Metadata[MetaPreviousReply].(string)
		d.ReplanReason, _ = c.Metadata[capabilities.MetaReplanningReason].(string)
		return
	}
	if c.Severity != capabilities.Replanning {
		return
	}
	d.ReplanReason = c.FormatForLLM()
	if e.StepIndex >= 0 {
		d.FailedStep = fmt.Sprintf("%d", e.StepIndex+1)
		if plan != nil && e.StepIndex < len(plan.Steps) {
			st := plan.Steps[e.StepIndex]
			d.FailedStep = fmt.Sprintf("%d (%s, %q)", e.StepIndex+1, st.Effective(), st.TaskObjective)
		}
	}
}
