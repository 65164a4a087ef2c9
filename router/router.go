package router

import (
	"slices"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

// End finishes the run: the graph engine's End (graph.End), which the
// router names without importing the engine. The node names are state's
// (state.NodeTaskExtraction, …).
const End = "__end__"

// Names of the limits and budgets, as recorded in Control.LimitExceeded and
// reported by the error node. Each is the JSON name of its Limits field and
// the key under limits: in the configuration file.
const (
	LimitExecutionTime    = "max_execution_time"
	LimitNodeSteps        = "max_node_steps"
	LimitTokens           = "max_tokens_per_turn"
	LimitPlanning         = "max_planning_attempts"
	LimitReclassification = "max_reclassifications"
	// LimitAttempts is a retry policy's max_attempts (per step, not per turn).
	LimitAttempts = "max_attempts"
)

// Default limits of a turn.
const (
	DefaultMaxPlanningAttempts  = 2
	DefaultMaxReclassifications = 1
	DefaultMaxNodeSteps         = 100
	DefaultMaxExecutionTime     = 300 * time.Second
)

// Limits bound one turn. Exceeding one ends the turn in the error node.
// Zero fields take the defaults (WithDefaults).
type Limits struct {
	// MaxPlanningAttempts caps the plans made in one turn (the first plan
	// included, also plans made after a reclassification). Default 2.
	MaxPlanningAttempts int `json:"max_planning_attempts,omitempty"`
	// MaxReclassifications caps reclassifications per turn. Default 1; a
	// negative value means none.
	MaxReclassifications int `json:"max_reclassifications,omitempty"`
	// MaxNodeSteps caps node executions per turn. Default 100.
	MaxNodeSteps int `json:"max_node_steps,omitempty"`
	// MaxTokensPerTurn caps the LLM tokens of one turn (Control.BudgetTokens:
	// the approval model's are reported but not counted); 0 means no budget.
	MaxTokensPerTurn int `json:"max_tokens_per_turn,omitempty"`
	// MaxExecutionTime caps the wall-clock time of a turn. Default 300 s.
	// The agent enforces it (the router reads no clock) and records
	// LimitExecutionTime when it is exceeded.
	MaxExecutionTime time.Duration `json:"max_execution_time,omitempty"`
}

// WithDefaults fills zero fields with the defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxPlanningAttempts <= 0 {
		l.MaxPlanningAttempts = DefaultMaxPlanningAttempts
	}
	if l.MaxReclassifications == 0 {
		// Negative (none) stays negative, so applying WithDefaults twice is harmless.
		l.MaxReclassifications = DefaultMaxReclassifications
	}
	if l.MaxNodeSteps <= 0 {
		l.MaxNodeSteps = DefaultMaxNodeSteps
	}
	if l.MaxExecutionTime == 0 {
		l.MaxExecutionTime = DefaultMaxExecutionTime
	}
	return l
}

// Config holds the limits and the graph's capability nodes.
type Config struct {
	Limits
	// Capabilities are the capability nodes of the graph. A plan step naming
	// anything else (other than respond and clarify) goes to the error node.
	Capabilities []string `json:"capabilities,omitempty"`
}

// WithDefaults fills zero limits with the defaults.
func (c Config) WithDefaults() Config {
	c.Limits = c.Limits.WithDefaults()
	return c
}

// ReclassificationBudget is the number of reclassifications allowed (0 when
// MaxReclassifications is negative).
func (c Config) ReclassificationBudget() int { return max(c.MaxReclassifications, 0) }

// Cause says why a decision was taken; the error node reports it.
type Cause string

const (
	CauseDone                  Cause = "done"                    // the turn's message is written
	CauseLimit                 Cause = "limit_exceeded"          // a limit named in Decision.Limit
	CauseRetry                 Cause = "retry"                   // RETRIABLE: run the failed node again
	CauseRetriesExhausted      Cause = "retries_exhausted"       // RETRIABLE with no attempt left
	CauseReplan                Cause = "replan"                  // REPLANNING
	CausePlanningBudget        Cause = "planning_budget"         // REPLANNING with no plan left
	CauseReclassify            Cause = "reclassify"              // RECLASSIFICATION
	CauseReclassificationLimit Cause = "reclassification_budget" // RECLASSIFICATION with none left
	CauseCritical              Cause = "critical"                // CRITICAL (or unclassified)
	CauseFatal                 Cause = "fatal"                   // FATAL seen in the state (normally the run has ended)
	CauseNoTask                Cause = "no_task"                 // → task extraction
	CauseNoCapabilities        Cause = "no_capabilities"         // → classifier
	CauseNoPlan                Cause = "no_plan"                 // → orchestrator
	CausePlanApproval          Cause = "plan_approval"           // → plan_approval (the plan is not approved yet)
	CauseSteps                 Cause = "steps"                   // → the ready steps
	CausePlanFinished          Cause = "plan_finished"           // → respond
	CauseRejected              Cause = "step_rejected"           // a human rejected a step: → respond, the rest of the plan is cancelled
	CauseUnknownCapability     Cause = "unknown_capability"      // a step names no graph node
	CauseStepFailed            Cause = "step_failed"             // a step failed for good without a current error
	CauseStuck                 Cause = "stuck"                   // steps pending but none can run
	CauseTerminalNotDone       Cause = "terminal_step_not_done"  // respond/clarify finished without ending the turn
)

// Decision is where the turn goes next.
type Decision struct {
	// Next lists the nodes to run next, together. [End] finishes the run.
	Next []string
	// NotBefore is the earliest start of Next (a retry delay), or zero.
	NotBefore time.Time
	Cause     Cause
	// Error is the failure the decision handles, if any.
	Error *state.ErrorInfo
	// Limit names the limit or budget that sent the turn to the error node.
	Limit string
	// Steps maps each node of Next that runs a plan step to its step index.
	Steps map[string]int
}

func to(cause Cause, next ...string) Decision { return Decision{Next: next, Cause: cause} }

func toError(cause Cause, e *state.ErrorInfo, limit string) Decision {
	return Decision{Next: []string{state.NodeError}, Cause: cause, Error: e, Limit: limit}
}

// Decide returns the next node(s) for state s. It is pure: equal inputs give
// equal decisions, and nothing is changed.
func Decide(s state.State, cfg Config) Decision {
	cfg = cfg.WithDefaults()
	t := s.Turn
	c := t.Control
	if t.Done {
		return to(CauseDone, End)
	}
	if t.Plan != nil && slices.ContainsFunc(t.Plan.Steps, func(st state.PlanStep) bool { return st.Status == state.StepRejected }) {
		// A human rejected a step: nothing more of the plan starts (the
		// steps that ran beside it have finished, or failed), and respond
		// says what was and was not done — the human's decision ends the
		// turn, whatever limit or failure came with it.
		return to(CauseRejected, state.NodeRespond)
	}
	e := CurrentError(s)
	switch {
	case c.LimitExceeded != "":
		return toError(CauseLimit, e, c.LimitExceeded)
	case c.NodeSteps >= cfg.MaxNodeSteps:
		return toError(CauseLimit, e, LimitNodeSteps)
	case cfg.MaxTokensPerTurn > 0 && c.BudgetTokens() >= cfg.MaxTokensPerTurn:
		return toError(CauseLimit, e, LimitTokens)
	}
	if e != nil {
		return decideError(s, cfg, e)
	}
	switch {
	case t.Task == nil:
		return to(CauseNoTask, state.NodeTaskExtraction)
	case len(t.ActiveCapabilities) == 0:
		return to(CauseNoCapabilities, state.NodeClassifier)
	case t.Plan == nil:
		if c.PlansCreated >= cfg.MaxPlanningAttempts {
			return toError(CausePlanningBudget, nil, LimitPlanning)
		}
		return to(CauseNoPlan, state.NodeOrchestrator)
	case t.Options.PlanApproval && !t.Plan.Approved:
		// The whole plan is approved before any of its steps runs; a new
		// plan (replanning) is asked for again.
		return to(CausePlanApproval, state.NodePlanApproval)
	}
	return decideSteps(t.Plan, cfg, c.NodeSteps)
}

// CurrentError returns the failure being recovered from: the turn's current
// error, else the first unresolved step error in plan order.
func CurrentError(s state.State) *state.ErrorInfo {
	if e := s.Turn.Control.Error; e != nil {
		return e
	}
	if p := s.Turn.Plan; p != nil {
		for _, st := range p.Steps {
			if st.Error != nil && isPending(st.Status) {
				return st.Error
			}
		}
	}
	return nil
}

func decideError(s state.State, cfg Config, e *state.ErrorInfo) Decision {
	c := s.Turn.Control
	switch e.Classification.Severity {
	case capabilities.Retriable:
		max := e.Policy.MaxAttempts
		if max == 0 {
			max = capabilities.RetryPolicy{}.WithDefaults().MaxAttempts
		}
		if !e.Retry || e.Attempt >= max {
			limit := ""
			if e.Attempt >= max {
				limit = LimitAttempts
			}
			return toError(CauseRetriesExhausted, e, limit)
		}
		target := e.Node
		d := Decision{Next: []string{target}, NotBefore: e.NotBefore, Cause: CauseRetry, Error: e}
		if e.StepIndex >= 0 {
			p := s.Turn.Plan
			if p == nil || e.StepIndex >= len(p.Steps) {
				return toError(CauseCritical, e, "")
			}
			st := p.Steps[e.StepIndex]
			target = st.Effective()
			if !knownNode(target, cfg) {
				return toError(CauseUnknownCapability, e, "")
			}
			d.Next = []string{target}
			d.Steps = map[string]int{target: e.StepIndex}
			if st.NotBefore.After(d.NotBefore) {
				d.NotBefore = st.NotBefore
			}
		} else if !infraNode(target) {
			return toError(CauseCritical, e, "")
		}
		return d
	case capabilities.Replanning:
		if c.PlansCreated >= cfg.MaxPlanningAttempts {
			return toError(CausePlanningBudget, e, LimitPlanning)
		}
		return Decision{Next: []string{state.NodeOrchestrator}, Cause: CauseReplan, Error: e}
	case capabilities.Reclassification:
		if c.Reclassifications >= cfg.ReclassificationBudget() {
			return toError(CauseReclassificationLimit, e, LimitReclassification)
		}
		return Decision{Next: []string{state.NodeClassifier}, Cause: CauseReclassify, Error: e}
	case capabilities.Fatal:
		return toError(CauseFatal, e, "")
	}
	return toError(CauseCritical, e, "")
}

func isPending(st state.StepStatus) bool { return st == "" || st == state.StepPending }

func isTerminal(name string) bool { return name == state.NodeRespond || name == state.NodeClarify }

func infraNode(name string) bool {
	switch name {
	case state.NodeTaskExtraction, state.NodeClassifier, state.NodeOrchestrator, state.NodeRespond, state.NodeClarify:
		return true
	}
	return false
}

func knownNode(name string, cfg Config) bool {
	return isTerminal(name) || slices.Contains(cfg.Capabilities, name)
}

// satisfied reports whether a step's dependencies are met: done or skipped.
// A dependency that is not an earlier step (a malformed plan) is read as
// "every earlier step", so a bad index can only delay a step, never run it early.
func satisfied(p *state.Plan, i int) bool {
	deps := p.Steps[i].DependsOn
	for _, d := range deps {
		if d < 0 || d >= i {
			return allFinished(p, i)
		}
		if !finished(p.Steps[d].Status) {
			return false
		}
	}
	return true
}

func finished(st state.StepStatus) bool {
	return st == state.StepDone || st == state.StepSkipped || st == state.StepRejected
}

func allFinished(p *state.Plan, n int) bool {
	for j := 0; j < n; j++ {
		if !finished(p.Steps[j].Status) {
			return false
		}
	}
	return true
}

// decideSteps picks the ready steps of the plan. Only steps up to the first
// terminal step (respond or clarify) are ever run, and the terminal step only
// once every step before it has finished.
func decideSteps(p *state.Plan, cfg Config, nodeSteps int) Decision {
	n := len(p.Steps)
	term := -1
	for i, st := range p.Steps {
		if isTerminal(st.Effective()) {
			term = i
			break
		}
	}
	limit := n
	if term >= 0 {
		limit = term
	}
	var (
		next      []string
		steps     map[string]int
		notBefore time.Time
		pending   bool
	)
	for i := 0; i < limit; i++ {
		st := p.Steps[i]
		if st.Status == state.StepFailed {
			return toError(CauseStepFailed, st.Error, "")
		}
		if !isPending(st.Status) {
			continue
		}
		pending = true
		if !satisfied(p, i) {
			continue
		}
		name := st.Effective()
		if !knownNode(name, cfg) {
			return toError(CauseUnknownCapability, &state.ErrorInfo{Node: name, Capability: name, StepIndex: i,
				Classification: capabilities.Classification{Severity: capabilities.Critical, Kind: capabilities.KindInvalidInput,
					UserMessage: "the plan names a capability that does not exist: " + name}}, "")
		}
		if _, dup := steps[name]; dup {
			continue // one step per capability at a time; the next runs after it
		}
		if steps == nil {
			steps = map[string]int{}
		}
		steps[name] = i
		next = append(next, name)
		if st.NotBefore.After(notBefore) {
			notBefore = st.NotBefore
		}
	}
	if len(next) > 0 {
		if room := cfg.MaxNodeSteps - nodeSteps; len(next) > room {
			// Never start more steps than the node-step limit has room for.
			for _, n := range next[room:] {
				delete(steps, n)
			}
			next = next[:room]
		}
		return Decision{Next: next, NotBefore: notBefore, Cause: CauseSteps, Steps: steps}
	}
	if pending {
		return toError(CauseStuck, nil, "")
	}
	if term >= 0 {
		st := p.Steps[term]
		if isPending(st.Status) {
			return Decision{Next: []string{st.Effective()}, NotBefore: st.NotBefore, Cause: CauseSteps,
				Steps: map[string]int{st.Effective(): term}}
		}
		// The terminal step finished but the turn is not done: its node did
		// not write the turn's message. Never end silently.
		return toError(CauseTerminalNotDone, st.Error, "")
	}
	// Every step ran and the plan has no terminal step (or the index ran past
	// the end): answer.
	return to(CausePlanFinished, state.NodeRespond)
}
