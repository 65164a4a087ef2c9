package native

import (
	"context"
	"errors"
	"net/http"
	"time"

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
	// Status is the status of th's latest run: "running" while one goes
	// on, "" before any.
	Status(ctx context.Context, th Thread) string
	// CreateThread finds the caller's thread id or creates it with meta
	// (checked against the metadata limits); created reports a new one.
	CreateThread(ctx context.Context, id string, meta map[string]string) (_ Thread, created bool, _ error)
	// ListThreads is a page of the caller's threads, newest first, from
	// cursor ("": the first page); next is the next page's cursor, ""
	// after the last.
	ListThreads(ctx context.Context, limit int, cursor string) (_ []Thread, next string, _ error)
	// DeleteThread deletes th with its runs' records (409 while a run
	// goes on).
	DeleteThread(ctx context.Context, th Thread) error
	// SetMetadata changes th's metadata between turns (a key set to ""
	// is removed) and returns the thread changed; the change is checked
	// against the metadata limits (409 while a run goes on).
	SetMetadata(ctx context.Context, th Thread, set map[string]string) (Thread, error)
	// Outcomes is what became of th's changes, oldest first: each
	// attempt's outcome as its followers saw it.
	Outcomes(ctx context.Context, th Thread) ([]*agent.AuditRecord, error)
	// WriteError answers err in the OpenAI error shape the native API
	// shares, with a message meant for the client.
	WriteError(w http.ResponseWriter, err error)
}

// Thread is a conversation as the native API shows it.
type Thread struct {
	ID       string            `json:"id"` // the client's id
	Created  time.Time         `json:"created_at"`
	Updated  time.Time         `json:"updated_at"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Status is the last run's status ("" before any run, "running").
	Status string `json:"status,omitempty"`
	// Internal is the agent's id of the thread, never shown.
	Internal string `json:"-"`
}

// Turns is th as the protocols name a thread.
func (th Thread) Turns() turns.Thread { return turns.Thread{ID: th.ID, Internal: th.Internal} }

// Deps is what the native routes are built from.
type Deps struct {
	// Turns opens the runs the native API starts.
	Turns     turns.Turns
	Threads   Threads
	Runs      Runs
	Approvals Approvals
	// TimeTravel is nil when the agent keeps no history (its routes
	// answer 404).
	TimeTravel TimeTravel
	// MaxMessageBytes bounds an approval answer's text.
	MaxMessageBytes int
	// Streams writes the run event streams.
	Streams Streams
	// Auth wraps every route: the API key's check and the caller it names.
	Auth func(http.HandlerFunc) http.HandlerFunc
}

// Routes mounts the native API's routes this package answers on mux.
func Routes(mux *http.ServeMux, d Deps) {
	h := handlers{d}
	mux.HandleFunc("POST /api/threads", d.Auth(h.createThread))
	mux.HandleFunc("GET /api/threads", d.Auth(h.listThreads))
	mux.HandleFunc("GET /api/threads/{thread}", d.Auth(h.getThread))
	mux.HandleFunc("DELETE /api/threads/{thread}", d.Auth(h.deleteThread))
	mux.HandleFunc("PATCH /api/threads/{thread}", d.Auth(h.updateThread))
	mux.HandleFunc("GET /api/threads/{thread}/outcomes", d.Auth(h.outcomes))
	mux.HandleFunc("POST /api/threads/{thread}/approval", d.Auth(h.answerApproval))
	mux.HandleFunc("GET /api/threads/{thread}/history", d.Auth(h.history))
	mux.HandleFunc("POST /api/threads/{thread}/fork", d.Auth(h.fork))
	mux.HandleFunc("POST /api/threads/{thread}/replay", d.Auth(h.replayFork))
	mux.HandleFunc("GET /api/compare", d.Auth(h.compare))
	mux.HandleFunc("GET /api/targets", d.Auth(h.targets))
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
	return PathThread(w, r, h.Threads)
}

// PathThread finds the caller's thread named in r's path ({thread}), or
// answers 400 (an id no thread can have) or 404: the lookup every route
// under /api/threads/{thread} starts with.
func PathThread(w http.ResponseWriter, r *http.Request, threads Threads) (Thread, bool) {
	id := r.PathValue("thread")
	if err := turns.CheckThreadID("thread", id); err != nil {
		threads.WriteError(w, err)
		return Thread{}, false
	}
	th, ok, err := threads.FindThread(r.Context(), id)
	if err != nil {
		threads.WriteError(w, err)
		return th, false
	}
	if !ok {
		threads.WriteError(w, &apierror.RequestError{Kind: apierror.ErrNotFound, Param: "thread", Message: "no such thread"})
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
