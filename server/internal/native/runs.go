package native

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/jsonreply"
	"github.com/capgraph/capgraph/server/internal/sse"
	"github.com/capgraph/capgraph/server/internal/turns"
)

// Run is a run the native API shows and follows.
type Run interface {
	turns.Run
	// Info is the run as the native API shows it.
	Info() RunInfo
}

// Found is a run a client named: Live while it is a run of this process,
// else what its Record says (a run of an earlier life of the server, or
// of another replica), Info its view.
type Found struct {
	Live   Run
	Record runstore.Record
	Info   RunInfo
}

// Runs is what the native API's run routes need of the server: the
// caller's runs, of this process or recorded, and their cancellation.
// The caller is the request's (its context's).
type Runs interface {
	// FindRun is the caller's run id on its thread thread (the client's
	// id); false when the caller has no such run there.
	FindRun(ctx context.Context, thread, id string) (Found, bool, error)
	// Mirror follows from this process the recorded run another replica
	// runs (or ran); nil when none does.
	Mirror(ctx context.Context, rec runstore.Record) Run
	// Cancel stops the run wherever it runs.
	Cancel(ctx context.Context, ru Run) error
	// ListRuns is a page of the caller's runs on th, newest first, from
	// the record before (0: the newest); next is the next page's cursor,
	// "" after the last.
	ListRuns(ctx context.Context, th turns.Thread, limit int, before int64) (_ []RunInfo, next string, _ error)
	// Page reads a list request's ?limit and ?cursor.
	Page(r *http.Request) (limit int, cursor string, _ error)
	// RecordInfo is a run's record as the native API shows the run.
	RecordInfo(rec runstore.Record) RunInfo
}

// Streams writes a run's event stream: the clock, each frame's write
// bound and the keep-alive interval, and the error messages a client
// may read.
type Streams struct {
	Now           func() time.Time
	WriteTimeout  time.Duration
	Heartbeat     time.Duration
	PublicMessage func(error) string
}

// notHere is the 409 for a run that has not ended and does not run in
// this process.
var notHere = &apierror.RequestError{Kind: apierror.ErrConflict, Param: "run", Message: "the run is not running in this server process (it is being recovered, or runs on another replica); try again shortly"}

// runOf finds the caller's run named in the path, on the path's thread,
// or answers 400 (a thread id no thread can have) or 404.
func (h handlers) runOf(w http.ResponseWriter, r *http.Request) (Found, bool) {
	if err := turns.CheckThreadID("thread", r.PathValue("thread")); err != nil {
		h.Threads.WriteError(w, err)
		return Found{}, false
	}
	f, ok, err := h.Runs.FindRun(r.Context(), r.PathValue("thread"), r.PathValue("run"))
	if err != nil {
		h.Threads.WriteError(w, err)
		return f, false
	}
	if !ok {
		h.Threads.WriteError(w, &apierror.RequestError{Kind: apierror.ErrNotFound, Param: "run", Message: "no such run"})
	}
	return f, ok
}

func (h handlers) getRun(w http.ResponseWriter, r *http.Request) {
	f, ok := h.runOf(w, r)
	switch {
	case !ok:
	case f.Live != nil:
		jsonreply.JSON(w, http.StatusOK, f.Live.Info())
	default:
		jsonreply.JSON(w, http.StatusOK, f.Info)
	}
}

func (h handlers) cancelRun(w http.ResponseWriter, r *http.Request) {
	f, ok := h.runOf(w, r)
	if ok && f.Live == nil && !f.Info.Finished {
		f.Live = h.Runs.Mirror(r.Context(), f.Record) // another replica runs it
	}
	switch {
	case !ok:
	case f.Live != nil:
		if err := h.Runs.Cancel(r.Context(), f.Live); err != nil {
			h.Threads.WriteError(w, err)
			return
		}
		jsonreply.JSON(w, http.StatusAccepted, f.Live.Info())
	case f.Info.Finished:
		jsonreply.JSON(w, http.StatusAccepted, f.Info) // nothing left to cancel
	default:
		h.Threads.WriteError(w, notHere)
	}
}

// listRuns lists the thread's runs from their records, newest first, a
// page at a time (?limit, ?cursor).
func (h handlers) listRuns(w http.ResponseWriter, r *http.Request) {
	th, ok := h.thread(w, r)
	if !ok {
		return
	}
	limit, cursor, err := h.Runs.Page(r)
	if err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	var before int64
	if cursor != "" {
		n, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil || n <= 0 {
			h.Threads.WriteError(w, apierror.BadRequest("cursor", "is not a cursor this server gave"))
			return
		}
		before = n
	}
	out, next, err := h.Runs.ListRuns(r.Context(), th.Turns(), limit, before)
	if err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	jsonreply.JSON(w, http.StatusOK, ListPage("runs", out, next))
}

// runEvents streams a run's events; Last-Event-ID (or ?after=N) resumes
// after the last event the client saw.
func (h handlers) runEvents(w http.ResponseWriter, r *http.Request) {
	f, ok := h.runOf(w, r)
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
			h.Threads.WriteError(w, apierror.BadRequest("Last-Event-ID", "must be a non-negative event number"))
			return
		}
		after = n
	}
	ru := f.Live
	if ru == nil {
		ru = h.Runs.Mirror(r.Context(), f.Record) // another replica runs (or ran) it
	}
	if ru == nil {
		// The run is not in this process: its record's ending.
		if !f.Info.Finished {
			h.Threads.WriteError(w, notHere)
			return
		}
		h.Streams.End(h.Streams.Start(w), f.Info)
		return
	}
	h.Streams.Follow(r, h.Streams.Start(w), ru, after)
}

// Start starts an event stream on w.
func (st Streams) Start(w http.ResponseWriter) *sse.Writer {
	return sse.Start(w, st.Now, st.WriteTimeout)
}

// End writes the ending frames of a run known from its record (info).
func (st Streams) End(sse *sse.Writer, info RunInfo) {
	if info.Status == agent.RunFailed {
		code := "run_failed"
		sse.Frame("", "error", map[string]any{"error": apierror.Body{Message: info.Error, Type: "server_error", Code: &code}})
	}
	sse.Frame("", "end", map[string]any{"run_id": info.ID, "status": info.Status, "shutdown": false})
}

// Follow writes the run's events as SSE: "id: <seq>", "event: <type>",
// the agent.Event as data; then an "error" frame if the run failed and a
// final "end" frame.
func (st Streams) Follow(r *http.Request, sse *sse.Writer, ru Run, after int) {
	ok := ru.Follow(r.Context(), after, st.Heartbeat, sse, func(ev agent.Event) {
		sse.Frame(strconv.Itoa(ev.Seq), string(ev.Type), ev)
	}, func() {
		if sse.Idle(st.Heartbeat) {
			sse.Frame("", "heartbeat", "{}")
		}
	})
	if !ok {
		return // the client left; the run goes on and can be followed again
	}
	status, runErr, shutdown := ru.Result()
	if runErr != nil {
		code := "run_failed"
		sse.Frame("", "error", map[string]any{"error": apierror.Body{Message: st.PublicMessage(runErr), Type: "server_error", Code: &code}})
	}
	sse.Frame("", "end", map[string]any{"run_id": ru.Info().ID, "status": status, "shutdown": shutdown})
}
