package errornode

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/prompts"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/state"
)

// Name is the error node's graph name.
const Name = router.Error

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
	// Timeout bounds the explanation call. Default 30 s.
	Timeout time.Duration
	// MaxTokens caps the explanation; 0 means the error role's configured
	// max_tokens, or DefaultMaxTokens when it has none.
	MaxTokens int
	// Now returns the current time. Default time.Now.
	Now func() time.Time
	// Prompts holds the "error" template the explanation prompt is rendered
	// from (an application's override); nil means prompts.Default().
	Prompts *prompts.Set
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

// Name returns "error".
func (n *Node) Name() string { return Name }

// Run writes the turn's error report and ends the turn. It never returns an
// error: every failure inside it degrades to a simpler message.
func (n *Node) Run(ctx context.Context, s state.State) (u state.Update, err error) {
	now := n.cfg.Now()
	var content string
	tokens := 0
	func() {
		defer func() {
			if v := recover(); v != nil {
				content = minimal(s, fmt.Errorf("panic while building the error report: %v", v))
			}
		}()
		r := BuildReport(s, n.cfg.Router, now)
		expl, used := n.explain(ctx, s, r)
		tokens = used
		content = r.Markdown() + "\n\n**Analysis:** " + expl
	}()
	t := s.Turn
	t.Done = true
	u = state.Update{
		Messages: []state.Message{{Role: state.RoleAssistant, Content: content, Kind: state.KindErrorReport, Turn: t.Number, Time: now}},
		Turn:     &t,
	}
	if tokens > 0 {
		u.Tokens = map[string]int{string(llm.RoleError): tokens}
	}
	return u, nil
}

// explain asks the model for 2–3 sentences, or returns the deterministic
// explanation when there is no model or the call fails.
func (n *Node) explain(ctx context.Context, s state.State, r Report) (string, int) {
	m, ok := n.cfg.Models.For(llm.RoleError)
	if !ok || m == nil {
		return r.Explain(), 0
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.cfg.Timeout)
	defer cancel()
	msgs, err := render(n.cfg.Prompts, r, n.cfg.Overview)
	if err != nil {
		return r.Explain(), 0 // a broken override: the deterministic explanation still tells the truth
	}
	// Reasoning is stripped (llm.Ask); an explanation cut off by the token
	// limit after one larger try is not shown as if complete: the
	// deterministic one is.
	resp, err := llm.Ask(ctx, m, llm.Request{Role: llm.RoleError, MaxTokens: n.cfg.MaxTokens, DefaultMaxTokens: DefaultMaxTokens, Messages: msgs},
		llm.AskOptions{CutRetries: 1})
	text := strings.TrimSpace(resp.Text)
	if err != nil || text == "" {
		return r.Explain(), resp.Usage.Total()
	}
	return text, resp.Usage.Total()
}

// Prompt is the explanation prompt for a report, from the default "error"
// template of package prompts.
func Prompt(r Report, overview string) []llm.Message {
	msgs, err := render(prompts.Default(), r, overview)
	if err != nil {
		// The embedded template is golden-tested; keep the facts regardless.
		return []llm.Message{{Role: "user", Content: facts(r)}}
	}
	return msgs
}

// render builds the explanation prompt from the set's "error" template.
func render(set *prompts.Set, r Report, overview string) ([]llm.Message, error) {
	sys, err := set.Render(prompts.ErrorExplanation, prompts.ErrorData{Task: r.Task, Report: facts(r), CapabilityOverview: overview})
	if err != nil {
		return nil, err
	}
	return []llm.Message{{Role: "system", Content: sys}, {Role: "user", Content: "Explain why the request failed and what I can do next."}}, nil
}

// facts are the report's fields the model may use.
func facts(r Report) string {
	f := fmt.Sprintf("Failed operation: %s\nCapability: %s\nSeverity: %s\n", r.FailedOperation, r.Capability, r.Severity)
	if r.Limit != "" {
		f += "Limit exceeded: " + r.Limit + "\n"
	}
	return f + "\n" + r.Classification.FormatForLLM()
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
	return "⚠️ **System Error During Error Handling**\n\n" +
		"**Original issue:** " + oneLine(orig) + "\n" +
		"**Secondary issue:** " + oneLine(secondary.Error()) + "\n\n" +
		"The request could not be completed, and the detailed report could not be built. Please try again or contact an operator."
}
