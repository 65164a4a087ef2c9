package agent

import (
	"errors"
	"fmt"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/state"
)

// DefaultErrorNodeGrace is how long the error node may take after the
// turn's wall-clock limit has passed.
const DefaultErrorNodeGrace = 30 * time.Second

// DefaultInfraRetryPolicy returns the retry policy of infrastructure nodes
// that state none of their own: 3 attempts, 500 ms doubling up to 10 s, full
// jitter. LLM calls are cheap to repeat but a user is waiting, so the delays
// are shorter than the capability default. Config.InfraRetry overrides it
// per node, field by field.
func DefaultInfraRetryPolicy() capabilities.RetryPolicy {
	return capabilities.RetryPolicy{
		MaxAttempts:        3,
		InitialInterval:    500 * time.Millisecond,
		BackoffCoefficient: 2,
		MaxInterval:        10 * time.Second,
		Jitter:             capabilities.JitterFull,
	}
}

// Limits bound one turn: router.Limits, whose zero fields take the
// router's defaults (router.DefaultMaxNodeSteps, …).
type Limits = router.Limits

// Config assembles an agent. The capabilities (Capabilities or Registry)
// are required; the rest defaults.
type Config struct {
	// Application names the application whose threads this agent runs. It
	// is recorded with every thread the agent runs, and the agent refuses a
	// thread another application recorded (see application.go). Empty: an
	// unnamed application, which runs only threads no named one recorded.
	Application string
	// Capabilities are the application's capabilities: New registers them
	// in a registry of its own and reports every problem of every one
	// together (each a *capabilities.RegistrationError naming it). Set
	// either Capabilities or Registry.
	Capabilities []capabilities.Capability
	// Registry holds the application's capabilities, for an application
	// that builds one itself (to declare context types, or to share it);
	// it is validated. Set either Registry or Capabilities.
	Registry *capabilities.Registry
	// Store keeps the checkpoints. Default: an in-memory store.
	Store checkpoint.Store
	// Models gives the model roles (the error node uses RoleError). Default llm.None.
	Models llm.Models

	// The infrastructure nodes. Their Name must match the slot. A nil slot
	// is filled from nodes.New(Nodes).
	TaskExtraction nodes.Node
	Classifier     nodes.Node
	Orchestrator   nodes.Node
	Respond        nodes.Node
	Clarify        nodes.Node
	// ErrorNode replaces the standard error node (errornode.New over Models).
	ErrorNode nodes.Node
	// Nodes configures the default infrastructure nodes. Its Registry, Models
	// and Now default to this Config's. Its RetryPolicy is the nodes' own
	// policy: fields left zero come from InfraRetry, then DefaultInfraRetryPolicy.
	Nodes nodes.Config

	// Limits bound each turn.
	Limits Limits
	// RetryPolicy is the application's global default for capabilities.
	RetryPolicy capabilities.RetryPolicy
	// CapabilityRetry holds per-capability policies from the application's
	// config; a capability's own policy wins over them.
	CapabilityRetry map[string]capabilities.RetryPolicy
	// StepDeadline bounds one attempt of a capability that states no
	// deadline of its own (capabilities.Deadliner); default
	// capabilities.DefaultDeadline. CapabilityDeadlines overrides it, and a
	// capability's own, per capability (the operator's word wins). Past its
	// deadline an attempt is cancelled and fails RETRIABLE, kind timeout;
	// one that ignores the cancellation is abandoned (deadline.go).
	StepDeadline        time.Duration
	CapabilityDeadlines map[string]time.Duration
	// InfraRetry overrides DefaultInfraRetryPolicy per infrastructure node; a
	// node's own policy (capabilities.RetryPolicyProvider) wins over it.
	InfraRetry map[string]capabilities.RetryPolicy
	// Options are the per-turn defaults and the ceiling of every turn: a
	// TurnRequest's Options may only tighten them (see TurnRequest.Options), and
	// WritesEnabled is the process's write switch, checked where a
	// side-effecting step executes.
	Options state.Options
	// Targets are the named target systems side effects act on (the
	// demo's "live" and "simulator") and each one's posture; Options.Target
	// is the default. Empty: no targets, the write switch alone decides
	// (target.go, docs/time-travel.md).
	Targets map[string]TargetPolicy
	// AuditLog keeps the audit records of side-effecting steps (ListAudit).
	// Default: the Store, when it is a checkpoint.RecordLog (memory,
	// SQLite and PostgreSQL are). New fails when a registered capability
	// has side effects and there is none.
	AuditLog checkpoint.RecordLog
	// ErrorNodeGrace bounds the error node: it has this long from its start,
	// also when the turn's wall-clock limit has passed (so a turn that ran out
	// of time still gets its report). When it is spent, or the caller
	// cancels, the explanation call stops and the deterministic explanation
	// is used. Default 30 s.
	ErrorNodeGrace time.Duration
	// ErrorExplanationTimeout bounds the error model's explanation call of
	// the standard error node (errornode.Config.Timeout); within
	// ErrorNodeGrace. Default errornode.DefaultTimeout (30 s).
	ErrorExplanationTimeout time.Duration
	// MaxConcurrency caps steps running at once. Default 8.
	MaxConcurrency int
	// Durability says when a step's checkpoint must be durable (the graph's
	// Config.Durability): before the next step (graph.DurabilitySync, the
	// default, also "") or while it runs (graph.DurabilityAsync), in which
	// case the step wrapper waits for every pending checkpoint before a
	// side effect's started record (graph.Flush).
	Durability graph.Durability
	// MaxArtifactBytes caps one artifact a step returns, JSON encoded
	// (capabilities.Output.Artifacts). A larger one is replaced by a note
	// saying it was left out and why; the step still succeeds. Default
	// DefaultMaxArtifactBytes (1 MiB).
	MaxArtifactBytes int
	// ApprovalExpiry is how long a human can answer an approval.
	// Default DefaultApprovalExpiry (1 h); negative: approvals never expire.
	ApprovalExpiry time.Duration
	// KeepIntermediate is how long a finished turn keeps the checkpoint of
	// each of its steps, in a store that prunes (checkpoint.Pruner: memory,
	// SQLite and PostgreSQL do). 0, the default: they are pruned when the
	// turn ends, in the transaction of its last checkpoint, which is kept
	// (the state the turn ended with: the conversation, the plan, the
	// report). Positive: they are kept that long after the turn ended, then
	// pruned when a later turn of the thread ends or by a sweep of the
	// application's threads that ending turns start (see Prune). Negative:
	// kept until the thread is deleted. See docs/persistence.md, "What the
	// store keeps".
	KeepIntermediate time.Duration
	// Leases configures the thread leases that keep replicas sharing one
	// store from running a thread twice (see LeaseConfig).
	Leases LeaseConfig
	// Now returns the current time. Default Clock.Now when Clock is set,
	// else time.Now.
	Now func() time.Time
	// Clock is the graph engine's clock (event times, retry waits); default
	// the system clock. Tests replace it to run retry schedules without
	// sleeping (see docs/error-handling.md, "Testing retry policies").
	Clock graph.Clock
	// Observer sees every run's events (traces, metrics, logs: see
	// docs/observability.md). Default none, which costs nothing.
	Observer Observer
}

// ErrConfig is the kind of every configuration error of New.
var ErrConfig = errors.New("agent: invalid config")

// ConfigError names the field that is wrong. Err, when set, is the cause
// (a capability's *capabilities.RegistrationError), which errors.As finds.
type ConfigError struct {
	Field   string
	Problem string
	Err     error
}

func (e *ConfigError) Error() string { return fmt.Sprintf("agent: config %s: %s", e.Field, e.Problem) }

// Unwrap gives ErrConfig and the cause.
func (e *ConfigError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrConfig}
	}
	return []error{ErrConfig, e.Err}
}

// registerCapabilities builds the registry from Capabilities. It returns
// the registration problems, which validate reports with the others.
func (c *Config) registerCapabilities() []error {
	if c.Capabilities == nil {
		return nil
	}
	if c.Registry != nil {
		return []error{&ConfigError{Field: "Capabilities", Problem: "set Capabilities or Registry, not both"}}
	}
	c.Registry = capabilities.NewRegistry()
	return configErrors("Capabilities", c.Registry.Register(c.Capabilities...))
}

// configErrors turns the joined errors of a registry into one ConfigError
// each, keeping each as the cause.
func configErrors(field string, err error) []error {
	if err == nil {
		return nil
	}
	list := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	}
	out := make([]error, len(list))
	for i, e := range list {
		out[i] = &ConfigError{Field: field, Problem: e.Error(), Err: e}
	}
	return out
}

// routerConfig is the router's view of the agent: its limits and capabilities.
func routerConfig(l Limits, caps []string) router.Config {
	return router.Config{Limits: l, Capabilities: caps}.WithDefaults()
}

// fillNodes builds the default infrastructure nodes for empty slots.
func (c *Config) fillNodes() error {
	if c.TaskExtraction != nil && c.Classifier != nil && c.Orchestrator != nil && c.Respond != nil && c.Clarify != nil {
		return nil
	}
	if c.Registry == nil {
		return nil // validate reports it
	}
	nc := c.Nodes
	if nc.Registry == nil {
		nc.Registry = c.Registry
	}
	if nc.Models == nil {
		nc.Models = c.Models
	}
	if nc.Now == nil {
		nc.Now = c.Now
	}
	set, err := nodes.New(nc)
	if err != nil {
		return &ConfigError{Field: "Nodes", Problem: err.Error()}
	}
	if c.TaskExtraction == nil {
		c.TaskExtraction = set.TaskExtraction
	}
	if c.Classifier == nil {
		c.Classifier = set.Classifier
	}
	if c.Orchestrator == nil {
		c.Orchestrator = set.Orchestrator
	}
	if c.Respond == nil {
		c.Respond = set.Respond
	}
	if c.Clarify == nil {
		c.Clarify = set.Clarify
	}
	return nil
}

func (c *Config) validate(registration []error) error {
	errs := registration
	bad := func(field, problem string) { errs = append(errs, &ConfigError{Field: field, Problem: problem}) }
	regField := "Registry"
	if c.Capabilities != nil {
		regField = "Capabilities"
	}
	if c.Registry == nil {
		bad("Capabilities", "none: set Capabilities (or Registry)")
	} else {
		errs = append(errs, configErrors(regField, c.Registry.Validate())...)
	}
	for _, slot := range []struct {
		field, name string
		n           nodes.Node
	}{
		{"TaskExtraction", state.NodeTaskExtraction, c.TaskExtraction},
		{"Classifier", state.NodeClassifier, c.Classifier},
		{"Orchestrator", state.NodeOrchestrator, c.Orchestrator},
		{"Respond", state.NodeRespond, c.Respond},
		{"Clarify", state.NodeClarify, c.Clarify},
	} {
		switch {
		case slot.n == nil:
			bad(slot.field, "is nil")
		case slot.n.Name() != slot.name:
			bad(slot.field, fmt.Sprintf("node is named %q, want %q", slot.n.Name(), slot.name))
		}
	}
	if c.Registry != nil {
		for _, n := range c.Registry.Names() {
			switch n {
			case state.NodeTaskExtraction, state.NodeClassifier, state.NodeOrchestrator, state.NodeRespond, state.NodeClarify, state.NodeError:
				bad(regField, fmt.Sprintf("capability %q uses the name of an infrastructure node", n))
			}
		}
	}
	l := c.Limits
	if l.MaxPlanningAttempts < 0 || l.MaxNodeSteps < 0 || l.MaxTokensPerTurn < 0 || l.MaxExecutionTime < 0 {
		bad("Limits", "must not be negative (except MaxReclassifications, where negative means none)")
	}
	if err := c.RetryPolicy.Validate(); err != nil {
		bad("RetryPolicy", err.Error())
	}
	for name, p := range c.CapabilityRetry {
		if err := p.Validate(); err != nil {
			bad("CapabilityRetry["+name+"]", err.Error())
		}
	}
	for name, p := range c.InfraRetry {
		if err := p.Validate(); err != nil {
			bad("InfraRetry["+name+"]", err.Error())
		}
	}
	if !validMode(c.Options.ApprovalMode) {
		bad("Options.ApprovalMode", fmt.Sprintf("must be %q, %q or %q, got %q", state.ApprovalModeDisabled, state.ApprovalModeSelective, state.ApprovalModeAll, c.Options.ApprovalMode))
	}
	if c.AuditLog == nil && c.Registry != nil {
		for _, cap := range c.Registry.All() {
			if capabilities.HasSideEffects(cap) {
				bad("AuditLog", fmt.Sprintf("capability %q has side effects, which are audited, but the store keeps no records (no checkpoint.RecordLog) and AuditLog is nil", cap.Name()))
				break
			}
		}
	}
	errs = append(errs, c.validateTargets()...)
	if err := c.Leases.validate(); err != nil {
		errs = append(errs, err)
	}
	if !c.Durability.Valid() {
		bad("Durability", fmt.Sprintf("%q is not a durability mode (want %q or %q)", c.Durability, graph.DurabilitySync, graph.DurabilityAsync))
	}
	if c.ErrorNodeGrace < 0 || c.MaxConcurrency < 0 {
		bad("ErrorNodeGrace/MaxConcurrency", "must not be negative")
	}
	if c.MaxArtifactBytes < 0 {
		bad("MaxArtifactBytes", "must not be negative")
	}
	if c.ErrorExplanationTimeout < 0 {
		bad("ErrorExplanationTimeout", "must not be negative")
	}
	if c.StepDeadline < 0 {
		bad("StepDeadline", "must not be negative")
	}
	for name, d := range c.CapabilityDeadlines {
		if d <= 0 {
			bad("CapabilityDeadlines["+name+"]", "must be positive")
		}
	}
	return errors.Join(errs...)
}

func validMode(m string) bool {
	switch m {
	case "", state.ApprovalModeDisabled, state.ApprovalModeSelective, state.ApprovalModeAll:
		return true
	}
	return false
}

func (c *Config) defaults() {
	if c.Models == nil {
		c.Models = llm.None
	}
	if c.Limits.MaxExecutionTime == 0 {
		c.Limits.MaxExecutionTime = router.DefaultMaxExecutionTime
	}
	if c.ErrorNodeGrace == 0 {
		c.ErrorNodeGrace = DefaultErrorNodeGrace
	}
	if c.MaxArtifactBytes == 0 {
		c.MaxArtifactBytes = DefaultMaxArtifactBytes
	}
	if c.ApprovalExpiry == 0 {
		c.ApprovalExpiry = DefaultApprovalExpiry
	}
	if c.Now == nil {
		c.Now = time.Now
		if c.Clock != nil {
			c.Now = c.Clock.Now
		}
	}
	c.Leases.defaults()
}
