package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/approvaltoken"
	"github.com/capgraph/capgraph/server/internal/chatanswer"
	"github.com/capgraph/capgraph/server/internal/chatturn"
	"github.com/capgraph/capgraph/server/internal/jsonreply"
	"github.com/capgraph/capgraph/server/internal/turns"
)

// SDKs retry a Chat Completions request that failed or timed out (openai
// and the AI SDK on 408, 409, 429, 5xx and dropped connections; LangChain
// for up to a minute). A retry repeats the conversation byte for byte, so
// the conversation names the run: a request repeating one the same caller
// sent less than Config.DuplicateWindow after its run ended, or while it
// still runs, is answered from that run instead of starting a second
// (docs/reliability.md). An Idempotency-Key header names the run
// explicitly, for as long as its record is kept.

// duplicateRetryAfter is the Retry-After of apierror.ErrDuplicateInProgress.
const duplicateRetryAfter = 2

// chatOpening is the opening of a chat request (Chat Completions with
// scope "chat", Responses with "responses"; source names the protocol in
// the thread's metadata). The run's key is its Idempotency-Key, else the
// conversation itself (model, forwarded chat id, every user and assistant
// message) unless the window is off or the request answers an approval
// (an approval token is answered once by its own bookkeeping). The spec
// (chatSpec) fills st; a token it claimed is settled when the run does
// not start.
func (s *Server) chatOpening(w http.ResponseWriter, r *http.Request, c caller, t chatturn.Turn, scope, source string, st *chatStart) opening {
	implicit := ""
	if _, ok := approvaltoken.Find(t.LastAssistant); s.cfg.DuplicateWindow >= 0 && !ok && t.Token == "" {
		implicit = t.ModelID + "\x00" + c.ChatID + "\x00" + t.Thread + "\x00" + strconv.FormatBool(t.Stream) + "\x00" + transcriptDigest(c, t.Msgs)
	}
	return opening{w: w, r: r, c: c, scope: scope, implicit: implicit, lookFirst: true, request: chatDigest(c, t),
		spec: func(ctx context.Context, _ string) (*runSpec, error) {
			sp, started, err := s.chatSpec(ctx, c, t, source)
			*st = started
			return sp, err
		},
		refused: func() {
			if st.token != "" {
				s.approvals.Settle(st.token, nil)
			}
		}}
}

// chatDigest is what a chat request asks (runSpec.request): the conversation
// chatKey derives an implicit key from.
func chatDigest(c caller, t chatturn.Turn) string {
	return digestHex(t.ModelID, c.ChatID, t.Thread, strconv.FormatBool(t.Stream), transcriptDigest(c, t.Msgs))
}

// replayChat answers a repeated chat request from the first request's run
// rec (the same request: opening checked it): the run to join, or its
// answer to send (out), or the error written; answered is false when rec
// is too old to count (its key is released, and the caller starts a new
// run).
func (s *Server) replayChat(w http.ResponseWriter, r *http.Request, c caller, rec runstore.Record, explicit bool) (out chatturn.Opened, answered bool) {
	if ru := s.joinable(r.Context(), c, rec); ru != nil {
		// Join the run: the answer as it comes.
		w.Header().Set(turns.HeaderReplayed, "true")
		return chatturn.Opened{Run: ru}, true
	}
	if !rec.Status.Terminal() {
		w.Header().Set("Retry-After", strconv.Itoa(duplicateRetryAfter))
		s.writeError(w, &apierror.RequestError{Kind: apierror.ErrDuplicateInProgress, Message: "an identical request's run (" + rec.ID + ") is still going on; try again shortly for its answer"})
		return chatturn.Opened{}, true
	}
	var res runResult
	if len(rec.Result) == 0 || json.Unmarshal(rec.Result, &res) != nil ||
		!explicit && s.cfg.Now().Sub(rec.Updated) > s.cfg.DuplicateWindow {
		// Not a retry of that run: a new question that happens to repeat
		// an old conversation.
		_, err := s.records.UpdateRun(r.Context(), rec.ID, runstore.Update{From: []runstore.Status{rec.Status}, Status: rec.Status, ReleaseKey: true})
		if err != nil && !errors.Is(err, runstore.ErrConflict) {
			s.cfg.Logger.Warn("releasing a run key", "run", rec.ID, "error", err)
		}
		return chatturn.Opened{}, false
	}
	w.Header().Set(turns.HeaderReplayed, "true")
	if f := res.Failure; f != nil {
		typ := "server_error"
		if f.Status < 500 {
			typ = "invalid_request_error"
		}
		code := f.Code
		w.Header().Set("x-should-retry", "false")
		jsonreply.JSON(w, f.Status, map[string]any{"error": apierror.Body{Message: f.Message, Type: typ, Code: &code}})
		return chatturn.Opened{}, true
	}
	out = chatturn.Opened{Reply: &chatanswer.Reply{Content: res.Content, Reasoning: res.Reasoning}, RunID: rec.ID, RunStarted: rec.Created}
	if res.Usage != nil {
		out.Usage = *res.Usage
	}
	if !explicit {
		out.Delivered = func() { s.releaseKey(rec.ID, rec.Status) } // the retry got the answer
	}
	return out, true
}
