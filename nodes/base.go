package nodes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/prompts"
	"github.com/capgraph/capgraph/state"
)

// base is what every node shares: config, the LLM call, classification and
// the retry policy.
type base struct {
	cfg  Config
	name string
	// sizes caches plannerTokens by set of capabilities.
	sizes *sync.Map
}

func newBase(cfg Config, name string) (base, error) {
	c, err := cfg.withDefaults()
	return base{cfg: c, name: name, sizes: new(sync.Map)}, err
}

// Name implements Node.
func (b base) Name() string { return b.name }

// RetryPolicy implements capabilities.RetryPolicyProvider. It returns
// Config.RetryPolicy as given: fields left zero are filled field by field
// from the agent's per-node and default policies (capabilities.MergeRetryPolicies).
func (b base) RetryPolicy() capabilities.RetryPolicy { return b.cfg.RetryPolicy }

// ClassifyError implements capabilities.ErrorClassifier: the node's errors
// are *capabilities.Error (stated classification) or LLM errors (classified
// from their HTTP status and kind).
func (b base) ClassifyError(err error, _ capabilities.ErrorContext) capabilities.Classification {
	return llm.CapabilityError(err).Classification()
}

// call is one model call's outcome.
type call struct {
	// text is the visible reply (reasoning removed); raw is what the model sent.
	text, raw string
	usage     llm.Usage
	// finish is the stop reason of the last attempt; maxTokens its limit.
	finish    llm.FinishReason
	maxTokens int
	offline   bool // no model, or unreachable with fallback offline: use the offline strategy
}

// How often a reply cut off by the token limit is asked again with a larger
// limit (llm.GrowMaxTokens): a JSON reply twice (then the node fails with an
// error saying to raise max_tokens), a text reply once (then it is shown
// with a note that it was cut).
const (
	jsonCutRetries = 2
	textCutRetries = 1
)

// generate calls the role's model (llm.Ask) with a system prompt and one
// user message. With a shape the reply is JSON of that shape (structured
// output where the role's json_mode allows); a reply still cut off after
// jsonCutRetries is a CRITICAL error naming max_tokens. A text reply still
// cut is returned (call.finish) for the caller to mark. It reports offline
// when no model is configured for the role, or when the model is unreachable
// and fallback offline is set. On error the call still carries the tokens used.
func (b base) generate(ctx context.Context, role llm.Role, system, user string, shape *replyShape, onChunk func(context.Context, string) error) (call, error) {
	m, ok := b.cfg.Models.For(role)
	if !ok {
		return call{offline: true}, nil
	}
	req := llm.Request{Role: role, OnChunk: onChunk, Messages: []llm.Message{
		{Role: "system", Content: system}, {Role: "user", Content: user}}}
	opts := llm.AskOptions{CutRetries: textCutRetries, KeepCut: true,
		OnRetry: func(ctx context.Context, cut llm.Response, next int) {
			graph.Emit(ctx, Status{Node: b.name, Text: fmt.Sprintf("The %s model's reply was cut off at %s; asking again with up to %d tokens…",
				role, tokenLimit(cut.MaxTokens), next)})
		},
		OnWithdraw: func(ctx context.Context, reason string) {
			graph.Emit(ctx, AnswerReset{Node: b.name, Reason: reason})
		}}
	if shape != nil {
		req.JSON, req.Schema = true, shape.schema()
		opts.CutRetries, opts.KeepCut = jsonCutRetries, false
	}
	resp, err := askAbandonable(ctx, m, req, opts)
	c := call{text: resp.Text, raw: resp.Raw, usage: resp.Usage, finish: resp.FinishReason, maxTokens: resp.MaxTokens}
	if err != nil {
		if errors.Is(err, llm.ErrOffline) {
			graph.Emit(ctx, OfflineFallback{Node: b.name, Reason: err.Error()})
			return call{offline: true, usage: resp.Usage}, nil
		}
		if errors.Is(err, llm.ErrStalled) {
			graph.Emit(ctx, Status{Node: b.name, Text: fmt.Sprintf("The %s model stopped sending its reply (%v); the call was cancelled.", role, err)})
		}
		return c, llm.CapabilityError(err)
	}
	return c, nil
}

// askAbandonable is llm.Ask, abandoned capabilities.AbandonGrace after
// ctx ends (the run stopped, the turn's time ran out): a provider or an
// application's Model that ignores its context cannot keep a stop from
// stopping. Its late chunks and reply are dropped. A model that returns
// when its context ends (llm.Cancelable) is asked in place.
func askAbandonable(ctx context.Context, m llm.Model, req llm.Request, opts llm.AskOptions) (llm.Response, error) {
	if llm.IsCancelable(m) {
		return llm.Ask(ctx, m, req, opts)
	}
	var abandoned atomic.Bool
	if onChunk := req.OnChunk; onChunk != nil {
		req.OnChunk = func(ctx context.Context, chunk string) error {
			if abandoned.Load() {
				return context.Canceled
			}
			return onChunk(ctx, chunk)
		}
	}
	type result struct {
		resp     llm.Response
		err      error
		panicked any
	}
	ch := make(chan result, 1) // buffered: an abandoned call's reply is dropped with it
	go func() {
		r, returned := result{}, false
		defer func() {
			if v := recover(); v != nil {
				r.panicked = v
			} else if !returned {
				r.err = errors.New("the model call exited its goroutine without returning (runtime.Goexit)")
			}
			ch <- r
		}()
		r.resp, r.err = llm.Ask(ctx, m, req, opts)
		returned = true
	}()
	// A panic in the model is the node's, as if the call ran inline: the
	// graph engine recovers it.
	got := func(r result) (llm.Response, error) {
		if r.panicked != nil {
			panic(r.panicked)
		}
		return r.resp, r.err
	}
	select {
	case r := <-ch:
		return got(r)
	case <-ctx.Done():
	}
	grace := time.NewTimer(capabilities.AbandonGrace)
	defer grace.Stop()
	select {
	case r := <-ch:
		return got(r)
	case <-grace.C:
		abandoned.Store(true)
		return llm.Response{}, ctx.Err()
	}
}

func tokenLimit(n int) string {
	if n <= 0 {
		return "the provider's default limit"
	}
	return fmt.Sprintf("%d tokens", n)
}

// online reports whether role has a model (without calling it).
func (b base) online(role llm.Role) bool {
	_, ok := b.cfg.Models.For(role)
	return ok
}

// prompt renders a role's system prompt and turn message (prompts.Set.RenderPrompt).
func (b base) prompt(name string, data any) (prompts.Prompt, error) {
	p, err := b.cfg.Prompts.RenderPrompt(name, data)
	if err != nil {
		// A broken (overridden) template is a configuration defect: no retry helps.
		return p, capabilities.NewError(capabilities.Critical, capabilities.KindInvalidInput,
			"the prompt template "+name+" could not be rendered", err)
	}
	return p, nil
}

func tokens(role llm.Role, calls ...call) map[string]int {
	n := 0
	for _, c := range calls {
		n += c.usage.Total()
	}
	if n == 0 {
		return nil
	}
	return map[string]int{string(role): n}
}

// addTokens adds the tokens of calls of role to m (a new map when m is nil).
func addTokens(m map[string]int, role llm.Role, calls ...call) map[string]int {
	for r, n := range tokens(role, calls...) {
		if m == nil {
			m = map[string]int{}
		}
		m[r] += n
	}
	return m
}

// history converts the messages before this turn for prompts.
func history(s state.State) []prompts.HistoryMessage {
	h := s.History()
	out := make([]prompts.HistoryMessage, 0, len(h))
	for _, m := range h {
		if m.Role == state.RoleSystem {
			continue
		}
		out = append(out, prompts.HistoryMessage{Role: string(m.Role), Content: m.Content})
	}
	return out
}

// taskText is the turn's task, or its input when no task was extracted.
func taskText(t state.Turn) string {
	if t.Task != nil && t.Task.Text != "" {
		return t.Task.Text
	}
	return t.Input
}

// cloneTurn copies the parts of a turn a node changes, so s is not mutated.
func cloneTurn(t state.Turn) state.Turn {
	t.ActiveCapabilities = slices.Clone(t.ActiveCapabilities)
	t.Results = slices.Clone(t.Results)
	if t.Plan != nil {
		p := *t.Plan
		p.Steps = slices.Clone(p.Steps)
		t.Plan = &p
	}
	return t
}

func isTerminal(capability string) bool {
	return capability == state.NodeRespond || capability == state.NodeClarify
}
