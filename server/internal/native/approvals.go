package native

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/jsonreply"
	"github.com/capgraph/capgraph/server/internal/reqbody"
	"github.com/capgraph/capgraph/server/internal/turns"
)

// Approvals is what answering an approval needs of the server beyond
// opening its run: whether the answer may be carried out now or waits
// for the answer being carried out beside it (concurrent steps each ask,
// and are answered independently, in any order). The caller is the
// request's (its context's).
type Approvals interface {
	// Admit decides whether the answer to approval id may be carried out
	// now (beside: the approvals pending with it) or queued (it is
	// pending beside an answer being carried out); otherwise the error
	// says why not (not pending, answered already, 409).
	Admit(ctx context.Context, th Thread, id string) (beside []string, queue bool, err error)
	// Queueable decides, once a run took the thread a moment ago, whether
	// the answer to id may wait for it.
	Queueable(ctx context.Context, th Thread, id string) (beside []string, queue bool)
	// Queue records a queued answer under the request's key: its run,
	// or the record of the run a request with the same key made before
	// (dup), checked to come from the same request.
	Queue(ctx context.Context, sp turns.Spec, key string) (_ RunInfo, dup *runstore.Record, _ error)
}

// answerApproval answers an approval a run waits for (POST
// /api/threads/{thread}/approval): 202 with the run that carries the
// answer out, or its event stream. Only an approval that is pending can
// be answered, so a repeated answer cannot resume (and execute) twice; a
// repeat with the same Idempotency-Key gets the first request's run.
func (h handlers) answerApproval(w http.ResponseWriter, r *http.Request) {
	th, ok := h.thread(w, r)
	if !ok {
		return
	}
	var req ApprovalRequest
	if err := reqbody.DecodeStrict(r, &req); err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	if req.ApprovalID == "" {
		h.Threads.WriteError(w, apierror.BadRequest("approval_id", "required"))
		return
	}
	if len(req.Text) > h.MaxMessageBytes {
		h.Threads.WriteError(w, apierror.BadRequest("text", "%d bytes exceed the limit of %d", len(req.Text), h.MaxMessageBytes))
		return
	}
	if req.Approved == nil && strings.TrimSpace(req.Text) == "" {
		h.Threads.WriteError(w, apierror.BadRequest("approved", "give approved (true/false) or text"))
		return
	}
	ans := agent.Answer{ApprovalID: req.ApprovalID, Text: req.Text, Approved: req.Approved, Plan: req.Plan, By: h.Turns.Who(r.Context())}
	sp := turns.Spec{Source: "native", ClientThread: th.ID, Thread: th.Internal, Answer: &ans}
	// An answer is queued when the approval is pending beside an answer
	// being carried out, also when that answer's run took the thread a
	// moment ago (Failed).
	queue, key := false, ""
	op, ok := h.Turns.Open(turns.Opening{W: w, R: r, Scope: "approval:" + th.Internal, LookFirst: &sp,
		Spec: func(ctx context.Context, k string) (*turns.Spec, error) {
			beside, q, err := h.Approvals.Admit(ctx, th, req.ApprovalID)
			if err != nil {
				return nil, err
			}
			sp.Beside, key, queue = beside, k, q
			if queue {
				return nil, nil
			}
			return &sp, nil
		},
		Failed: func(err error) bool {
			var re *apierror.RequestError
			if errors.As(err, &re) && errors.Is(re.Kind, apierror.ErrRunInProgress) {
				sp.Beside, queue = h.Approvals.Queueable(r.Context(), th, req.ApprovalID)
			}
			return queue
		}})
	switch {
	case queue:
		h.queue(w, r, req.Stream, sp, key)
	case !ok:
	case op.Dup != nil:
		h.replay(w, r, req.Stream, *op.Dup)
	default:
		h.answer(w, r, req.Stream, op.Run.(Run))
	}
}

// queue records a queued answer and acknowledges it: 202 with its run,
// or its stream, which follows the run once it starts.
func (h handlers) queue(w http.ResponseWriter, r *http.Request, stream bool, sp turns.Spec, key string) {
	info, dup, err := h.Approvals.Queue(r.Context(), sp, key)
	if err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	if dup != nil {
		h.replay(w, r, stream, *dup)
		return
	}
	if !WantsStream(r, stream) {
		jsonreply.JSON(w, http.StatusAccepted, map[string]any{"run": info, "queued": true, "events_url": EventsPath(info)})
		return
	}
	// The stream's first byte acknowledges the answer (it is recorded);
	// its events follow once the run it waits for has ended.
	sse := h.Streams.Start(w)
	sse.Frame("", "queued", map[string]any{"run_id": info.ID, "thread_id": info.Thread})
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		f, found, err := h.Runs.FindRun(r.Context(), info.Thread, info.ID)
		if err == nil && found {
			ru := f.Live
			if ru == nil {
				ru = h.Runs.Mirror(r.Context(), f.Record)
			}
			if ru != nil {
				h.Streams.Follow(r, sse, ru, 0)
				return
			}
			if f.Info.Finished {
				h.Streams.End(sse, f.Info)
				return
			}
		}
		if sse.Idle(h.Streams.Heartbeat) {
			sse.Frame("", "heartbeat", "{}")
		}
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
	}
}
