package server

import (
	"context"
	"errors"
	"fmt"
	"iter"
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
func (s *Server) mcpRoutes(mux *http.ServeMux, auth func(http.HandlerFunc) http.HandlerFunc) {
	h := auth(mcp.NewHandler(mcpAsker{s}, mcp.HandlerConfig{Examples: s.cfg.Examples}).ServeHTTP)
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
	if len(q.Thread) > maxThreadIDLen || strings.ContainsAny(q.Thread, "/\x00") {
		return mcp.Answer{}, fmt.Errorf("%w: thread_id must be at most %d characters without '/'", mcp.ErrBadQuestion, maxThreadIDLen)
	}
	th, _, err := s.openThread(ctx, c, q.Thread, nil)
	if err != nil {
		return mcp.Answer{}, err
	}
	var fn func(ctx context.Context) iter.Seq2[agent.Event, error]
	if st, status, err := s.cfg.Runner.State(ctx, th.internal); err == nil && status == agent.RunInterrupted && st.Turn.PendingApproval != nil {
		// The thread waits for a human: this question is the answer
		// (yes proceeds; anything unclear is a no).
		ans := agent.Answer{ApprovalID: st.Turn.PendingApproval.ID, Text: q.Text, By: callerName(c)}
		fn = func(ctx context.Context) iter.Seq2[agent.Event, error] {
			return s.cfg.Runner.Resume(ctx, th.internal, ans)
		}
	} else {
		req := s.turnRequest(c, th.internal, q.Text, nil, s.turnMetadata(c, "mcp", th.ID, nil))
		if err := s.checkTurn(req); err != nil {
			return mcp.Answer{}, err
		}
		fn = func(ctx context.Context) iter.Seq2[agent.Event, error] { return s.cfg.Runner.Run(ctx, req) }
	}
	ru, err := s.runs.start(c, th.ID, th.internal, fn)
	if err != nil {
		return mcp.Answer{}, err
	}
	rd := &chatRenderer{}
	if !s.follow(ctx, ru, 0, func(ev agent.Event) {
		for _, p := range rd.render(ev) {
			if p.Status != nil && p.Status.Description != "" && q.Progress != nil {
				q.Progress(p.Status.Description)
			}
		}
	}, nil) {
		ru.cancel() // the client went away: the run stops at its next checkpoint
		return mcp.Answer{}, ctx.Err()
	}
	status, runErr, shutdown := ru.result()
	if runErr != nil {
		if errors.Is(runErr, agent.ErrApprovalAnswered) {
			return mcp.Answer{}, fmt.Errorf("%w: this approval was answered already", mcp.ErrBadQuestion)
		}
		return mcp.Answer{}, fmt.Errorf("the run failed: %w", runErr)
	}
	ans := mcp.Answer{Thread: th.ID, Text: strings.TrimSpace(rd.content.String()), Status: string(status)}
	ans.Text, ans.Images = s.mcpArtifacts(ans.Text, rd.artifacts)
	if rd.approval != nil && rd.status == agent.RunInterrupted {
		ans.Approval = &mcp.PendingApproval{ID: rd.approval.ID, Summary: rd.approval.Summary}
	}
	if shutdown {
		ans.Text += shutdownNote
	}
	return ans, nil
}

// Threads lists the caller's threads.
func (m mcpAsker) Threads(ctx context.Context) ([]mcp.ThreadSummary, error) {
	ths, err := m.s.listThreads(ctx, callerFrom(ctx))
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
