package native

import (
	"context"
	"errors"
	"net/http"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/jsonreply"
	"github.com/capgraph/capgraph/server/internal/turns"
	"github.com/capgraph/capgraph/state"
)

// Threads is what the native API's thread routes need of the server: the
// caller's threads and what their agent says of them. The caller is the
// request's (its context's).
type Threads interface {
	// FindThread is the caller's thread with the client's id; false when
	// the caller has none by that id.
	FindThread(ctx context.Context, id string) (Thread, bool, error)
	// ThreadState reads an internal thread's state and the status of its
	// latest run (agent.ErrUnknownThread when the store has no such thread).
	ThreadState(ctx context.Context, thread string) (state.State, agent.RunStatus, error)
	// WriteError answers err in the OpenAI error shape the native API
	// shares, with a message meant for the client.
	WriteError(w http.ResponseWriter, err error)
}

// Thread is a caller's thread with the metadata its client gave it.
type Thread struct {
	turns.Thread
	Metadata map[string]string
}

// Deps is what the native routes are built from.
type Deps struct {
	// Turns opens the runs the native API starts.
	Turns   turns.Turns
	Threads Threads
	Runs    Runs
	// Streams writes the run event streams.
	Streams Streams
	// Auth wraps every route: the API key's check and the caller it names.
	Auth func(http.HandlerFunc) http.HandlerFunc
}

// Routes mounts the native API's routes this package answers on mux.
func Routes(mux *http.ServeMux, d Deps) {
	h := handlers{d}
	mux.HandleFunc("GET /api/threads/{thread}/state", d.Auth(h.state))
	mux.HandleFunc("GET /api/threads/{thread}/plan", d.Auth(h.plan))
	mux.HandleFunc("POST /api/threads/{thread}/runs", d.Auth(h.startRun))
	mux.HandleFunc("GET /api/threads/{thread}/runs", d.Auth(h.listRuns))
	mux.HandleFunc("GET /api/threads/{thread}/runs/{run}", d.Auth(h.getRun))
	mux.HandleFunc("GET /api/threads/{thread}/runs/{run}/events", d.Auth(h.runEvents))
	mux.HandleFunc("POST /api/threads/{thread}/runs/{run}/cancel", d.Auth(h.cancelRun))
}

type handlers struct{ Deps }

// thread finds the caller's thread named in the path, or answers 400 (an
// id no thread can have) or 404.
func (h handlers) thread(w http.ResponseWriter, r *http.Request) (Thread, bool) {
	id := r.PathValue("thread")
	if err := turns.CheckThreadID("thread", id); err != nil {
		h.Threads.WriteError(w, err)
		return Thread{}, false
	}
	th, ok, err := h.Threads.FindThread(r.Context(), id)
	if err != nil {
		h.Threads.WriteError(w, err)
		return th, false
	}
	if !ok {
		h.Threads.WriteError(w, &apierror.RequestError{Kind: apierror.ErrNotFound, Param: "thread", Message: "no such thread"})
	}
	return th, ok
}

// loadState is the path's thread's state, with the status of its latest
// run; neither for a thread created but never run.
func (h handlers) loadState(w http.ResponseWriter, r *http.Request) (ThreadState, bool) {
	th, ok := h.thread(w, r)
	if !ok {
		return ThreadState{}, false
	}
	out := ThreadState{Thread: th.ID}
	st, status, err := h.Threads.ThreadState(r.Context(), th.Internal)
	if errors.Is(err, agent.ErrUnknownThread) {
		return out, true // created, never run, not in the store: no state yet
	}
	if err != nil {
		h.Threads.WriteError(w, err)
		return ThreadState{}, false
	}
	if st.Turn.Number == 0 {
		status = "" // created, never run
	}
	out.Status, out.State = status, &st
	return out, true
}

func (h handlers) state(w http.ResponseWriter, r *http.Request) {
	if ts, ok := h.loadState(w, r); ok {
		jsonreply.JSON(w, http.StatusOK, ts)
	}
}

func (h handlers) plan(w http.ResponseWriter, r *http.Request) {
	ts, ok := h.loadState(w, r)
	if !ok {
		return
	}
	var plan *state.Plan
	var pending *state.Approval
	if ts.State != nil {
		plan, pending = ts.State.Turn.Plan, ts.State.Turn.PendingApproval
	}
	jsonreply.JSON(w, http.StatusOK, map[string]any{"thread_id": ts.Thread, "plan": plan, "pending_approval": pending})
}
