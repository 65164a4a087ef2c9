package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/chatanswer"
	"github.com/capgraph/capgraph/server/internal/chatturn"
	"github.com/capgraph/capgraph/server/internal/turns"
	"github.com/capgraph/capgraph/state"
)

// The OpenAI Responses API's handler is its package's
// (server/internal/responses); this is the server's part of a Responses
// turn behind chatturn.Chats: its opening and a repeat's replay.

// openResponse opens the request's run. A repeated request (an SDK's
// retry) is answered by the first request's run: joined while it goes
// on, else from its record. false when the request has been answered.
func (s *Server) openResponse(w http.ResponseWriter, r *http.Request, t chatturn.Turn) (chatturn.Opened, bool) {
	c := callerFrom(r.Context())
	var st chatStart
	o := s.chatOpening(w, r, c, t, "responses", "responses", &st)
	op, ok := s.open(o)
	if !ok {
		return chatturn.Opened{}, false
	}
	if op.dup == nil {
		return st.opened(op.ru), true
	}
	out, again := s.replayResponse(w, r, op.dup, op.explicit)
	if again {
		o.lookFirst = false // too old to count (its key released): a new run
		if op, ok = s.open(o); !ok {
			return chatturn.Opened{}, false
		}
		if op.dup == nil {
			out = st.opened(op.ru)
			return out, out.Run != nil || out.Reply != nil
		}
		out, _ = s.replayResponse(w, r, op.dup, op.explicit)
	}
	return out, out.Run != nil || out.Reply != nil
}

// opened is how a chat turn started, for its handler: ru the run started
// (nil: none).
func (st chatStart) opened(ru *run) chatturn.Opened {
	out := chatturn.Opened{Token: st.token, Reply: st.reply, ClientThread: st.clientThread, Usage: st.usage}
	if ru != nil {
		out.Run = ru
	}
	return out
}

// pendingToken is the approval token of the newest approval the thread
// waits for, or "".
func (s *Server) pendingToken(ctx context.Context, c caller, thread string) (string, error) {
	pending, err := s.pendingApprovals(ctx, thread)
	if err != nil || len(pending) == 0 {
		return "", err
	}
	newest := slices.MaxFunc(pending, func(a, b state.Approval) int { return a.Created.Compare(b.Created) })
	return approvalToken(ownerKey(c), thread, newest), nil
}

// replayResponse is replayChat for the Responses API: the first request's
// run to follow (out.Run) while it goes on here, its answer (out.Reply)
// once it has ended, or again when rec is too old to count (its key
// released: start a new run). Otherwise it has answered (409 while the
// run goes on elsewhere) and out is empty.
func (s *Server) replayResponse(w http.ResponseWriter, r *http.Request, rec *runstore.Record, explicit bool) (out chatturn.Opened, again bool) {
	if ru := s.joinable(r.Context(), callerFrom(r.Context()), *rec); ru != nil {
		w.Header().Set(turns.HeaderReplayed, "true")
		return chatturn.Opened{Run: ru, ClientThread: ru.ClientThread}, false
	}
	if !rec.Status.Terminal() {
		w.Header().Set("Retry-After", strconv.Itoa(duplicateRetryAfter))
		s.writeError(w, &apierror.RequestError{Kind: apierror.ErrDuplicateInProgress, Message: "an identical request's run (" + rec.ID + ") is still going on; try again shortly for its answer"})
		return chatturn.Opened{}, false
	}
	var res runResult
	if len(rec.Result) == 0 || json.Unmarshal(rec.Result, &res) != nil || res.Failure != nil ||
		!explicit && s.cfg.Now().Sub(rec.Updated) > s.cfg.DuplicateWindow {
		_, err := s.records.UpdateRun(r.Context(), rec.ID, runstore.Update{From: []runstore.Status{rec.Status}, Status: rec.Status, ReleaseKey: true})
		if err != nil && !errors.Is(err, runstore.ErrConflict) {
			s.cfg.Logger.Warn("releasing a run key", "run", rec.ID, "error", err)
		}
		return chatturn.Opened{}, true
	}
	w.Header().Set(turns.HeaderReplayed, "true")
	out = chatturn.Opened{Reply: &chatanswer.Reply{Content: res.Content, Reasoning: res.Reasoning}, ClientThread: rec.Labels[labelThread]}
	if res.Usage != nil {
		out.Usage = *res.Usage
	}
	if !explicit {
		out.Delivered = func() { s.releaseKey(rec.ID, rec.Status) } // its key is released once the answer is delivered
	}
	return out, false
}
