package server

import (
	"context"
	"errors"
	"github.com/capgraph/capgraph/server/internal/runs"
	"sync/atomic"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/apierror"
	lifecycle "github.com/capgraph/capgraph/server/internal/run"
)

// Parked runs: a retry that waits longer than Config.ParkAfter does not
// wait in a goroutine. The agent call ends with agent.RunWaiting (its
// checkpoint holds the not-before time, durable before the wait), and the
// run — the same run, its id, its event numbering, its followers — goes on
// at that time through the agent's Resume, which runs every step through
// the execution gate as any run does:
//
//   - with replicas (PostgreSQL), its record goes back to the queue with
//     that not-before time, and whichever replica claims it when due
//     resumes it; this replica's followers read its events from the store;
//   - in one process (SQLite, memory), a timer resumes it here.
//
// Which step runs next, its attempt and its delay are the router's, as
// before: parking only moves the wait out of the process.

// park handles r, whose agent call ended parked until until.
func (s *Server) park(r *run, until time.Time) {
	m := s.runs
	// A resumed run is not counted against its principal's limits again:
	// it was admitted once (as a recovered run is).
	m.ReleaseParked(r.Run)
	s.cfg.Logger.Info("run parked until its retry is due", "run", r.ID, "thread", r.Thread, "not_before", until)
	if s.cluster != nil {
		s.parkInQueue(r, until)
		return
	}
	m.Must(r.Run, lifecycle.Park)
	// The timer and a cancellation race to take the parked run: the one
	// that takes it first acts.
	var taken atomic.Bool
	stopTimer := s.background.AfterFunc(max(until.Sub(s.cfg.Now()), 0), func(context.Context) {
		if taken.CompareAndSwap(false, true) {
			s.resumeParked(r)
		}
	})
	// Canceled while parked (by its client, a cancel request, the
	// shutdown): it ends here, with no goroutine waiting for that either.
	context.AfterFunc(r.Context(), func() {
		if taken.CompareAndSwap(false, true) {
			stopTimer()
			shutdown := s.runs.Stopping()
			if !s.background.Go(func(context.Context) { s.endParked(r, shutdown) }) {
				s.endParked(r, true)
			}
		}
	})
}

// parkInQueue gives r back to the runs queue, ready at until, and makes
// r a follower of its events in the store.
func (s *Server) parkInQueue(r *run, until time.Time) {
	cl := s.cluster
	if r.pub != nil {
		r.pub.close()
	}
	if s.runs.Requeue(r.Run) {
		ctx, cancel := context.WithTimeout(context.Background(), recordWriteTimeout)
		err := cl.q.RequeueRun(ctx, r.ID, s.cfg.Instance, until)
		cancel()
		if err != nil && !errors.Is(err, runstore.ErrConflict) {
			// Its lease runs out and another claim resumes it: later.
			s.cfg.Logger.Error("giving a parked run back to the queue", "run", r.ID, "error", err)
		}
	}
	// Every replica's claim loop looks every TTL/3; this one looks when due.
	s.background.AfterFunc(max(until.Sub(s.cfg.Now()), 0), func(context.Context) { poke(cl.wake) })
	// Canceled here while it waits in the queue — its client left for
	// longer than DetachGrace, as a run in a goroutine would be canceled —
	// the queued record is canceled too, so that no replica resumes a run
	// nobody follows. A shutdown leaves it queued; a record that ended
	// (the mirror saw it) has nothing to stop.
	context.AfterFunc(r.Context(), func() {
		if s.runs.Stopping() || r.EndedInStore() {
			return
		}
		s.background.Go(func(context.Context) {
			ctx, cancel := context.WithTimeout(context.Background(), recordWriteTimeout)
			defer cancel()
			if err := cl.q.RequestCancel(ctx, r.ID); err != nil {
				s.cfg.Logger.Warn("canceling a parked run its client left", "run", r.ID, "error", err)
			}
		})
	})
	s.startTail(r)
}

// resumeParked takes r, parked in this process, over when its retry is
// due, as any recorded run is taken over (takeOver): the run itself goes
// on, with its followers and its log, unless its thread went on without it.
func (s *Server) resumeParked(r *run) {
	if r.Context().Err() != nil {
		s.endParked(r, s.runs.Stopping())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), recordWriteTimeout)
	defer cancel()
	rec, err := s.records.GetRun(ctx, r.ID)
	if err == nil {
		_, err = s.takeOver(ctx, rec)
	}
	var re *apierror.RequestError
	switch {
	case err == nil:
	case errors.As(err, &re) && errors.Is(re.Kind, apierror.ErrShuttingDown):
		s.endParked(r, true)
	case r.Context().Err() != nil:
		s.endParked(r, s.runs.Stopping())
	default:
		// Never left parked with nobody to end it.
		s.cfg.Logger.Error("resuming a parked run", "run", r.ID, "error", err)
		msg := "the run could not go on after its retry wait: " + s.publicMessage(err)
		if err := s.endRecord(context.WithoutCancel(ctx), rec, runstore.Failed, msg); err != nil || rec.ID == "" {
			s.endParkedAs(r.ID, agent.RunFailed, msg)
		}
	}
}

// endParked ends a run canceled while parked in this process; a shutdown
// leaves its record running, for the next start to resume.
func (s *Server) endParked(r *run, shutdown bool) {
	r.Append(agent.Event{Type: agent.EventDone, Status: agent.RunCanceled, Thread: r.Thread, Time: s.cfg.Now()})
	s.finishRecord(r, agent.RunCanceled, nil, shutdown)
	cause := runs.EndedHere
	if shutdown {
		cause = runs.EndedByShutdown
	}
	s.runs.Finish(r.Run, nil, cause)
	s.runs.EvictAfterEnd()
}

// endParkedAs ends the run of id when it is parked in this process, as its
// record now says: status, and msg for a failure.
func (s *Server) endParkedAs(id string, status agent.RunStatus, msg string) {
	r, ok := s.runs.ByID(id)
	if !ok || r.State() != lifecycle.Parked {
		return
	}
	var err error
	if status == agent.RunFailed {
		err = errors.New(msg)
	}
	r.Append(agent.Event{Type: agent.EventDone, Status: status, Err: msg, Thread: r.Thread, Time: s.cfg.Now()})
	s.runs.Finish(r.Run, err, runs.EndedHere)
	s.runs.EvictAfterEnd()
	r.Cancel()
}

// overtakenMessage says why a parked run ended without going on.
const overtakenMessage = "a later run on the thread replaced this one while it waited for its retry; nothing more of it will be done"
