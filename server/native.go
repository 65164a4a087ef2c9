package server

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/state"
	"github.com/google/uuid"
)

// The native API: threads and runs as JSON, run events as SSE with ids for
// reconnection.

type createThreadRequest struct {
	ID       string            `json:"id"`
	Metadata map[string]string `json:"metadata"`
}

const maxThreadIDLen = 200

func (s *Server) handleCreateThread(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	var req createThreadRequest
	if r.ContentLength != 0 {
		if err := decodeJSON(r, &req); err != nil {
			s.writeError(w, err)
			return
		}
	}
	if req.ID == "" {
		req.ID = uuid.NewString()
	}
	if len(req.ID) > maxThreadIDLen || strings.ContainsAny(req.ID, "/\x00") {
		s.writeError(w, badRequest("id", "must be at most %d characters without '/'", maxThreadIDLen))
		return
	}
	th, created, err := s.openThread(r.Context(), c, req.ID, req.Metadata)
	if err != nil {
		s.writeError(w, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, th)
}

func (s *Server) handleListThreads(w http.ResponseWriter, r *http.Request) {
	ths, err := s.listThreads(r.Context(), callerFrom(r.Context()))
	if err != nil {
		s.writeError(w, err)
		return
	}
	if ths == nil {
		ths = []Thread{}
	}
	for i := range ths {
		s.fillStatus(r.Context(), &ths[i])
	}
	writeJSON(w, http.StatusOK, map[string]any{"threads": ths})
}

// fillStatus gives a thread no run of this process has touched (known only
// from the store: a restart since, or another replica ran it) the status of
// its latest checkpoint, read through the agent; one store read each. A
// thread created but never run has no status.
func (s *Server) fillStatus(ctx context.Context, th *Thread) {
	if th.Status != "" {
		return
	}
	if _, st, err := s.cfg.Runner.State(ctx, th.internal); err == nil {
		th.Status = string(st)
	}
}

// thread finds the caller's thread named in the path, or answers 404.
func (s *Server) thread(w http.ResponseWriter, r *http.Request) (caller, Thread, bool) {
	c := callerFrom(r.Context())
	th, ok, err := s.findThread(r.Context(), c, r.PathValue("thread"))
	if err != nil {
		s.writeError(w, err)
		return c, th, false
	}
	if !ok {
		s.writeError(w, &RequestError{Kind: ErrNotFound, Param: "thread", Message: "no such thread"})
	}
	return c, th, ok
}

func (s *Server) handleGetThread(w http.ResponseWriter, r *http.Request) {
	if _, th, ok := s.thread(w, r); ok {
		s.fillStatus(r.Context(), &th)
		writeJSON(w, http.StatusOK, th)
	}
}

func (s *Server) handleDeleteThread(w http.ResponseWriter, r *http.Request) {
	c, th, ok := s.thread(w, r)
	if !ok {
		return
	}
	if ru, busy := s.runs.activeOn(th.internal); busy {
		s.writeError(w, &RequestError{Kind: ErrRunInProgress, Message: "run " + ru.ID + " is still running; cancel it first"})
		return
	}
	// The agent may hold checkpoints of this thread from before a restart
	// even when no run happened since: always delete. An error for a thread
	// that never ran here most likely means there was nothing to delete.
	if err := s.cfg.Runner.DeleteThread(r.Context(), th.internal); err != nil && th.Status != "" {
		s.writeError(w, err)
		return
	}
	s.threads.delete(c, th.ID)
	s.transcripts.forget(th.internal)
	w.WriteHeader(http.StatusNoContent)
}

// threadState is the state route's answer.
type threadState struct {
	Thread string          `json:"thread_id"`
	Status agent.RunStatus `json:"status,omitempty"`
	State  *state.State    `json:"state"`
}

func (s *Server) loadState(w http.ResponseWriter, r *http.Request) (threadState, bool) {
	_, th, ok := s.thread(w, r)
	if !ok {
		return threadState{}, false
	}
	out := threadState{Thread: th.ID}
	st, status, err := s.cfg.Runner.State(r.Context(), th.internal)
	if err != nil {
		if th.Status == "" {
			// No run since the server started, and the agent has no
			// checkpoint either: a new thread without state.
			return out, true
		}
		s.writeError(w, err)
		return threadState{}, false
	}
	out.Status, out.State = status, &st
	return out, true
}

func (s *Server) handleThreadState(w http.ResponseWriter, r *http.Request) {
	if ts, ok := s.loadState(w, r); ok {
		writeJSON(w, http.StatusOK, ts)
	}
}

func (s *Server) handleThreadPlan(w http.ResponseWriter, r *http.Request) {
	ts, ok := s.loadState(w, r)
	if !ok {
		return
	}
	var plan *state.Plan
	var pending *state.Approval
	if ts.State != nil {
		plan, pending = ts.State.Turn.Plan, ts.State.Turn.PendingApproval
	}
	writeJSON(w, http.StatusOK, map[string]any{"thread_id": ts.Thread, "plan": plan, "pending_approval": pending})
}

type startRunRequest struct {
	Input string `json:"input"`
	// Options may only tighten the agent's configured options (403
	// otherwise, unless the key may raise the setting).
	Options *agent.TurnOptions `json:"options"`
	// Stream answers with the run's SSE event stream instead of 202.
	Stream bool `json:"stream"`
}

func wantsStream(r *http.Request, flag bool) bool {
	return flag || strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

func (s *Server) handleStartRun(w http.ResponseWriter, r *http.Request) {
	c, th, ok := s.thread(w, r)
	if !ok {
		return
	}
	var req startRunRequest
	if err := decodeJSON(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	if strings.TrimSpace(req.Input) == "" {
		s.writeError(w, badRequest("input", "required"))
		return
	}
	if len(req.Input) > s.cfg.MaxMessageBytes {
		s.writeError(w, badRequest("input", "%d bytes exceed the limit of %d", len(req.Input), s.cfg.MaxMessageBytes))
		return
	}
	treq := s.turnRequest(c, th.internal, req.Input, req.Options, s.turnMetadata(c, "native", th.ID, th.Metadata))
	if err := s.checkTurn(treq); err != nil {
		s.writeError(w, err)
		return
	}
	s.startNative(w, r, c, th, req.Stream, func(ctx context.Context) iter.Seq2[agent.Event, error] {
		return s.cfg.Runner.Run(ctx, treq)
	})
}

type approvalRequest struct {
	ApprovalID string      `json:"approval_id"`
	Approved   *bool       `json:"approved"`
	Text       string      `json:"text"`
	Plan       *state.Plan `json:"plan"`
	Stream     bool        `json:"stream"`
}

func (s *Server) handleAnswerApproval(w http.ResponseWriter, r *http.Request) {
	c, th, ok := s.thread(w, r)
	if !ok {
		return
	}
	var req approvalRequest
	if err := decodeJSON(r, &req); err != nil {
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
	if err := s.checkPending(r.Context(), th, req.ApprovalID); err != nil {
		s.writeError(w, err)
		return
	}
	ans := agent.Answer{ApprovalID: req.ApprovalID, Text: req.Text, Approved: req.Approved, Plan: req.Plan, By: callerName(c)}
	s.startNative(w, r, c, th, req.Stream, func(ctx context.Context) iter.Seq2[agent.Event, error] {
		return s.cfg.Runner.Resume(ctx, th.internal, ans)
	})
}

// checkPending makes sure the thread waits for this approval, so a
// repeated answer cannot resume (and execute) twice: once answered, the
// thread is no longer interrupted.
func (s *Server) checkPending(ctx context.Context, th Thread, id string) error {
	if _, busy := s.runs.activeOn(th.internal); busy {
		return &RequestError{Kind: ErrRunInProgress, Message: "a run is in progress on this thread"}
	}
	st, status, err := s.cfg.Runner.State(ctx, th.internal)
	if err != nil && th.Status == "" {
		return &RequestError{Kind: ErrConflict, Param: "approval_id", Message: "the thread has no pending approval"}
	}
	if err != nil {
		return err
	}
	if status != agent.RunInterrupted {
		return &RequestError{Kind: ErrConflict, Param: "approval_id", Message: fmt.Sprintf("approval %q is not pending on this thread (status %s)", id, status)}
	}
	if p := st.Turn.PendingApproval; p != nil && p.ID != id {
		return &RequestError{Kind: ErrConflict, Param: "approval_id", Message: fmt.Sprintf("approval %q is not pending on this thread", id)}
	}
	return nil
}

func (s *Server) startNative(w http.ResponseWriter, r *http.Request, c caller, th Thread, stream bool, fn func(ctx context.Context) iter.Seq2[agent.Event, error]) {
	ru, err := s.runs.start(c, th.ID, th.internal, fn)
	if err != nil {
		s.writeError(w, err)
		return
	}
	if wantsStream(r, stream) {
		s.streamRun(w, r, ru, 0)
		return
	}
	info := ru.info()
	writeJSON(w, http.StatusAccepted, map[string]any{"run": info,
		"events_url": "/api/threads/" + th.ID + "/runs/" + ru.ID + "/events"})
}

// runOf finds the caller's run named in the path, on the path's thread.
func (s *Server) runOf(w http.ResponseWriter, r *http.Request) (*run, bool) {
	c := callerFrom(r.Context())
	ru, ok := s.runs.get(c, r.PathValue("run"))
	if !ok || ru.ClientThread != r.PathValue("thread") {
		s.writeError(w, &RequestError{Kind: ErrNotFound, Param: "run", Message: "no such run"})
		return nil, false
	}
	return ru, true
}

func (s *Server) handleGetRun(w http.ResponseWriter, r *http.Request) {
	if ru, ok := s.runOf(w, r); ok {
		writeJSON(w, http.StatusOK, ru.info())
	}
}

func (s *Server) handleCancelRun(w http.ResponseWriter, r *http.Request) {
	if ru, ok := s.runOf(w, r); ok {
		ru.cancel()
		writeJSON(w, http.StatusAccepted, ru.info())
	}
}

// handleRunEvents streams a run's events; Last-Event-ID (or ?after=N)
// resumes after the last event the client saw.
func (s *Server) handleRunEvents(w http.ResponseWriter, r *http.Request) {
	ru, ok := s.runOf(w, r)
	if !ok {
		return
	}
	after := 0
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("after")
	}
	if last != "" {
		n, err := strconv.Atoi(last)
		if err != nil || n < 0 {
			s.writeError(w, badRequest("Last-Event-ID", "must be a non-negative event number"))
			return
		}
		after = n
	}
	s.streamRun(w, r, ru, after)
}

// streamRun writes the run's events as SSE: "id: <seq>", "event: <type>",
// the agent.Event as data; then an "error" frame if the run failed and a
// final "end" frame.
func (s *Server) streamRun(w http.ResponseWriter, r *http.Request, ru *run, after int) {
	sse := startSSE(w, s.cfg.Now, s.cfg.StreamWriteTimeout)
	ok := s.follow(r.Context(), ru, after, func(ev agent.Event) {
		sse.frame(strconv.Itoa(ev.Seq), string(ev.Type), ev)
	}, func() {
		if sse.idle(s.cfg.Heartbeat) {
			sse.frame("", "heartbeat", "{}")
		}
	})
	if !ok {
		return // the client left; the run goes on and can be followed again
	}
	status, runErr, shutdown := ru.result()
	if runErr != nil {
		code := "run_failed"
		sse.frame("", "error", map[string]any{"error": apiError{Message: runErr.Error(), Type: "server_error", Code: &code}})
	}
	sse.frame("", "end", map[string]any{"run_id": ru.ID, "status": status, "shutdown": shutdown})
}
