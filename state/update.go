package state

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm/vocab"
)

// Update is what a node returns. Apply merges it into the state. Every field
// is optional; updates from concurrent capability steps touch disjoint parts
// (their own step) and merge in plan order.
type Update struct {
	// Messages are appended to the conversation.
	Messages []Message `json:"messages,omitempty"`
	// Context entries are added to the context store, replacing same type+key.
	Context []capabilities.ContextEntry `json:"context,omitempty"`
	// Turn replaces the whole turn (infrastructure nodes, which run alone).
	Turn *Turn `json:"turn,omitempty"`
	// Step records the outcome of one plan step (capability nodes).
	Step *StepUpdate `json:"step,omitempty"`
	// NodeSteps is added to the turn's node step counter.
	NodeSteps int `json:"node_steps,omitempty"`
	// Tokens by model role are added to the turn's token counters.
	Tokens map[string]int `json:"tokens,omitempty"`
	// LimitExceeded names a limit the node found exceeded; it is recorded in
	// Control.LimitExceeded unless a limit is already recorded there. (A step
	// cannot replace the Turn, since concurrent steps share it.)
	LimitExceeded string `json:"limit_exceeded,omitempty"`
	// Approvals are appended to the turn's answered approvals (Turn.Approvals),
	// except ids already recorded.
	Approvals []ApprovalDecision `json:"approvals,omitempty"`
	// Paused is added to Control.Paused: time spent waiting for a human.
	Paused time.Duration `json:"paused,omitempty"`
	// Done ends the turn (Turn.Done); a step uses it to end the turn with the
	// message it writes, e.g. after a human rejected it.
	Done bool `json:"done,omitempty"`
}

// StepUpdate is the outcome of one execution of a plan step.
type StepUpdate struct {
	// Plan is the plan number the step belongs to; an update for an older plan
	// is dropped (the plan was replaced meanwhile).
	Plan  int      `json:"plan"`
	Index int      `json:"index"`
	Step  PlanStep `json:"step"`
	// Result is appended to the turn's results.
	Result *StepResult `json:"result,omitempty"`
	// Error becomes the turn's current error unless an earlier step of the
	// same merge already set one.
	Error *ErrorInfo `json:"error,omitempty"`
	// ClearError clears the current error when it belongs to this step.
	ClearError bool `json:"clear_error,omitempty"`
}

// approvalRole is the model role whose tokens ApprovalDecision.Tokens counts.
const approvalRole = string(vocab.RoleApproval)

// BudgetTokens is what counts against the turn's token budget: every
// role's tokens except the approval model's. Reading a human's answer is
// reported in Tokens but never exhausts a budget, so a turn is never ended
// for "tokens" by the answer that let a side effect run.
func (c Control) BudgetTokens() int { return c.Tokens - c.TokensByRole[approvalRole] }

// ValueState says that a State is never modified in place (graph.ValueState):
// Apply returns a new State sharing with s only what it did not change, and
// nodes read the state they are given without writing to it.
func (State) ValueState() {}

// Apply merges u into s and returns the new state. s is not modified.
func Apply(s State, u Update) (State, error) {
	if u.Turn != nil {
		s.Turn = *u.Turn
	}
	if u.Step != nil {
		t, err := applyStep(s.Turn, *u.Step)
		if err != nil {
			return s, err
		}
		s.Turn = t
	}
	if len(u.Messages) > 0 {
		s.Messages = append(slices.Clip(s.Messages), u.Messages...)
	}
	if len(u.Context) > 0 {
		s.Context = s.Context.Put(u.Context...)
	}
	approvalTokens := 0
	for _, d := range u.Approvals {
		// Concurrent steps re-entered with one answer may each report it.
		if !slices.ContainsFunc(s.Turn.Approvals, func(o ApprovalDecision) bool { return o.ID == d.ID }) {
			s.Turn.Approvals = append(slices.Clip(s.Turn.Approvals), d)
			approvalTokens += d.Tokens
		}
	}
	if approvalTokens > 0 {
		u.Tokens = maps.Clone(u.Tokens)
		if u.Tokens == nil {
			u.Tokens = map[string]int{}
		}
		u.Tokens[approvalRole] += approvalTokens
	}
	if u.Paused > 0 {
		s.Turn.Control.Paused += u.Paused
	}
	if u.Done {
		s.Turn.Done = true
	}
	if s.Turn.Done {
		s.Turn.Plan = closePlan(s.Turn.Plan)
	}
	if u.LimitExceeded != "" && s.Turn.Control.LimitExceeded == "" {
		s.Turn.Control.LimitExceeded = u.LimitExceeded
	}
	if u.NodeSteps != 0 || len(u.Tokens) > 0 {
		c := s.Turn.Control
		c.NodeSteps += u.NodeSteps
		if len(u.Tokens) > 0 {
			c.TokensByRole = maps.Clone(c.TokensByRole)
			if c.TokensByRole == nil {
				c.TokensByRole = map[string]int{}
			}
			for role, n := range u.Tokens {
				c.TokensByRole[role] += n
				c.Tokens += n
			}
		}
		s.Turn.Control = c
	}
	return s, nil
}

func applyStep(t Turn, su StepUpdate) (Turn, error) {
	if t.Plan == nil || t.Plan.Number != su.Plan {
		return t, nil // a stale update for a replaced plan
	}
	if su.Index < 0 || su.Index >= len(t.Plan.Steps) {
		return t, fmt.Errorf("state: step update for index %d, plan has %d steps", su.Index, len(t.Plan.Steps))
	}
	plan := *t.Plan
	plan.Steps = slices.Clone(plan.Steps)
	plan.Steps[su.Index] = su.Step
	t.Plan = &plan
	if su.Result != nil {
		t.Results = append(slices.Clip(t.Results), *su.Result)
	}
	switch {
	case su.Error != nil:
		// A step's newer failure replaces its own older one (a retry that
		// failed again); another step's failure is not overwritten.
		if t.Control.Error == nil || t.Control.Error.StepIndex == su.Index {
			e := *su.Error
			t.Control.Error = &e
		}
	case su.ClearError:
		if e := t.Control.Error; e != nil && e.StepIndex == su.Index {
			t.Control.Error = nil
		}
	}
	return t, nil
}

// closePlan marks the steps of an ended turn's plan that never started
// skipped (a rejection or a failure ended the turn before them), so every
// face shows each step closed; the plan is copied when it changes.
func closePlan(p *Plan) *Plan {
	if p == nil || !slices.ContainsFunc(p.Steps, func(st PlanStep) bool { return st.Status == StepPending }) {
		return p
	}
	c := *p
	c.Steps = slices.Clone(p.Steps)
	for i := range c.Steps {
		if c.Steps[i].Status == StepPending {
			c.Steps[i].Status = StepSkipped
		}
	}
	return &c
}
