package server

import (
	"context"
	"errors"
	"iter"
	"sync/atomic"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph/checkpoint"
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

// park handles r, whose agent call ended parked until r.parkUntil.
func (s *Server) park(r *run) {
	m := s.runs
	m.mu.Lock()
	m.release(r)
	// A resumed run is not counted against its principal's limits again:
	// it was admitted once (as a recovered run is).
	r.limited = false
	m.mu.Unlock()
	until := r.parkUntil
	s.cfg.Logger.Info("run parked until its retry is due", "run", r.ID, "thread", r.Thread, "not_before", until)
	if s.cluster != nil {
		s.parkInQueue(r, until)
		return
	}
	var taken atomic.Bool
	timer := time.AfterFunc(max(until.Sub(s.cfg.Now()), 0), func() {
		if taken.CompareAndSwap(false, true) {
			s.unpark(r)
		}
	})
	// Canceled while parked (by its client, a cancel request, the
	// shutdown): it ends here, with no goroutine waiting for that either.
	context.AfterFunc(r.ctx, func() {
		if taken.CompareAndSwap(false, true) {
			timer.Stop()
			s.endParked(r, s.runs.base.Err() != nil)
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
	r.remote.Store(true)
	if !r.fenced.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), recordWriteTimeout)
		err := cl.q.RequeueRun(ctx, r.ID, s.cfg.Instance, until)
		cancel()
		if err != nil && !errors.Is(err, checkpoint.ErrRunConflict) {
			// Its lease runs out and another claim resumes it: later.
			s.cfg.Logger.Error("giving a parked run back to the queue", "run", r.ID, "error", err)
		}
	}
	// Every replica's claim loop looks every TTL/3; this one looks when due.
	time.AfterFunc(max(until.Sub(s.cfg.Now()), 0), func() { poke(cl.wake) })
	// Canceled here while it waits in the queue — its client left for
	// longer than DetachGrace, as a run in a goroutine would be canceled —
	// the queued record is canceled too, so that no replica resumes a run
	// nobody follows. A shutdown leaves it queued; a record that ended
	// (the mirror saw it) has nothing to stop.
	context.AfterFunc(r.ctx, func() {
		if s.runs.base.Err() != nil || r.ended.Load() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), recordWriteTimeout)
		defer cancel()
		if err := cl.q.RequestCancel(ctx, r.ID); err != nil {
			s.cfg.Logger.Warn("canceling a parked run its client left", "run", r.ID, "error", err)
		}
	})
	go s.tail(r)
}

// unpark resumes r, parked in this process, when its wait is over.
func (s *Server) unpark(r *run) {
	m := s.runs
	if r.ctx.Err() != nil {
		s.endParked(r, m.base.Err() != nil)
		return
	}
	// A later run on the thread (the client went on) overtook it.
	recs, err := s.records.ListRuns(r.ctx, checkpoint.RunFilter{Thread: r.Thread, Limit: 1})
	if err == nil && len(recs) > 0 && recs[0].ID != r.ID {
		s.endOvertaken(r)
		return
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		s.endParked(r, true)
		return
	}
	if other, busy := m.byThread[r.Thread]; busy && other != r {
		m.mu.Unlock()
		s.endOvertaken(r)
		return
	}
	m.byThread[r.Thread] = r
	m.wg.Add(1)
	m.mu.Unlock()
	thread := r.Thread
	m.launch(r, func(ctx context.Context) iter.Seq2[agent.Event, error] {
		return s.cfg.Runner.Resume(ctx, thread, agent.Answer{})
	})
}

// endParked ends a run canceled while parked in this process; a shutdown
// leaves its record running, for the next start to resume.
func (s *Server) endParked(r *run, shutdown bool) {
	r.append(agent.Event{Type: agent.EventDone, Status: agent.RunCanceled, Thread: r.Thread, Time: s.cfg.Now()})
	s.finishRecord(r, agent.RunCanceled, nil, shutdown)
	r.finish(nil, shutdown)
	s.runs.evictAfterEnd()
}

// overtakenMessage says why a parked run ended without going on.
const overtakenMessage = "a later run on the thread replaced this one while it waited for its retry; nothing more of it will be done"

func (s *Server) endOvertaken(r *run) {
	ctx, cancel := context.WithTimeout(context.Background(), recordWriteTimeout)
	defer cancel()
	_, err := s.records.UpdateRun(ctx, r.ID, checkpoint.RunUpdate{From: []checkpoint.RunStatus{checkpoint.RunQueued, checkpoint.RunRunning},
		Status: checkpoint.RunFailed, Error: overtakenMessage})
	if err != nil && !errors.Is(err, checkpoint.ErrRunConflict) {
		s.cfg.Logger.Error("run record update failed", "run", r.ID, "error", err)
	}
	r.append(agent.Event{Type: agent.EventDone, Status: agent.RunFailed, Err: overtakenMessage, Thread: r.Thread, Time: s.cfg.Now()})
	r.finish(errors.New(overtakenMessage), false)
	s.runs.evictAfterEnd()
	r.cancel()
}
