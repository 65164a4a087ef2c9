package mcphttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/mcp"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/chatanswer"
	"github.com/capgraph/capgraph/server/internal/turns"
	"github.com/capgraph/capgraph/state"
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
	// AnswerApprovals: the next ask on a thread waiting for an approval
	// answers it (server.Config.MCPAnswersApprovals). Otherwise the ask is
	// told that the approval waits for a person, and nothing runs.
	AnswerApprovals bool
}

// Routes registers /mcp behind d.Auth. GET and DELETE are answered too
// (405 from a stateless server), so clients that probe them learn there
// is no session stream. Every error is a JSON-RPC error object
// (rpcErrors).
func Routes(mux *http.ServeMux, d Deps) {
	sdk := mcp.NewHandler(asker{d}, mcp.HandlerConfig{Examples: d.Examples, AnswersApprovals: d.AnswerApprovals})
	h := rpcErrors(d.Auth(func(w http.ResponseWriter, r *http.Request) {
		// The SDK refuses, on a loopback listener, every Host but
		// localhost (its DNS-rebinding guard), which would lock out a
		// reverse proxy on this machine. The server's own Host check
		// (checkHost: localhost and server.allowed_hosts) has passed, so
		// the SDK is not told the listener's address.
		ctx := context.WithValue(r.Context(), http.LocalAddrContextKey, nil)
		sdk.ServeHTTP(w, r.WithContext(context.WithValue(ctx, requestContext{}, r.Context())))
	}))
	for _, method := range []string{"GET", "POST", "DELETE"} {
		mux.HandleFunc(method+" /mcp", h)
	}
}

// requestContext is the context key of the HTTP request's context. The
// SDK runs a stateless server's tool call in a context of its own, which
// a client dropping the connection does not cancel (before protocol
// 2026-07-28); a call ends with its request (withRequest).
type requestContext struct{}

// withRequest is ctx, canceled as well when its HTTP request's context is:
// the client went away.
func withRequest(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if rc, ok := ctx.Value(requestContext{}).(context.Context); ok {
		stop := context.AfterFunc(rc, cancel)
		return ctx, func() { stop(); cancel() }
	}
	return ctx, cancel
}

// Source names the protocol in a thread's metadata and a run's record
// (and the scope of a call's request_id).
const Source = "mcp"

// asker implements mcp.Asker over the server's threads and runs.
type asker struct{ d Deps }

// Ask runs a turn (or answers the thread's pending approval) as the
// request's caller and waits for it, like a Chat Completions request. A
// call with a request_id the caller sent before starts nothing: it
// follows that call's run, or gets its answer from the run's record.
func (m asker) Ask(ctx context.Context, q mcp.Question) (mcp.Answer, error) {
	ctx, cancel := withRequest(ctx)
	defer cancel()
	t := m.d.Turns
	if strings.TrimSpace(q.Text) == "" {
		return mcp.Answer{}, fmt.Errorf("%w: the question is empty", mcp.ErrBadQuestion)
	}
	if len(q.Text) > m.d.MaxMessageBytes {
		return mcp.Answer{}, fmt.Errorf("%w: the question has %d bytes; the limit is %d", mcp.ErrBadQuestion, len(q.Text), m.d.MaxMessageBytes)
	}
	if err := checkRequestID(q.RequestID); err != nil {
		return mcp.Answer{}, err
	}
	thread := q.Thread
	if thread == "" {
		thread = "mcp-" + uuid.NewString()
	}
	if !turns.ValidThreadID(thread) {
		return mcp.Answer{}, fmt.Errorf("%w: thread_id %s is not a valid thread id: a thread id is %s", mcp.ErrBadQuestion, turns.QuoteForClient(thread), turns.ThreadIDRule)
	}
	var th turns.Thread
	op, err := t.Start(ctx, turns.Once{Scope: Source, Key: q.RequestID, Request: []string{q.Thread, q.Text},
		Spec: func(ctx context.Context) (turns.Spec, error) {
			var err error
			if th, err = t.OpenThread(ctx, thread, Source); err != nil {
				return turns.Spec{}, err
			}
			sp := turns.Spec{Source: Source, ClientThread: th.ID, Thread: th.Internal}
			if ap := t.WaitingApproval(ctx, th.Internal); ap != nil {
				if !m.d.AnswerApprovals {
					return turns.Spec{}, waitingHuman{ap}
				}
				// The thread waits for a human: this question is the
				// answer (a yes proceeds, a no cancels; anything else
				// decides nothing and the question is asked again).
				sp.Answer = &agent.Answer{ApprovalID: ap.ID, Text: q.Text, By: t.Who(ctx)}
				return sp, nil
			}
			req, err := t.OpenTurn(ctx, turns.TurnOpening{Field: "text", Input: q.Text, Source: Source, ClientThread: th.ID, Thread: th.Internal})
			if err != nil {
				return turns.Spec{}, err
			}
			sp.Turn = &req
			return sp, nil
		}})
	if wh, ok := errors.AsType[waitingHuman](err); ok {
		// Nothing ran: the approval waits for a person, elsewhere.
		return mcp.Answer{Thread: th.ID, Status: string(agent.RunInterrupted), Approval: &mcp.PendingApproval{ID: wh.ap.ID, Summary: wh.ap.Summary},
			Text: "This conversation waits for a person's approval, which this tool does not give: nothing was done, and your message was not read as an answer. " +
				"Show the request to the user."}, nil
	}
	if errors.Is(err, apierror.ErrKeyReused) {
		return mcp.Answer{}, fmt.Errorf("%w: request_id %s was sent before with another question or thread; use a new request_id for a new request", mcp.ErrBadQuestion, turns.QuoteForClient(q.RequestID))
	}
	if err != nil {
		return mcp.Answer{}, err
	}
	if op.Dup != nil {
		th = turns.Thread{ID: op.DupThread}
	}
	if op.Run == nil {
		return m.replay(th.ID, *op.Dup)
	}
	ans, err := m.follow(ctx, th.ID, op.Run, q)
	ans.Replayed = op.Dup != nil
	return ans, err
}

// follow waits for ru, the run of a call, to end and returns its answer.
func (m asker) follow(ctx context.Context, thread string, ru turns.Run, q mcp.Question) (mcp.Answer, error) {
	ru.Join()
	rd := &chatanswer.Renderer{}
	if !ru.Follow(ctx, 0, m.d.Heartbeat, nil, func(ev agent.Event) {
		for _, p := range rd.Render(ev) {
			if p.Status != nil && p.Status.Description != "" && q.Progress != nil {
				q.Progress(p.Status.Description)
			}
		}
	}, nil) {
		// The client went away. A call it can repeat (a request_id) leaves
		// the run a grace period for the repeat to join; any other stops
		// it now.
		ru.Leave(q.RequestID != "")
		return mcp.Answer{}, ctx.Err()
	}
	status, runErr, shutdown := ru.Result()
	return m.answer(thread, ResultOf(rd, status, runErr, m.d.Turns.PublicMessage(runErr), shutdown))
}

// replay answers a repeated call from the record of its first call's run,
// which has ended (or runs where this process cannot follow it).
func (m asker) replay(thread string, rec runstore.Record) (mcp.Answer, error) {
	if !rec.Status.Terminal() {
		return mcp.Answer{}, fmt.Errorf("the first call with this request_id (run %s) is still going on; call again shortly for its answer", rec.ID)
	}
	var kept struct {
		MCP *Result `json:"mcp"` // server.runResult's
	}
	if json.Unmarshal(rec.Result, &kept) != nil || kept.MCP == nil {
		// A run a restart ended, whose record kept no answer.
		if rec.Error != "" {
			return mcp.Answer{}, errors.New("the run failed: " + rec.Error)
		}
		return mcp.Answer{Thread: thread, Replayed: true,
			Text: fmt.Sprintf("This request was carried out before (run %s, %s); its answer is in the conversation %s.", rec.ID, rec.Status, thread)}, nil
	}
	ans, err := m.answer(thread, *kept.MCP)
	ans.Replayed = true
	return ans, err
}

// answer is the ask tool's answer of res.
func (m asker) answer(thread string, res Result) (mcp.Answer, error) {
	if res.Error != "" {
		if res.BadQuestion {
			return mcp.Answer{}, fmt.Errorf("%w: %s", mcp.ErrBadQuestion, res.Error)
		}
		return mcp.Answer{}, errors.New(res.Error)
	}
	ans := mcp.Answer{Thread: thread, Text: res.Text, Status: string(res.Status), Approval: res.Approval}
	ans.Text, ans.Images = m.d.Artifacts(ans.Text, res.Artifacts)
	ans.Text += res.EndNote
	return ans, nil
}

// Result is the ask tool's answer of a run that ended, before its
// artifacts are added. The record of a run a call with a request_id
// started keeps it (server's runResult.MCP), so a repeat of the call gets
// the same answer.
type Result struct {
	Status    agent.RunStatus         `json:"status,omitempty"`
	Text      string                  `json:"text,omitempty"`
	EndNote   string                  `json:"end_note,omitempty"`
	Approval  *mcp.PendingApproval    `json:"approval,omitempty"`
	Artifacts []capabilities.Artifact `json:"artifacts,omitempty"`
	// Error is the tool error the call got instead (BadQuestion: the
	// question was at fault).
	Error       string `json:"error,omitempty"`
	BadQuestion bool   `json:"bad_question,omitempty"`
}

// ResultOf is the answer of a run that ended with status and runErr
// (public: the client's message of runErr), rendered by rd.
func ResultOf(rd *chatanswer.Renderer, status agent.RunStatus, runErr error, public string, shutdown bool) Result {
	if ae, ok := errors.AsType[*agent.ApprovalError](runErr); ok && errors.Is(ae, agent.ErrApprovalUnclear) && ae.Approval != nil {
		return Result{Status: agent.RunInterrupted,
			Text:     fmt.Sprintf("The answer %q is neither a yes nor a no, so nothing was decided: the approval is still waiting.\n\n%s\n\nReply \"yes\" to proceed or \"no\" to cancel.", ae.Answer, ae.Approval.Summary),
			Approval: &mcp.PendingApproval{ID: ae.Approval.ID, Summary: ae.Approval.Summary}}
	}
	if runErr != nil && !chatanswer.Answerable(runErr) {
		if errors.Is(runErr, agent.ErrApprovalAnswered) {
			return Result{Error: "this approval was answered already", BadQuestion: true}
		}
		return Result{Error: "the run failed: " + public}
	}
	text := rd.Content.String()
	if runErr != nil {
		text = chatanswer.Join(text, public) // a FATAL failure or the time limit: an answer
	}
	res := Result{Status: status, Text: strings.TrimSpace(text), Artifacts: rd.Artifacts, EndNote: chatanswer.EndNote(status, shutdown)}
	if rd.Approval != nil && rd.Status == agent.RunInterrupted {
		res.Approval = &mcp.PendingApproval{ID: rd.Approval.ID, Summary: rd.Approval.Summary}
	}
	return res
}

// waitingHuman is a thread's pending approval, which an ask may not
// answer (Deps.AnswerApprovals off).
type waitingHuman struct{ ap *state.Approval }

func (w waitingHuman) Error() string { return "the approval waits for a person" }

// checkRequestID refuses a request_id no client should send.
func checkRequestID(id string) error {
	if len(id) > turns.MaxKeyLen {
		return fmt.Errorf("%w: request_id has %d bytes; at most %d", mcp.ErrBadQuestion, len(id), turns.MaxKeyLen)
	}
	for _, r := range id {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return fmt.Errorf("%w: request_id %s holds a control character or invalid UTF-8", mcp.ErrBadQuestion, turns.QuoteForClient(id))
		}
	}
	return nil
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
