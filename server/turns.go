package server

import (
	"context"
	"net/http"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/turns"
	"github.com/capgraph/capgraph/state"
)

// serverTurns is the server as the protocols' handlers see it
// (turns.Turns): the caller is the request's.
type serverTurns struct{ s *Server }

var _ turns.Turns = serverTurns{}

func (t serverTurns) Open(o turns.Opening) (turns.Opened, bool) {
	c := callerFrom(o.R.Context())
	op := opening{w: o.W, r: o.R, c: c, scope: o.Scope, failed: o.Failed,
		spec: func(ctx context.Context, key string) (*runSpec, error) {
			sp, err := o.Spec(ctx, key)
			if sp == nil || err != nil {
				return nil, err
			}
			rs := protocolSpec(c, *sp)
			return &rs, nil
		}}
	if o.LookFirst != nil {
		op.lookFirst, op.request = true, protocolSpec(c, *o.LookFirst).requestDigest()
	}
	opened, ok := t.s.open(op)
	out := turns.Opened{Dup: opened.dup}
	if opened.dup != nil {
		out.DupThread = opened.dup.Labels[labelThread]
	}
	if opened.ru != nil {
		out.Run = opened.ru
	}
	return out, ok
}

// OpenTurn opens a protocol's turn: who asks and what the key may do are
// the key's (Allowed and By are the server's own triggers'; a protocol's
// are dropped).
func (t serverTurns) OpenTurn(ctx context.Context, o turns.TurnOpening) (agent.TurnRequest, error) {
	o.Allowed, o.By = nil, ""
	return t.s.openTurn(callerFrom(ctx), o)
}

func (t serverTurns) InternalThread(ctx context.Context, id string) string {
	return internalThreadID(callerFrom(ctx), id)
}

func (t serverTurns) OpenThread(ctx context.Context, id, source string) (turns.Thread, error) {
	th, _, err := t.s.openThread(ctx, callerFrom(ctx), id, source, nil)
	return turns.Thread{ID: th.ID, Internal: th.Internal}, err
}

func (t serverTurns) CheckPending(ctx context.Context, th turns.Thread, id string) error {
	return t.s.checkPending(ctx, th.Internal, id)
}

func (t serverTurns) Who(ctx context.Context) string { return callerName(callerFrom(ctx)) }

func (t serverTurns) RunByID(id string) (turns.Run, bool) {
	ru, ok := t.s.runs.ByID(id)
	if !ok {
		return nil, false
	}
	return ru, true
}

func (t serverTurns) ThreadState(ctx context.Context, thread string) (state.State, error) {
	st, _, err := t.s.cfg.Runner.State(ctx, thread)
	return st, err
}

func (t serverTurns) WriteError(w http.ResponseWriter, err error) { t.s.writeError(w, err) }

func (t serverTurns) PublicMessage(err error) string { return t.s.publicMessage(err) }

// protocolSpec is the server's spec of the run a protocol asks for as c.
func protocolSpec(c caller, sp turns.Spec) runSpec {
	rs := runSpec{c: c, source: sp.Source, clientThread: sp.ClientThread, thread: sp.Thread, beside: sp.Beside}
	switch {
	case sp.Turn != nil:
		rs.kind, rs.turn = kindTurn, sp.Turn
	case sp.Answer != nil:
		rs.kind, rs.answer = kindAnswer, sp.Answer
	}
	return rs
}

func (t serverTurns) WaitingApproval(ctx context.Context, thread string) *state.Approval {
	st, status, err := t.s.cfg.Runner.State(ctx, thread)
	if err != nil || status != agent.RunInterrupted {
		return nil
	}
	return st.Turn.PendingApproval
}

func (t serverTurns) Start(ctx context.Context, o turns.Once) (turns.Opened, error) {
	c := callerFrom(ctx)
	key, request := "", ""
	if o.Key != "" {
		key, request = explicitKey(c, o.Scope, o.Key), digestHex(o.Request...)
	}
	op, err := t.s.openKeyed(ctx, key, opening{c: c, lookFirst: key != "", request: request,
		spec: func(ctx context.Context, _ string) (*runSpec, error) {
			sp, err := o.Spec(ctx)
			if err != nil {
				return nil, err
			}
			rs := protocolSpec(c, sp)
			if key != "" {
				// The record keeps the answer for a repeat (runResult.MCP),
				// and names the request as the client sent it.
				rs.chat, rs.request = true, request
			}
			return &rs, nil
		}})
	if err != nil {
		return turns.Opened{}, err
	}
	out := turns.Opened{Dup: op.dup}
	if op.dup != nil {
		out.DupThread = op.dup.Labels[labelThread]
	}
	switch {
	case op.ru != nil:
		out.Run = op.ru
	case op.dup != nil:
		if ru := t.s.joinable(ctx, c, *op.dup); ru != nil {
			out.Run = ru
		}
	}
	return out, nil
}

func (t serverTurns) Threads(ctx context.Context) ([]turns.ThreadSummary, error) {
	ths, _, err := t.s.listThreads(ctx, callerFrom(ctx), page{limit: t.s.cfg.MaxPageSize})
	if err != nil {
		return nil, err
	}
	out := make([]turns.ThreadSummary, 0, len(ths))
	for i := range ths {
		ths[i].Status = t.s.threadStatus(ctx, ths[i].Internal)
		out = append(out, turns.ThreadSummary{ID: ths[i].ID, Status: ths[i].Status, Updated: ths[i].Updated})
	}
	return out, nil
}
