package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm/replytext"
)

// Limits of the larger token limit a cut reply is asked again with.
const (
	// GrownMaxTokensFloor is the limit after a reply cut at an unknown
	// limit (the provider's default) or a smaller one.
	GrownMaxTokensFloor = 4096
	// GrownMaxTokensCap is the largest limit Ask asks for.
	GrownMaxTokensCap = 32768
)

// GrowMaxTokens returns the limit to ask again with after a reply was cut
// at used tokens (0: the provider's default): doubled, at least
// GrownMaxTokensFloor, at most GrownMaxTokensCap. A result not above used
// means there is no larger limit to try.
func GrowMaxTokens(used int) int {
	return min(max(2*used, GrownMaxTokensFloor), GrownMaxTokensCap)
}

// AskOptions say how Ask treats a reply.
type AskOptions struct {
	// CutRetries is how often a reply cut off by the token limit is asked
	// again with a larger limit (GrowMaxTokens).
	CutRetries int
	// KeepCut returns a reply still cut after the retries (Response.Cut)
	// instead of an *Error of kind ErrTruncated: for text a reader can be
	// shown with a note. A cut JSON reply is unusable: leave it false.
	KeepCut bool
	// OnRetry, when set, is told before a cut reply is asked again.
	OnRetry func(ctx context.Context, cut Response, nextMaxTokens int)
	// OnWithdraw, when set, is told that text already streamed must be
	// withdrawn: before a cut reply is asked again, when the call fails after
	// streaming, or when the reply's reasoning was recognisable only at its
	// end (then the visible text is streamed again, whole).
	OnWithdraw func(ctx context.Context, reason string)
}

// Ask is how every role calls its model, so every role reads replies alike:
//   - the request's role is named by every error, also an application's
//     own Model's (a plain error becomes an *Error of that role);
//   - reasoning never reaches the caller: Response.Text is the visible
//     reply (replytext.Visible; Raw keeps the whole), and streamed chunks
//     pass through a replytext.Filter;
//   - a reply cut off by the token limit is asked again with a larger one
//     (opts.CutRetries times); still cut, it is an ErrTruncated error unless
//     opts.KeepCut.
//
// Response.Usage counts every call Ask made, also when it returns an error.
// Each call is reported to the context's call observer (WithCallObserver).
func Ask(ctx context.Context, m Model, req Request, opts AskOptions) (Response, error) {
	var total Usage
	for attempt := 0; ; attempt++ {
		start := time.Now()
		resp, streamed, err := askOnce(ctx, m, req, opts)
		observeCall(ctx, req.Role, start, resp, err)
		total.PromptTokens += resp.Usage.PromptTokens
		total.CompletionTokens += resp.Usage.CompletionTokens
		total.CachedPromptTokens += resp.Usage.CachedPromptTokens
		resp.Usage = total
		if err != nil {
			if streamed && opts.OnWithdraw != nil {
				opts.OnWithdraw(ctx, "the model's reply failed part way: "+err.Error())
			}
			return resp, withRole(ctx, req.Role, err)
		}
		if !resp.Cut() {
			return resp, nil
		}
		next := GrowMaxTokens(resp.MaxTokens)
		if attempt < opts.CutRetries && next > resp.MaxTokens {
			if streamed && opts.OnWithdraw != nil {
				opts.OnWithdraw(ctx, fmt.Sprintf("the reply was cut off at %s; asking again with up to %d tokens", limitText(resp.MaxTokens), next))
			}
			if opts.OnRetry != nil {
				opts.OnRetry(ctx, resp, next)
			}
			req.MaxTokens = next
			continue
		}
		if opts.KeepCut {
			return resp, nil
		}
		return resp, &Error{Kind: ErrTruncated, Role: req.Role, Model: resp.Model, MaxTokens: resp.MaxTokens,
			Err: fmt.Errorf("finish_reason %q after %d call(s)", resp.FinishReason, attempt+1)}
	}
}

func limitText(n int) string {
	if n <= 0 {
		return "the provider's default token limit"
	}
	return fmt.Sprintf("%d tokens", n)
}

// askOnce makes one call; streamed reports whether chunks reached the caller.
func askOnce(ctx context.Context, m Model, req Request, opts AskOptions) (resp Response, streamed bool, err error) {
	var (
		filter replytext.Filter
		shown  strings.Builder
	)
	show := req.OnChunk
	memo := reasoningMemoOf(m)
	if show != nil {
		if memo != nil && memo.Load() {
			filter.StartInReasoning()
		}
		req.OnChunk = func(ctx context.Context, chunk string) error {
			v := filter.Write(chunk)
			if v == "" {
				return nil
			}
			shown.WriteString(v)
			streamed = true
			return show(ctx, v)
		}
	}
	resp, err = m.Generate(ctx, req)
	if err != nil {
		return resp, streamed, err
	}
	resp.Raw = resp.Text
	resp.Text = replytext.Visible(resp.Raw)
	if memo != nil && replytext.OpenedInPrompt(resp.Raw) {
		memo.Store(true)
	}
	if show == nil {
		return resp, false, nil
	}
	if tail := filter.Flush(); tail != "" {
		shown.WriteString(tail)
		streamed = true
		if err := show(ctx, tail); err != nil {
			return resp, streamed, err
		}
	}
	if strings.TrimSpace(shown.String()) != resp.Text {
		// Reasoning only recognisable at the end (a closing tag with no
		// opening one), or a provider whose final text differs from its
		// chunks: the reader gets the visible reply, once.
		if streamed && opts.OnWithdraw != nil {
			opts.OnWithdraw(ctx, "the streamed text held the model's reasoning; showing the answer alone")
		}
		if resp.Text != "" {
			streamed = true
			if err := show(ctx, resp.Text); err != nil {
				return resp, streamed, err
			}
		}
	}
	return resp, streamed, nil
}

// withRole makes err an *Error naming role, keeping what it already says.
func withRole(ctx context.Context, role Role, err error) error {
	if errors.Is(err, ErrOffline) {
		return err // the node answers offline; the failure is only reported
	}
	var le *Error
	if errors.As(err, &le) {
		if le.Role != "" {
			return err
		}
		cp := *le
		cp.Role = role
		return &cp
	}
	var ce *capabilities.Error
	if errors.As(err, &ce) {
		return err // classified by the application already
	}
	kind, status, delay, code := kindOf(ctx, err)
	return &Error{Kind: kind, Role: role, StatusCode: status, Delay: delay, Code: code, Err: err}
}

// reasoningMemo is implemented by the models of this package: it remembers
// that a model's replies start with reasoning opened in the prompt, so its
// later streams hold that reasoning back from the start.
type reasoningMemo interface {
	reasoningOpenedInPrompt() *atomic.Bool
}

func reasoningMemoOf(m Model) *atomic.Bool {
	if rm, ok := m.(reasoningMemo); ok {
		return rm.reasoningOpenedInPrompt()
	}
	return nil
}
