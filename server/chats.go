package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/chatanswer"
	"github.com/capgraph/capgraph/server/internal/chatturn"
	"github.com/capgraph/capgraph/server/internal/turns"
)

// serverChats is the server as the chat protocols' handlers see it
// (chatturn.Chats): the caller is the request's. The runs it is handed
// back are the ones it gave (*run).
type serverChats struct{ s *Server }

var _ chatturn.Chats = serverChats{}

func (h serverChats) StatusFrames(r *http.Request, user json.RawMessage) bool {
	return h.s.sendStatusFrames(r, callerFrom(r.Context()), user)
}

// Open opens a chat turn: a repeated request (an SDK's retry) gets the
// first request's run, or its answer.
func (h serverChats) Open(w http.ResponseWriter, r *http.Request, t chatturn.Turn, p chatturn.Protocol) (chatturn.Opened, bool) {
	if p == chatturn.Responses {
		return h.s.openResponse(w, r, t)
	}
	s, c := h.s, callerFrom(r.Context())
	var st chatStart
	o := s.chatOpening(w, r, c, t, "chat", "openai", &st)
	op, ok := s.open(o)
	if !ok {
		return chatturn.Opened{}, false
	}
	if op.dup != nil && op.earlier {
		if out, answered := s.replayChat(w, r, c, *op.dup, op.explicit); answered {
			return out, out.Run != nil || out.Reply != nil
		}
		o.lookFirst = false // too old to count (its key released): a new run
		if op, ok = s.open(o); !ok {
			return chatturn.Opened{}, false
		}
	}
	if op.dup != nil {
		// Another request with the same key got there first.
		out, answered := s.replayChat(w, r, c, *op.dup, op.explicit)
		if !answered {
			s.writeError(w, &apierror.RequestError{Kind: apierror.ErrDuplicateInProgress, Message: "an identical request is being answered; try again shortly"})
			return chatturn.Opened{}, false
		}
		return out, out.Run != nil || out.Reply != nil
	}
	if st.reply != nil {
		return chatturn.Opened{Reply: st.reply}, true
	}
	return chatturn.Opened{Run: op.ru, Token: st.token}, true
}

func (h serverChats) Owner(ctx context.Context) string { return ownerKey(callerFrom(ctx)) }

func (h serverChats) FindThread(ctx context.Context, id string) (turns.Thread, bool, error) {
	th, found, err := h.s.findThread(ctx, callerFrom(ctx), id)
	return turns.Thread{ID: th.ID, Internal: th.Internal}, found, err
}

func (h serverChats) PendingToken(ctx context.Context, thread string) (string, error) {
	return h.s.pendingToken(ctx, callerFrom(ctx), thread)
}

func (h serverChats) End(r *http.Request, ru chatturn.Run, followed bool, token string) (bool, *chatanswer.Reply, error) {
	return h.s.chatRunEnd(r, callerFrom(r.Context()), ru.(*run), followed, token)
}

func (h serverChats) Finish(r *http.Request, ru chatturn.Run, rd *chatanswer.Renderer) string {
	return h.s.finishApproval(callerFrom(r.Context()), ru.(*run), rd)
}

func (h serverChats) Settle(token string, reply *chatanswer.Reply) {
	h.s.approvals.Settle(token, reply)
}

func (h serverChats) ReleaseOnPanic(token string) {
	// recover works only here, in the deferred call itself.
	if v := recover(); v != nil {
		h.s.approvals.Settle(token, nil)
		panic(v)
	}
}

func (h serverChats) Remember(r *http.Request, t chatturn.Turn, ru chatturn.Run, answer string) {
	h.s.rememberTranscript(callerFrom(r.Context()), t, ru.(*run), answer)
}

func (h serverChats) Delivered(ru chatturn.Run) { h.s.delivered(ru.(*run)) }

func (h serverChats) WriteError(w http.ResponseWriter, err error) { h.s.writeError(w, err) }

func (h serverChats) PublicMessage(err error) string { return h.s.publicMessage(err) }
