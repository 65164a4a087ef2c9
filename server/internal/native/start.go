package native

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/jsonreply"
	"github.com/capgraph/capgraph/server/internal/reqbody"
	"github.com/capgraph/capgraph/server/internal/turns"
)

// startRun starts a turn on the path's thread: 202 with the run, or its
// event stream; a repeated request (the same Idempotency-Key) gets the
// first request's run.
func (h handlers) startRun(w http.ResponseWriter, r *http.Request) {
	th, ok := h.thread(w, r)
	if !ok {
		return
	}
	var req StartRunRequest
	if err := reqbody.DecodeStrict(r, &req); err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	if strings.TrimSpace(req.Input) == "" {
		h.Threads.WriteError(w, apierror.BadRequest("input", "required"))
		return
	}
	op, ok := h.Turns.Open(turns.Opening{W: w, R: r, Scope: "native:" + th.Internal,
		Spec: func(ctx context.Context, _ string) (*turns.Spec, error) {
			treq, err := h.Turns.OpenTurn(ctx, turns.TurnOpening{Field: "input", Input: req.Input, Options: req.Options, Source: "native", ClientThread: th.ID, Thread: th.Internal, ClientMeta: th.Metadata})
			if err != nil {
				return nil, err
			}
			return &turns.Spec{Source: "native", ClientThread: th.ID, Thread: th.Internal, Turn: &treq}, nil
		}})
	if !ok {
		return
	}
	if op.Dup != nil {
		h.replay(w, r, req.Stream, *op.Dup)
		return
	}
	h.answer(w, r, req.Stream, op.Run.(Run))
}

// answer answers a request with its run: 202 with the run, or its event
// stream.
func (h handlers) answer(w http.ResponseWriter, r *http.Request, stream bool, ru Run) {
	if WantsStream(r, stream) {
		h.Streams.Follow(r, h.Streams.Start(w), ru, 0)
		return
	}
	info := ru.Info()
	jsonreply.JSON(w, http.StatusAccepted, map[string]any{"run": info, "events_url": EventsPath(info)})
}

// replay answers a repeated request with the first request's run: joined
// while it goes on in this process, else as its record says.
func (h handlers) replay(w http.ResponseWriter, r *http.Request, stream bool, rec runstore.Record) {
	w.Header().Set(turns.HeaderReplayed, "true")
	if ru, ok := h.Turns.RunByID(rec.ID); ok {
		h.answer(w, r, stream, ru.(Run))
		return
	}
	info := h.Runs.RecordInfo(rec)
	if WantsStream(r, stream) {
		if !info.Finished {
			h.Threads.WriteError(w, notHere)
			return
		}
		h.Streams.End(h.Streams.Start(w), info)
		return
	}
	jsonreply.JSON(w, http.StatusAccepted, map[string]any{"run": info, "events_url": EventsPath(info)})
}

// EventsPath is the path of a run's event stream.
func EventsPath(info RunInfo) string {
	return "/api/threads/" + url.PathEscape(info.Thread) + "/runs/" + url.PathEscape(info.ID) + "/events"
}
