package native

import (
	"bytes"
	"cmp"
	"context"
	"net/http"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/jsonreply"
	"github.com/capgraph/capgraph/server/internal/reqbody"
	"github.com/capgraph/capgraph/server/internal/turns"
	"github.com/capgraph/capgraph/state"
	"github.com/google/uuid"
)

// Time travel (docs/time-travel.md): a thread's kept checkpoints (GET
// /api/threads/{thread}/history), a fork of one into a new thread of the
// caller's (POST …/fork), the fork's replay (POST …/replay), two threads
// side by side (GET /api/compare?left=&right=) and the targets' posture
// (GET /api/targets). Every thread named is the caller's, as for the
// other thread routes: another's is not found.

// TimeTravel is what the time-travel routes need of the server, on the
// caller's threads.
type TimeTravel interface {
	History(ctx context.Context, th Thread) ([]agent.Moment, error)
	// Fork makes the new thread req.ID from th (its metadata th's, the
	// title marked as a fork's, unless req gives its own): 409 when the
	// caller has a thread of that id, 400 for an option the agent refuses.
	Fork(ctx context.Context, th Thread, req ForkRequest) (Thread, agent.Forked, error)
	// Replay runs a fork's turn to its end or to the next question for a
	// human; the error refuses it before it starts (409 while a run goes
	// on).
	Replay(ctx context.Context, th Thread) (func(yield func(agent.Event, error) bool), error)
	Compare(ctx context.Context, left, right Thread) (agent.Comparison, error)
	Targets() []agent.TargetInfo
}

// ForkRequest is the body of POST /api/threads/{thread}/fork.
type ForkRequest struct {
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
	Thread     Thread `json:"thread"`
	From       string `json:"from"`
	Checkpoint string `json:"checkpoint"`
	Input      string `json:"input,omitempty"`
	Resumable  bool   `json:"resumable,omitempty"`
	Target     string `json:"target,omitempty"`
	Writes     bool   `json:"writes"`
}

// replayResponse is how a replay ended: the status, the turn's message,
// and the approval it waits for (answered as any other, POST
// /api/threads/{thread}/approval).
type replayResponse struct {
	Thread string `json:"thread"`
	// Run is the replay's run (GET /api/threads/{thread}/runs/{run}).
	Run      string          `json:"run_id,omitempty"`
	Status   string          `json:"status"`
	Message  *state.Message  `json:"message,omitempty"`
	Approval *state.Approval `json:"approval,omitempty"`
}

// timeTravel is the server's time travel, or nil after answering 404 for
// an agent that keeps no history.
func (h handlers) timeTravel(w http.ResponseWriter) TimeTravel {
	if h.TimeTravel == nil {
		h.Threads.WriteError(w, &apierror.RequestError{Kind: apierror.ErrNotFound, Message: "this server's agent keeps no history"})
	}
	return h.TimeTravel
}

func (h handlers) history(w http.ResponseWriter, r *http.Request) {
	tt := h.timeTravel(w)
	if tt == nil {
		return
	}
	th, ok := h.thread(w, r)
	if !ok {
		return
	}
	moments, err := tt.History(r.Context(), th)
	if err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	out := make([]agent.Moment, len(moments))
	for i, m := range moments {
		out[i] = historyMoment(m)
	}
	jsonreply.JSON(w, http.StatusOK, map[string]any{"thread": th.ID, "history": out})
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

func (h handlers) fork(w http.ResponseWriter, r *http.Request) {
	tt := h.timeTravel(w)
	if tt == nil {
		return
	}
	th, ok := h.thread(w, r)
	if !ok {
		return
	}
	var req ForkRequest
	if err := reqbody.DecodeStrict(r, &req); err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	if req.ID == "" {
		req.ID = uuid.NewString()
	}
	if err := turns.CheckThreadID("id", req.ID); err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	made, f, err := tt.Fork(r.Context(), th, req)
	if err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	jsonreply.JSON(w, http.StatusCreated, forkResponse{Thread: made, From: th.ID, Checkpoint: f.Checkpoint, Input: f.Input,
		Resumable: f.Resumable, Target: f.Target, Writes: f.Writes})
}

// replayFork runs a fork's turn (its edited message, or its unfinished
// turn) to its end or to the next question for a human, within the
// request. A thread that is not a fork, or has nothing to replay, is a
// 400.
func (h handlers) replayFork(w http.ResponseWriter, r *http.Request) {
	tt := h.timeTravel(w)
	if tt == nil {
		return
	}
	th, ok := h.thread(w, r)
	if !ok {
		return
	}
	// The body takes no fields, and may be left out. Read to its end, it
	// also lets the server notice a client that leaves (the replay stops).
	b, err := reqbody.Read(r)
	if err == nil && len(bytes.TrimSpace(b)) > 0 {
		var none struct{}
		err = reqbody.Unmarshal(b, &none, true)
	}
	if err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	events, err := tt.Replay(r.Context(), th)
	if err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	out := replayResponse{Thread: th.ID}
	for ev, err := range events {
		if err != nil {
			h.Threads.WriteError(w, err)
			return
		}
		out.Run = cmp.Or(out.Run, ev.RunID)
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

// compare sets two of the caller's threads side by side (GET
// /api/compare?left=A&right=B, client ids).
func (h handlers) compare(w http.ResponseWriter, r *http.Request) {
	tt := h.timeTravel(w)
	if tt == nil {
		return
	}
	var sides [2]Thread
	for i, param := range []string{"left", "right"} {
		id := r.URL.Query().Get(param)
		if err := turns.CheckThreadID(param, id); err != nil {
			h.Threads.WriteError(w, err)
			return
		}
		th, found, err := h.Threads.FindThread(r.Context(), id)
		if err == nil && !found {
			err = &apierror.RequestError{Kind: apierror.ErrNotFound, Param: param, Message: "no such thread"}
		}
		if err != nil {
			h.Threads.WriteError(w, err)
			return
		}
		sides[i] = th
	}
	cmp, err := tt.Compare(r.Context(), sides[0], sides[1])
	if err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	// The client's ids, never the internal ones.
	cmp.Left, cmp.Right = sides[0].ID, sides[1].ID
	for _, p := range cmp.Pairs {
		for _, tr := range []*agent.TurnReport{p.Left, p.Right} {
			if tr != nil {
				tr.Thread = ""
			}
		}
	}
	jsonreply.JSON(w, http.StatusOK, cmp)
}

// targets lists the target systems and their posture, for the page's
// chip (GET /api/targets): an empty list when none is configured.
func (h handlers) targets(w http.ResponseWriter, r *http.Request) {
	tt := h.timeTravel(w)
	if tt == nil {
		return
	}
	ts := tt.Targets()
	if ts == nil {
		ts = []agent.TargetInfo{}
	}
	jsonreply.JSON(w, http.StatusOK, map[string]any{"targets": ts})
}
