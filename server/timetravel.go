package server

import (
	"context"
	"errors"
	"github.com/capgraph/capgraph/server/internal/turns"
	"maps"
	"net/http"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/jsonreply"
	"github.com/capgraph/capgraph/server/internal/reqbody"
	"github.com/capgraph/capgraph/state"
)

// Time travel over the native API (docs/time-travel.md): a thread's kept
// checkpoints (GET /api/threads/{thread}/history), a fork of one into a
// new thread of the caller's (POST /api/threads/{thread}/fork), the fork's
// replay (POST /api/threads/{thread}/replay), two threads side by side
// (GET /api/compare?left=&right=) and the targets' posture (GET
// /api/targets). Every thread named is the caller's, as for the other
// thread routes: another's is not found.

// TimeTraveler is an Agent that keeps its threads' history and can fork,
// replay and compare them, and acts on configured targets. Without it,
// these routes answer 404. *agent.Agent is one.
type TimeTraveler interface {
	History(ctx context.Context, thread string) ([]agent.Moment, error)
	Fork(ctx context.Context, req agent.ForkRequest) (agent.Forked, error)
	Replay(ctx context.Context, thread, by string) func(yield func(agent.Event, error) bool)
	Compare(ctx context.Context, left, right string) (agent.Comparison, error)
	Targets() []agent.TargetInfo
}

var _ TimeTraveler = timeTravelAgent{}

// timeTravelAgent adapts *agent.Agent (whose Replay returns an iter.Seq2).
type timeTravelAgent struct{ *agent.Agent }

func (a timeTravelAgent) Replay(ctx context.Context, thread, by string) func(yield func(agent.Event, error) bool) {
	return a.Agent.Replay(ctx, thread, by)
}

// timeTraveler is the Runner's time travel, or nil (the route answers 404).
func (s *Server) timeTraveler(w http.ResponseWriter) TimeTraveler {
	switch a := s.cfg.Runner.(type) {
	case *agent.Agent:
		return timeTravelAgent{a}
	case TimeTraveler:
		return a
	}
	s.writeError(w, &apierror.RequestError{Kind: apierror.ErrNotFound, Message: "this server's agent keeps no history"})
	return nil
}

// historyMoment is a moment as the API shows it: the agent's, with the
// pending approval's id left out (it ends in a secret of the turn).
func historyMoment(m agent.Moment) agent.Moment {
	if m.Approval != nil {
		ap := *m.Approval
		ap.ID = ""
		m.Approval = &ap
	}
	return m
}

func (s *Server) handleThreadHistory(w http.ResponseWriter, r *http.Request) {
	tt := s.timeTraveler(w)
	if tt == nil {
		return
	}
	_, th, ok := s.thread(w, r)
	if !ok {
		return
	}
	h, err := tt.History(r.Context(), th.internal)
	if err != nil {
		s.writeError(w, err)
		return
	}
	out := make([]agent.Moment, len(h))
	for i, m := range h {
		out[i] = historyMoment(m)
	}
	jsonreply.JSON(w, http.StatusOK, map[string]any{"thread": th.ID, "history": out})
}

// forkRequest is the body of POST /api/threads/{thread}/fork.
type forkRequest struct {
	// ID is the fork's client id ("": a new one).
	ID string `json:"id,omitempty"`
	// Checkpoint is a checkpoint the history lists ("": the latest).
	Checkpoint string `json:"checkpoint,omitempty"`
	// Input and Plan edit the user message or the plan of its turn.
	Input string      `json:"input,omitempty"`
	Plan  *state.Plan `json:"plan,omitempty"`
	// Target is where the fork's writes go ("": the rehearsal target).
	Target   string            `json:"target,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// forkResponse is the fork made: the new thread, and what it waits for.
type forkResponse struct {
	Thread     apiThread `json:"thread"`
	From       string    `json:"from"`
	Checkpoint string    `json:"checkpoint"`
	Input      string    `json:"input,omitempty"`
	Resumable  bool      `json:"resumable,omitempty"`
	Target     string    `json:"target,omitempty"`
	Writes     bool      `json:"writes"`
}

func (s *Server) handleForkThread(w http.ResponseWriter, r *http.Request) {
	tt := s.timeTraveler(w)
	if tt == nil {
		return
	}
	c, th, ok := s.thread(w, r)
	if !ok {
		return
	}
	var req forkRequest
	if err := reqbody.DecodeStrict(r, &req); err != nil {
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
	if _, found, err := s.findThread(r.Context(), c, req.ID); err != nil || found {
		if err == nil {
			err = &apierror.RequestError{Kind: apierror.ErrConflict, Param: "id", Message: "a thread with this id exists already"}
		}
		s.writeError(w, err)
		return
	}
	owner := ownerKey(c)
	if err := s.counts.reserve(r.Context(), owner, func(ctx context.Context) (int, error) { return s.countThreads(ctx, c) }); err != nil {
		s.writeError(w, err)
		return
	}
	created := false
	defer func() { s.counts.commit(owner, created) }()
	// The fork keeps the original's metadata, its title marked as a fork's,
	// unless the request gives its own.
	meta := maps.Clone(th.Metadata)
	if req.Metadata != nil {
		meta = req.Metadata
	} else if t := meta["title"]; t != "" {
		meta["title"] = forkTitle(t)
	}
	tr := s.turnRequest(c, "", "", nil, nil)
	f, err := tt.Fork(r.Context(), agent.ForkRequest{Thread: th.internal, Checkpoint: req.Checkpoint, NewThread: internalThreadID(c, req.ID),
		Input: req.Input, Plan: req.Plan, Target: req.Target, Metadata: s.turnMetadata(c, "native", req.ID, meta),
		AllowedCapabilities: tr.AllowedCapabilities})
	if oe := (*agent.OptionError)(nil); errors.As(err, &oe) {
		err = badRequest(oe.Option, "%s", oe.Reason)
	}
	if err != nil {
		s.writeError(w, err)
		return
	}
	created = true
	now := s.cfg.Now()
	jsonreply.JSON(w, http.StatusCreated, forkResponse{Thread: apiThread{ID: req.ID, Created: now, Updated: now, Metadata: meta},
		From: th.ID, Checkpoint: f.Checkpoint, Input: f.Input, Resumable: f.Resumable, Target: f.Target, Writes: f.Writes})
}

// forkTitle is a fork's title: the original's, marked, within the 512
// bytes a metadata value may have.
func forkTitle(t string) string {
	t = "Fork: " + t
	for len(t) > 512 {
		_, size := utf8.DecodeLastRuneInString(t)
		t = t[:len(t)-size]
	}
	return t
}

// replayResponse is how a replay ended: the status, the turn's message,
// and the approval it waits for (answered as any other, POST
// /api/threads/{thread}/approval).
type replayResponse struct {
	Thread   string          `json:"thread"`
	Status   string          `json:"status"`
	Message  *state.Message  `json:"message,omitempty"`
	Approval *state.Approval `json:"approval,omitempty"`
}

// handleReplayThread runs a fork's turn (its edited message, or its
// unfinished turn) to its end or to the next question for a human, within
// the request. A thread that is not a fork, or has nothing to replay, is a
// 400.
func (s *Server) handleReplayThread(w http.ResponseWriter, r *http.Request) {
	tt := s.timeTraveler(w)
	if tt == nil {
		return
	}
	c, th, ok := s.thread(w, r)
	if !ok {
		return
	}
	if _, busy := s.runs.ActiveOn(th.internal); busy {
		s.writeError(w, &apierror.RequestError{Kind: apierror.ErrRunInProgress, Message: "a run is in progress on this thread"})
		return
	}
	out := replayResponse{Thread: th.ID}
	for ev, err := range tt.Replay(r.Context(), th.internal, callerName(c)) {
		if err != nil {
			s.writeError(w, err)
			return
		}
		switch ev.Type {
		case agent.EventMessage:
			out.Message = ev.Message
		case agent.EventApprovalRequired:
			out.Approval = ev.Approval
		case agent.EventDone:
			out.Status = string(ev.Status)
		}
	}
	jsonreply.JSON(w, http.StatusOK, out)
}

// handleCompare sets two of the caller's threads side by side (GET
// /api/compare?left=A&right=B, client ids).
func (s *Server) handleCompare(w http.ResponseWriter, r *http.Request) {
	tt := s.timeTraveler(w)
	if tt == nil {
		return
	}
	c := callerFrom(r.Context())
	var internal [2]string
	for i, param := range []string{"left", "right"} {
		id := r.URL.Query().Get(param)
		if err := turns.CheckThreadID(param, id); err != nil {
			s.writeError(w, err)
			return
		}
		th, found, err := s.findThread(r.Context(), c, id)
		if err == nil && !found {
			err = &apierror.RequestError{Kind: apierror.ErrNotFound, Param: param, Message: "no such thread"}
		}
		if err != nil {
			s.writeError(w, err)
			return
		}
		internal[i] = th.internal
	}
	cmp, err := tt.Compare(r.Context(), internal[0], internal[1])
	if err != nil {
		s.writeError(w, err)
		return
	}
	cmp.Left, cmp.Right = r.URL.Query().Get("left"), r.URL.Query().Get("right")
	for _, p := range cmp.Pairs {
		for _, tr := range []*agent.TurnReport{p.Left, p.Right} {
			if tr != nil {
				tr.Thread = ""
			}
		}
	}
	jsonreply.JSON(w, http.StatusOK, cmp)
}

// handleTargets lists the target systems and their posture, for the page's
// chip (GET /api/targets): an empty list when none is configured.
func (s *Server) handleTargets(w http.ResponseWriter, r *http.Request) {
	tt := s.timeTraveler(w)
	if tt == nil {
		return
	}
	ts := tt.Targets()
	if ts == nil {
		ts = []agent.TargetInfo{}
	}
	jsonreply.JSON(w, http.StatusOK, map[string]any{"targets": ts})
}
