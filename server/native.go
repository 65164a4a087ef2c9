package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/jsonreply"
	"github.com/capgraph/capgraph/server/internal/native"
	"github.com/capgraph/capgraph/server/internal/reqbody"
	"github.com/capgraph/capgraph/server/internal/turns"
	"github.com/capgraph/capgraph/state"
	"github.com/google/uuid"
)

// The native API: threads and runs as JSON, run events as SSE with ids for
// reconnection. The routes package native answers reach the server
// through serverNative; the rest are still Server's methods.

// serverNative is the server as the native API's package sees it
// (native.Threads, native.Runs): the caller is the request's. The runs
// it is handed back are the ones it gave (*run).
type serverNative struct{ s *Server }

var (
	_ native.Threads = serverNative{}
	_ native.Runs    = serverNative{}
)

func (n serverNative) FindThread(ctx context.Context, id string) (native.Thread, bool, error) {
	th, found, err := n.s.findThread(ctx, callerFrom(ctx), id)
	return native.Thread{Thread: turns.Thread{ID: th.ID, Internal: th.internal}, Metadata: th.Metadata}, found, err
}

func (n serverNative) ThreadState(ctx context.Context, thread string) (state.State, agent.RunStatus, error) {
	return n.s.cfg.Runner.State(ctx, thread)
}

func (n serverNative) WriteError(w http.ResponseWriter, err error) { n.s.writeError(w, err) }

func (s *Server) handleCreateThread(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	var req native.CreateThreadRequest
	body, err := reqbody.Read(r)
	if err == nil && len(bytes.TrimSpace(body)) > 0 {
		err = reqbody.Unmarshal(body, &req, true)
	}
	if err != nil {
		s.writeError(w, err)
		return
	}
	if req.ID == "" {
		req.ID = uuid.NewString()
	}
	if err := turns.CheckThreadID("id", req.ID); err != nil {
		s.writeError(w, err)
		return
	}
	if err := s.checkMetadata(req.Metadata); err != nil {
		s.writeError(w, err)
		return
	}
	th, created, err := s.openThread(r.Context(), c, req.ID, "native", req.Metadata)
	if err != nil {
		s.writeError(w, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	} else {
		s.fillStatus(r.Context(), &th)
	}
	jsonreply.JSON(w, status, th)
}

func (s *Server) handleListThreads(w http.ResponseWriter, r *http.Request) {
	p, err := s.pageOf(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	ths, next, err := s.listThreads(r.Context(), callerFrom(r.Context()), p)
	if err != nil {
		s.writeError(w, err)
		return
	}
	if ths == nil {
		ths = []apiThread{}
	}
	for i := range ths {
		s.fillStatus(r.Context(), &ths[i])
	}
	jsonreply.JSON(w, http.StatusOK, native.ListPage("threads", ths, next))
}

// fillStatus gives a thread the status of its latest run: running while a
// run of this process goes on, else the status of its latest checkpoint,
// read through the agent (one store read). A thread created but never run
// has none.
func (s *Server) fillStatus(ctx context.Context, th *apiThread) {
	if _, busy := s.runs.ActiveOn(th.internal); busy {
		th.Status = "running"
		return
	}
	if st, status, err := s.cfg.Runner.State(ctx, th.internal); err == nil && st.Turn.Number > 0 {
		th.Status = string(status)
	}
}

// thread finds the caller's thread named in the path, or answers 400 (an
// id no thread can have) or 404.
func (s *Server) thread(w http.ResponseWriter, r *http.Request) (caller, apiThread, bool) {
	c := callerFrom(r.Context())
	id := r.PathValue("thread")
	if err := turns.CheckThreadID("thread", id); err != nil {
		s.writeError(w, err)
		return c, apiThread{}, false
	}
	th, ok, err := s.findThread(r.Context(), c, id)
	if err != nil {
		s.writeError(w, err)
		return c, th, false
	}
	if !ok {
		s.writeError(w, &apierror.RequestError{Kind: apierror.ErrNotFound, Param: "thread", Message: "no such thread"})
	}
	return c, th, ok
}

func (s *Server) handleGetThread(w http.ResponseWriter, r *http.Request) {
	if _, th, ok := s.thread(w, r); ok {
		s.fillStatus(r.Context(), &th)
		jsonreply.JSON(w, http.StatusOK, th)
	}
}

func (s *Server) handleDeleteThread(w http.ResponseWriter, r *http.Request) {
	c, th, ok := s.thread(w, r)
	if !ok {
		return
	}
	if ru, busy := s.runs.ActiveOn(th.internal); busy {
		s.writeError(w, &apierror.RequestError{Kind: apierror.ErrRunInProgress, Message: "run " + ru.ID + " is still running; cancel it first"})
		return
	}
	// Deleting a thread the store does not have is no error.
	if err := s.cfg.Runner.DeleteThread(r.Context(), th.internal); err != nil && !errors.Is(err, agent.ErrUnknownThread) {
		s.writeError(w, err)
		return
	}
	if err := s.records.DeleteRuns(r.Context(), th.internal); err != nil {
		s.writeError(w, err)
		return
	}
	s.threads.delete(c, th.ID)
	s.counts.release(ownerKey(c))
	s.transcripts.Forget(th.internal)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleAnswerApproval(w http.ResponseWriter, r *http.Request) {
	c, th, ok := s.thread(w, r)
	if !ok {
		return
	}
	var req native.ApprovalRequest
	if err := reqbody.DecodeStrict(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	if req.ApprovalID == "" {
		s.writeError(w, badRequest("approval_id", "required"))
		return
	}
	if len(req.Text) > s.cfg.MaxMessageBytes {
		s.writeError(w, badRequest("text", "%d bytes exceed the limit of %d", len(req.Text), s.cfg.MaxMessageBytes))
		return
	}
	if req.Approved == nil && strings.TrimSpace(req.Text) == "" {
		s.writeError(w, badRequest("approved", "give approved (true/false) or text"))
		return
	}
	ans := agent.Answer{ApprovalID: req.ApprovalID, Text: req.Text, Approved: req.Approved, Plan: req.Plan, By: callerName(c)}
	sp := runSpec{c: c, source: "native", clientThread: th.ID, thread: th.internal, kind: kindAnswer, answer: &ans}
	// An answer is queued when the approval is pending beside an answer
	// being carried out (admitAnswer), also when that answer's run took
	// the thread a moment ago.
	queue := false
	op, ok := s.open(opening{w: w, r: r, c: c, scope: "approval:" + th.internal, lookFirst: true, request: sp.requestDigest(),
		spec: func(ctx context.Context, key string) (*runSpec, error) {
			// Only an approval that is pending can be answered, so a
			// repeated answer cannot resume (and execute) twice.
			beside, q, err := s.admitAnswer(ctx, th, req.ApprovalID)
			if err != nil {
				return nil, err
			}
			sp.beside, sp.key, queue = beside, key, q
			if queue {
				return nil, nil
			}
			return &sp, nil
		},
		failed: func(err error) bool {
			var re *apierror.RequestError
			if errors.As(err, &re) && errors.Is(re.Kind, apierror.ErrRunInProgress) {
				sp.beside, queue, _ = s.queueable(r.Context(), th.internal, req.ApprovalID)
			}
			return queue
		}})
	switch {
	case queue:
		s.queueNative(w, r, req.Stream, sp)
	case ok:
		s.answerOpened(w, r, req.Stream, op)
	}
}

// admitAnswer decides whether an answer to approval id may be carried
// out: now (the thread waits for it; beside are the approvals pending
// with it), or queued (it is pending beside an answer being carried out).
// Otherwise the error says why not (checkPending).
func (s *Server) admitAnswer(ctx context.Context, th apiThread, id string) (beside []string, queue bool, err error) {
	err = s.checkPending(ctx, th.internal, id)
	if err == nil {
		if pl := s.features.approvals; pl != nil {
			aps, perr := pl.PendingApprovals(ctx, th.internal)
			if perr != nil {
				return nil, false, perr
			}
			for _, ap := range aps {
				if ap.ID != id {
					beside = append(beside, ap.ID)
				}
			}
		}
		return beside, false, nil
	}
	var re *apierror.RequestError
	if !errors.As(err, &re) {
		return nil, false, err
	}
	// Queued only while a run goes on (the thread stands between two
	// steps), for an approval not answered already.
	st, status, serr := s.cfg.Runner.State(ctx, th.internal)
	if _, busy := s.runs.ActiveOn(th.internal); serr != nil || !busy && status != agent.RunCanceled ||
		slices.ContainsFunc(st.Turn.Approvals, func(d state.ApprovalDecision) bool { return d.ID == id }) {
		return nil, false, err
	}
	beside, queue, qerr := s.queueable(ctx, th.internal, id)
	if qerr != nil {
		return nil, false, qerr
	}
	if !queue {
		return nil, false, err
	}
	return beside, true, nil
}

// queueNative records a queued answer and acknowledges it: 202 with its
// run, or its stream, which follows the run once it starts.
func (s *Server) queueNative(w http.ResponseWriter, r *http.Request, stream bool, sp runSpec) {
	rec, dup, err := s.queueAnswer(r.Context(), sp)
	if err != nil {
		s.writeError(w, err)
		return
	}
	if dup != nil {
		if err := sameRequest(*dup, sp.requestDigest()); err != nil {
			s.writeError(w, err)
			return
		}
		s.replayNative(w, r, stream, *dup)
		return
	}
	if !native.WantsStream(r, stream) {
		jsonreply.JSON(w, http.StatusAccepted, map[string]any{"run": recordInfo(rec), "queued": true,
			"events_url": threadPath(rec.Labels[labelThread], "runs", rec.ID, "events")})
		return
	}
	// The stream's first byte acknowledges the answer (it is recorded);
	// its events follow once the run it waits for has ended.
	st := s.nativeStreams()
	sse := st.Start(w)
	sse.Frame("", "queued", map[string]any{"run_id": rec.ID, "thread_id": rec.Labels[labelThread]})
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if ru, ok := s.runs.ByID(rec.ID); ok {
			st.Follow(r, sse, ru, 0)
			return
		}
		if ru := s.mirror(r.Context(), sp.c, rec); ru != nil {
			st.Follow(r, sse, ru, 0)
			return
		}
		if cur, err := s.records.GetRun(r.Context(), rec.ID); err == nil && cur.Status.Terminal() {
			st.End(sse, recordInfo(cur))
			return
		}
		if sse.Idle(s.cfg.Heartbeat) {
			sse.Frame("", "heartbeat", "{}")
		}
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
	}
}

// checkPending makes sure the thread waits for this approval (one of the
// approvals it waits for), so a repeated answer cannot resume (and
// execute) twice: once answered, the approval is no longer pending.
func (s *Server) checkPending(ctx context.Context, thread, id string) error {
	if _, busy := s.runs.ActiveOn(thread); busy {
		return &apierror.RequestError{Kind: apierror.ErrRunInProgress, Message: "a run is in progress on this thread"}
	}
	st, status, err := s.cfg.Runner.State(ctx, thread)
	if errors.Is(err, agent.ErrUnknownThread) {
		return &apierror.RequestError{Kind: apierror.ErrConflict, Param: "approval_id", Message: "the thread has no pending approval"}
	}
	if err != nil {
		return err
	}
	if i := slices.IndexFunc(st.Turn.Approvals, func(d state.ApprovalDecision) bool { return d.ID == id }); i >= 0 {
		// Answered before (here or on another replica): say so, rather
		// than only that it is not pending.
		d := st.Turn.Approvals[i]
		verdict := "rejected"
		if d.Approved {
			verdict = "approved"
		}
		if d.By != "" {
			verdict += " by " + d.By
		}
		return &apierror.RequestError{Kind: apierror.ErrConflict, Param: "approval_id", Message: fmt.Sprintf("approval %q was already answered (%s at %s); an answer is carried out once",
			id, verdict, d.At.UTC().Format(time.RFC3339))}
	}
	if status != agent.RunInterrupted {
		return &apierror.RequestError{Kind: apierror.ErrConflict, Param: "approval_id", Message: fmt.Sprintf("approval %q is not pending on this thread (status %s)", id, status)}
	}
	// Any of the approvals the run waits for (concurrent steps each ask):
	// they are answered independently, in any order.
	if !s.stillPendingID(ctx, thread, id) {
		return &apierror.RequestError{Kind: apierror.ErrConflict, Param: "approval_id", Message: fmt.Sprintf("approval %q is not pending on this thread", id)}
	}
	return nil
}

// answerOpened answers a request with its run: the run it started, or
// the one a request with the same key started before.
func (s *Server) answerOpened(w http.ResponseWriter, r *http.Request, stream bool, op opened) {
	if op.dup != nil {
		s.replayNative(w, r, stream, *op.dup)
		return
	}
	s.answerNative(w, r, stream, op.ru)
}

func (s *Server) answerNative(w http.ResponseWriter, r *http.Request, stream bool, ru *run) {
	if native.WantsStream(r, stream) {
		s.streamRun(w, r, ru, 0)
		return
	}
	jsonreply.JSON(w, http.StatusAccepted, map[string]any{"run": ru.Info(), "events_url": threadPath(ru.ClientThread, "runs", ru.ID, "events")})
}

// replayNative answers a repeated request with the first request's run:
// joined while it goes on in this process, else as its record says.
func (s *Server) replayNative(w http.ResponseWriter, r *http.Request, stream bool, rec runstore.Record) {
	w.Header().Set(turns.HeaderReplayed, "true")
	if ru, ok := s.runs.ByID(rec.ID); ok {
		s.answerNative(w, r, stream, ru)
		return
	}
	if native.WantsStream(r, stream) {
		s.streamRecord(w, rec)
		return
	}
	jsonreply.JSON(w, http.StatusAccepted, map[string]any{"run": recordInfo(rec),
		"events_url": threadPath(rec.Labels[labelThread], "runs", rec.ID, "events")})
}

// FindRun finds the caller's run id on its thread thread: a run of this
// process, else its record.
func (n serverNative) FindRun(ctx context.Context, thread, id string) (native.Found, bool, error) {
	s, c := n.s, callerFrom(ctx)
	if ru, ok := s.runs.Get(ownerKey(c), id); ok {
		if ru.ClientThread != thread {
			return native.Found{}, false, nil
		}
		return native.Found{Live: ru}, true, nil
	}
	if len(id) > 64 {
		return native.Found{}, false, nil
	}
	rec, err := s.records.GetRun(ctx, id)
	if errors.Is(err, runstore.ErrNotFound) {
		return native.Found{}, false, nil
	}
	if err != nil {
		return native.Found{}, false, err
	}
	if rec.Thread != internalThreadID(c, thread) || !recordOf(c, rec) {
		return native.Found{}, false, nil
	}
	return native.Found{Record: rec, Info: recordInfo(rec)}, true, nil
}

// recordOf reports whether c made the recorded run.
func recordOf(c caller, rec runstore.Record) bool {
	l := rec.Labels
	return l[labelOwner] == c.Principal.Name && l[labelTenant] == c.Principal.Tenant && l[labelUser] == c.User
}

func (n serverNative) Mirror(ctx context.Context, rec runstore.Record) native.Run {
	if ru := n.s.mirror(ctx, callerFrom(ctx), rec); ru != nil {
		return ru
	}
	return nil
}

func (n serverNative) Cancel(ctx context.Context, ru native.Run) error {
	return n.s.cancelAnywhere(ctx, ru.(*run))
}

// ListRuns lists the thread's runs from their records, newest first.
func (n serverNative) ListRuns(ctx context.Context, th turns.Thread, limit int, before int64) ([]native.RunInfo, string, error) {
	s, c := n.s, callerFrom(ctx)
	f := runstore.Filter{Thread: th.Internal, Limit: limit, Before: before,
		Labels: map[string]string{labelOwner: c.Principal.Name, labelTenant: c.Principal.Tenant, labelUser: c.User}}
	recs, err := s.records.ListRuns(ctx, f)
	if err != nil {
		return nil, "", err
	}
	out := make([]native.RunInfo, 0, len(recs))
	for _, rec := range recs {
		if ru, ok := s.runs.ByID(rec.ID); ok {
			out = append(out, ru.Info())
			continue
		}
		out = append(out, recordInfo(rec))
	}
	next := ""
	if len(recs) == limit {
		next = strconv.FormatInt(recs[len(recs)-1].Seq, 10)
	}
	return out, next, nil
}

func (n serverNative) Page(r *http.Request) (int, string, error) {
	p, err := n.s.pageOf(r)
	return p.limit, p.cursor, err
}

func (n serverNative) RecordInfo(rec runstore.Record) native.RunInfo { return recordInfo(rec) }

// nativeStreams is how the native API writes this server's event streams.
func (s *Server) nativeStreams() native.Streams {
	return native.Streams{Now: s.cfg.Now, WriteTimeout: s.cfg.StreamWriteTimeout, Heartbeat: s.cfg.Heartbeat, PublicMessage: s.publicMessage}
}

// streamRecord answers an event stream request for a run known only from
// its record: the ending frames, or 409 while it has not ended.
func (s *Server) streamRecord(w http.ResponseWriter, rec runstore.Record) {
	if !rec.Status.Terminal() {
		s.writeError(w, &apierror.RequestError{Kind: apierror.ErrConflict, Param: "run", Message: "the run is not running in this server process (it is being recovered, or runs on another replica); try again shortly"})
		return
	}
	st := s.nativeStreams()
	st.End(st.Start(w), recordInfo(rec))
}

// streamRun writes the run's events as SSE (native.Streams.Follow).
func (s *Server) streamRun(w http.ResponseWriter, r *http.Request, ru *run, after int) {
	st := s.nativeStreams()
	st.Follow(r, st.Start(w), ru, after)
}
