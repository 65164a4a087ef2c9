package server

import (
	"context"
	"errors"
	"fmt"
	"github.com/capgraph/capgraph/server/internal/turns"
	"net/http"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/mcp"
	"github.com/google/uuid"
)

// The agent as an MCP server at /mcp (streamable HTTP, stateless): the
// route sits behind the same authentication, rate limit and run limits as
// every other API, and each tool call runs as the request's caller, in the
// caller's threads (the same thread scoping as the native API: another key
// naming the same thread id gets a thread of its own).

// mcpRoutes registers /mcp behind auth (the server's authentication and
// rate limit). GET and DELETE are answered too (405 from a stateless
// server), so clients that probe them learn there is no session stream.
// Every error is a JSON-RPC error object (rpcErrors).
func (s *Server) mcpRoutes(mux *http.ServeMux, auth func(http.HandlerFunc) http.HandlerFunc) {
	sdk := mcp.NewHandler(mcpAsker{s}, mcp.HandlerConfig{Examples: s.cfg.Examples})
	h := rpcErrors(auth(func(w http.ResponseWriter, r *http.Request) {
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

// mcpAsker implements mcp.Asker over the server's threads and runs.
type mcpAsker struct{ s *Server }

// Ask runs a turn (or answers the thread's pending approval) as the
// request's caller and waits for it, like a Chat Completions request.
func (m mcpAsker) Ask(ctx context.Context, q mcp.Question) (mcp.Answer, error) {
	s := m.s
	c := callerFrom(ctx)
	if strings.TrimSpace(q.Text) == "" {
		return mcp.Answer{}, fmt.Errorf("%w: the question is empty", mcp.ErrBadQuestion)
	}
	if len(q.Text) > s.cfg.MaxMessageBytes {
		return mcp.Answer{}, fmt.Errorf("%w: the question has %d bytes; the limit is %d", mcp.ErrBadQuestion, len(q.Text), s.cfg.MaxMessageBytes)
	}
	if q.Thread == "" {
		q.Thread = "mcp-" + uuid.NewString()
	}
	if !turns.ValidThreadID(q.Thread) {
		return mcp.Answer{}, fmt.Errorf("%w: thread_id %s is not a valid thread id: a thread id is %s", mcp.ErrBadQuestion, turns.QuoteForClient(q.Thread), turns.ThreadIDRule)
	}
	th, _, err := s.openThread(ctx, c, q.Thread, "mcp", nil)
	if err != nil {
		return mcp.Answer{}, err
	}
	sp := runSpec{c: c, source: "mcp", clientThread: th.ID, thread: th.internal}
	if st, status, err := s.cfg.Runner.State(ctx, th.internal); err == nil && status == agent.RunInterrupted && st.Turn.PendingApproval != nil {
		// The thread waits for a human: this question is the answer (a
		// yes proceeds, a no cancels; anything else decides nothing and
		// the question is asked again).
		ans := agent.Answer{ApprovalID: st.Turn.PendingApproval.ID, Text: q.Text, By: callerName(c)}
		sp.kind, sp.answer = kindAnswer, &ans
	} else {
		req, err := s.openTurn(c, turnOpening{field: "text", input: q.Text, source: "mcp", clientThread: th.ID, thread: th.internal})
		if err != nil {
			return mcp.Answer{}, err
		}
		sp.kind, sp.turn = kindTurn, &req
	}
	ru, _, err := s.submit(ctx, sp)
	if err != nil {
		return mcp.Answer{}, err
	}
	ru.Join()
	rd := &chatRenderer{}
	if !s.follow(ctx, ru, 0, nil, func(ev agent.Event) {
		for _, p := range rd.render(ev) {
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
	if runErr != nil && !answerable(runErr) {
		if errors.Is(runErr, agent.ErrApprovalAnswered) {
			return mcp.Answer{}, fmt.Errorf("%w: this approval was answered already", mcp.ErrBadQuestion)
		}
		return mcp.Answer{}, errors.New("the run failed: " + s.publicMessage(runErr))
	}
	text := rd.content.String()
	if runErr != nil {
		text = joinAnswer(text, s.publicMessage(runErr)) // a FATAL failure or the time limit: an answer
	}
	ans := mcp.Answer{Thread: th.ID, Text: strings.TrimSpace(text), Status: string(status)}
	ans.Text, ans.Images = s.artifacts.ForMCP(ans.Text, rd.artifacts)
	if rd.approval != nil && rd.status == agent.RunInterrupted {
		ans.Approval = &mcp.PendingApproval{ID: rd.approval.ID, Summary: rd.approval.Summary}
	}
	ans.Text += endNote(status, shutdown)
	return ans, nil
}

// Threads lists the caller's threads.
func (m mcpAsker) Threads(ctx context.Context) ([]mcp.ThreadSummary, error) {
	ths, _, err := m.s.listThreads(ctx, callerFrom(ctx), page{limit: m.s.cfg.MaxPageSize})
	if err != nil {
		return nil, err
	}
	out := make([]mcp.ThreadSummary, 0, len(ths))
	for i := range ths {
		m.s.fillStatus(ctx, &ths[i])
		out = append(out, mcp.ThreadSummary{ID: ths[i].ID, Status: ths[i].Status, Updated: ths[i].Updated})
	}
	return out, nil
}
