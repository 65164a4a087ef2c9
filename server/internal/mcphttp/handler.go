package mcphttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/mcp"
	"github.com/capgraph/capgraph/server/internal/chatanswer"
	"github.com/capgraph/capgraph/server/internal/turns"
	"github.com/google/uuid"
)

// The route sits behind the same authentication, rate limit and run
// limits as every other API, and each tool call runs as the request's
// caller, in the caller's threads (the same thread scoping as the native
// API: another key naming the same thread id gets a thread of its own).

// Deps is what the MCP route needs of the server.
type Deps struct {
	Turns turns.Turns
	// Auth wraps the route in the server's authentication and rate limit.
	Auth func(http.HandlerFunc) http.HandlerFunc
	// Examples are the demo questions the ask tool's description offers.
	Examples []string
	// MaxMessageBytes bounds a question.
	MaxMessageBytes int
	// Heartbeat is how often a wait for a run's events looks again.
	Heartbeat time.Duration
	// Artifacts adds a turn's artifacts to its answer's text, and returns
	// their images.
	Artifacts func(text string, arts []capabilities.Artifact) (string, []mcp.Media)
}

// Routes registers /mcp behind d.Auth. GET and DELETE are answered too
// (405 from a stateless server), so clients that probe them learn there
// is no session stream. Every error is a JSON-RPC error object
// (rpcErrors).
func Routes(mux *http.ServeMux, d Deps) {
	sdk := mcp.NewHandler(asker{d}, mcp.HandlerConfig{Examples: d.Examples})
	h := rpcErrors(d.Auth(func(w http.ResponseWriter, r *http.Request) {
		// The SDK refuses, on a loopback listener, every Host but
		// localhost (its DNS-rebinding guard), which would lock out a
		// reverse proxy on this machine. The server's own Host check
		// (checkHost: localhost and server.allowed_hosts) has passed, so
		// the SDK is not told the listener's address.
		sdk.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, nil)))
	}))
	for _, method := range []string{"GET", "POST", "DELETE"} {
		mux.HandleFunc(method+" /mcp", h)
	}
}

// asker implements mcp.Asker over the server's threads and runs.
type asker struct{ d Deps }

// Ask runs a turn (or answers the thread's pending approval) as the
// request's caller and waits for it, like a Chat Completions request.
func (m asker) Ask(ctx context.Context, q mcp.Question) (mcp.Answer, error) {
	t := m.d.Turns
	if strings.TrimSpace(q.Text) == "" {
		return mcp.Answer{}, fmt.Errorf("%w: the question is empty", mcp.ErrBadQuestion)
	}
	if len(q.Text) > m.d.MaxMessageBytes {
		return mcp.Answer{}, fmt.Errorf("%w: the question has %d bytes; the limit is %d", mcp.ErrBadQuestion, len(q.Text), m.d.MaxMessageBytes)
	}
	if q.Thread == "" {
		q.Thread = "mcp-" + uuid.NewString()
	}
	if !turns.ValidThreadID(q.Thread) {
		return mcp.Answer{}, fmt.Errorf("%w: thread_id %s is not a valid thread id: a thread id is %s", mcp.ErrBadQuestion, turns.QuoteForClient(q.Thread), turns.ThreadIDRule)
	}
	th, err := t.OpenThread(ctx, q.Thread, "mcp")
	if err != nil {
		return mcp.Answer{}, err
	}
	sp := turns.Spec{Source: "mcp", ClientThread: th.ID, Thread: th.Internal}
	if ap := t.WaitingApproval(ctx, th.Internal); ap != nil {
		// The thread waits for a human: this question is the answer (a
		// yes proceeds, a no cancels; anything else decides nothing and
		// the question is asked again).
		sp.Answer = &agent.Answer{ApprovalID: ap.ID, Text: q.Text, By: t.Who(ctx)}
	} else {
		req, err := t.OpenTurn(ctx, turns.TurnOpening{Field: "text", Input: q.Text, Source: "mcp", ClientThread: th.ID, Thread: th.Internal})
		if err != nil {
			return mcp.Answer{}, err
		}
		sp.Turn = &req
	}
	ru, err := t.Start(ctx, sp)
	if err != nil {
		return mcp.Answer{}, err
	}
	ru.Join()
	rd := &chatanswer.Renderer{}
	if !ru.Follow(ctx, 0, m.d.Heartbeat, nil, func(ev agent.Event) {
		for _, p := range rd.Render(ev) {
			if p.Status != nil && p.Status.Description != "" && q.Progress != nil {
				q.Progress(p.Status.Description)
			}
		}
	}, nil) {
		ru.Leave(false) // the client went away (no repeat can join a run without a key): the run stops now
		return mcp.Answer{}, ctx.Err()
	}
	status, runErr, shutdown := ru.Result()
	if ae, ok := errors.AsType[*agent.ApprovalError](runErr); ok && errors.Is(ae, agent.ErrApprovalUnclear) && ae.Approval != nil {
		return mcp.Answer{Thread: th.ID, Status: string(agent.RunInterrupted),
			Text:     fmt.Sprintf("The answer %q is neither a yes nor a no, so nothing was decided: the approval is still waiting.\n\n%s\n\nReply \"yes\" to proceed or \"no\" to cancel.", ae.Answer, ae.Approval.Summary),
			Approval: &mcp.PendingApproval{ID: ae.Approval.ID, Summary: ae.Approval.Summary}}, nil
	}
	if runErr != nil && !chatanswer.Answerable(runErr) {
		if errors.Is(runErr, agent.ErrApprovalAnswered) {
			return mcp.Answer{}, fmt.Errorf("%w: this approval was answered already", mcp.ErrBadQuestion)
		}
		return mcp.Answer{}, errors.New("the run failed: " + t.PublicMessage(runErr))
	}
	text := rd.Content.String()
	if runErr != nil {
		text = chatanswer.Join(text, t.PublicMessage(runErr)) // a FATAL failure or the time limit: an answer
	}
	ans := mcp.Answer{Thread: th.ID, Text: strings.TrimSpace(text), Status: string(status)}
	ans.Text, ans.Images = m.d.Artifacts(ans.Text, rd.Artifacts)
	if rd.Approval != nil && rd.Status == agent.RunInterrupted {
		ans.Approval = &mcp.PendingApproval{ID: rd.Approval.ID, Summary: rd.Approval.Summary}
	}
	ans.Text += chatanswer.EndNote(status, shutdown)
	return ans, nil
}

// Threads lists the caller's threads.
func (m asker) Threads(ctx context.Context) ([]mcp.ThreadSummary, error) {
	ths, err := m.d.Turns.Threads(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]mcp.ThreadSummary, 0, len(ths))
	for _, th := range ths {
		out = append(out, mcp.ThreadSummary{ID: th.ID, Status: th.Status, Updated: th.Updated})
	}
	return out, nil
}
