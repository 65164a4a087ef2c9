package errornode

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/prompts"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/state"
)

// Default limits of the explanation call.
const (
	DefaultTimeout = 30 * time.Second
	// DefaultMaxTokens caps the explanation when neither Config.MaxTokens
	// nor models.error.max_tokens (or models.default.max_tokens) does.
	DefaultMaxTokens = 300
)

// Config configures the error node. Everything is optional.
type Config struct {
	// Models gives the error model role (falling back to the default role).
	// Nil or llm.None: the deterministic explanation is used.
	Models llm.Models
	// Overview is the capability overview shown to the model ("• name: description" lines).
	Overview string
	// Router is the router configuration of the graph, used to tell why the
	// turn reached the error node.
	Router router.Config
	// Timeout bounds the explanation call (DefaultTimeout when 0). The
	// context Run is given bounds it too: when that is canceled or its
	// deadline passes, the call stops and the deterministic explanation is
	// used.
	Timeout time.Duration
	// MaxTokens caps the explanation; 0 means the error role's configured
	// max_tokens, or DefaultMaxTokens when it has none.
	MaxTokens int
	// Now returns the current time. Default time.Now.
	Now func() time.Time
	// Prompts holds the "error" template the explanation prompt is rendered
	// from (an application's override); nil means prompts.Default().
	Prompts *prompts.Set
	// SideEffects reports whether a capability acts on the outside world
	// (capabilities.HasSideEffects over the registry); the report lists the
	// changes such steps made. Nil: none is known to.
	SideEffects func(capability string) bool
}

// Node is the error node.
type Node struct{ cfg Config }

// New returns the error node.
func New(cfg Config) (*Node, error) {
	if cfg.Timeout < 0 || cfg.MaxTokens < 0 {
		return nil, errors.New("errornode: Timeout and MaxTokens must not be negative")
	}
	if cfg.Models == nil {
		cfg.Models = llm.None
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Prompts == nil {
		cfg.Prompts = prompts.Default()
	}
	return &Node{cfg: cfg}, nil
}

// Name returns state.NodeError.
func (n *Node) Name() string { return state.NodeError }

// Run writes the turn's error report and ends the turn. It never returns an
// error: every failure inside it degrades to a simpler message.
func (n *Node) Run(ctx context.Context, s state.State) (u state.Update, err error) {
	now := n.cfg.Now()
	var (
		content string
		report  *state.ErrorReport
	)
	tokens := 0
	func() {
		defer func() {
			if v := recover(); v != nil {
				content, report = minimal(s, fmt.Errorf("panic while building the error report: %v", v)), nil
			}
		}()
		// The decision that sent the turn here, carried by the engine.
		r := buildReport(s, router.Carried(ctx, s, n.cfg.Router), n.cfg.SideEffects, now)
		r.Explanation, r.ExplainedBy, tokens = n.explain(ctx, r)
		content, report = Markdown(r), &r
	}()
	t := s.Turn
	t.Done = true
	u = state.Update{
		Messages: []state.Message{{Role: state.RoleAssistant, Content: content, Kind: state.KindErrorReport, Turn: t.Number, Time: now, Report: report}},
		Turn:     &t,
	}
	if tokens > 0 {
		u.Tokens = map[string]int{string(llm.RoleError): tokens}
	}
	return u, nil
}

// explain asks the model for 2–3 sentences, or returns the deterministic
// explanation when there is no model or the call fails; it says which, and
// the tokens the model used.
func (n *Node) explain(ctx context.Context, r state.ErrorReport) (string, string, int) {
	rules := func(tokens int) (string, string, int) { return Explain(r), state.ExplainedByRules, tokens }
	m, ok := n.cfg.Models.For(llm.RoleError)
	if !ok || m == nil {
		return rules(0)
	}
	if ctx.Err() != nil {
		return rules(0) // canceled, or the node's allowance is spent: no call
	}
	// The node's context bounds the call: the caller's cancellation and the
	// agent's ErrorNodeGrace stop it at once, and the deterministic
	// explanation is used.
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
	defer cancel()
	msgs, err := render(n.cfg.Prompts, r, n.cfg.Overview)
	if err != nil {
		return rules(0) // a broken override: the deterministic explanation still tells the truth
	}
	// Reasoning is stripped (llm.Ask); an explanation cut off by the token
	// limit after one larger try is not shown as if complete: the
	// deterministic one is.
	resp, err := llm.Ask(ctx, m, llm.Request{Role: llm.RoleError, MaxTokens: n.cfg.MaxTokens, DefaultMaxTokens: DefaultMaxTokens, Messages: msgs},
		llm.AskOptions{CutRetries: 1})
	text := strings.TrimSpace(resp.Text)
	if err != nil || text == "" {
		return rules(resp.Usage.Total())
	}
	return text, state.ExplainedByModel, resp.Usage.Total()
}

// render builds the explanation prompt from the set's "error" template.
func render(set *prompts.Set, r state.ErrorReport, overview string) ([]llm.Message, error) {
	sys, err := set.Render(prompts.ErrorExplanation, prompts.ErrorData{Task: r.Asked, Report: facts(r), CapabilityOverview: overview})
	if err != nil {
		return nil, err
	}
	return []llm.Message{{Role: "system", Content: sys}, {Role: "user", Content: "Explain why the request failed and what I can do next."}}, nil
}

// facts are the report's fields the model may use: the failure, and what
// was done before it (so the explanation never says nothing happened when
// a change was made).
func facts(r state.ErrorReport) string {
	f := r.Failure
	out := fmt.Sprintf("Failed operation: %s\nCapability: %s\nSeverity: %s\n", f.Operation, f.Capability, f.Severity)
	if f.Limit != "" {
		out += "Limit exceeded: " + f.Limit + "\n"
	}
	var done []string
	for _, st := range r.Steps {
		if st.Status != state.StepDone {
			continue
		}
		line := "- " + stepLabel(st.Step, st.Objective, st.Capability)
		if st.Outcome != "" {
			line += ": " + st.Outcome
		}
		if st.SideEffect {
			line += " (this changed the outside world)"
		}
		done = append(done, line)
	}
	if len(done) > 0 {
		out += "Done before the failure:\n" + strings.Join(done, "\n") + "\n"
	}
	switch inDoubt(r) {
	case capabilities.OutcomeUnconfirmed:
		out += "Outcome of the failed step: unconfirmed — the change may or may not have been made; it was not retried, and the machine must be checked before asking again\n"
	case capabilities.OutcomeMismatch:
		out += "Outcome of the failed step: mismatch — the change was sent but the readback differs from what was asked; it was not retried, and the machine must be checked\n"
	}
	return out + "\n" + r.Details.Classification.FormatForLLM()
}

// minimal is the message when building the report itself failed: it still
// names the original failure.
func minimal(s state.State, secondary error) string {
	orig := "unknown"
	if e := router.CurrentError(s); e != nil {
		orig = fmt.Sprintf("%s failed: %s", e.Node, e.Message)
		if e.Message == "" {
			orig = fmt.Sprintf("%s failed: %s", e.Node, e.Classification.UserMessage)
		}
	} else if l := s.Turn.Control.LimitExceeded; l != "" {
		orig = "limit exceeded: " + l
	}
	return "⚠️ **Your request could not be completed, and the report about it could not be written.**\n\n" +
		"**What failed:** " + oneLine(orig) + "\n" +
		"**Then, while reporting it:** " + oneLine(secondary.Error()) + "\n\n" +
		"Check the state of anything the request may have changed, then try again or ask whoever maintains the assistant."
}
