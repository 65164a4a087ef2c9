package server

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"slices"
	"sync"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/runstore"
	"github.com/google/uuid"
)

// A human's answer to an approval is acknowledged only once it is stored:
// its run record (a kindAnswer input, runrecord.go) is written before the
// server answers 2xx or sends a stream's first byte, and the agent stores
// the answer with its checkpoint in one transaction when it takes it
// (checkpoint.TuplePutter). After a crash the record says what was
// answered and the checkpoint whether the agent took it; every path that
// starts the record's run again — RecoverRuns, a replica claiming it from
// the queue, the end of the run it was queued behind — carries the answer
// out with carryOut, never as a plain resume that would ask again.
//
// Concurrent steps each ask for approval, and their answers come in any
// order. An answer to an approval pending beside one being carried out
// (storedAnswer.Beside) is queued: recorded, acknowledged (202), and
// carried out when the run on the thread ends (startNext).

// carryOut is the agent call of an answer's run: the thread resumed with
// the answer. What stands between the answer and its approval is dealt
// with here:
//   - the thread stands between two steps and the agent took the answer
//     already (a crash cut the run after it was stored): the cut run goes
//     on, with the answer from its checkpoint;
//   - it stands between two steps and the answer was not taken (another
//     answer's run was cut, or this answer waited behind one): the cut run
//     goes on first, then the answer is given if its approval is pending
//     then.
//
// Any other refusal (expired, answered before and finished, not asked
// any more) is the agent's *agent.ApprovalError, as before.
func (s *Server) carryOut(ctx context.Context, thread string, ans agent.Answer) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		for continued := false; ; continued = true {
			var (
				refusal   error
				refusedEv agent.Event
				first     = true
			)
			for ev, err := range s.cfg.Runner.Resume(ctx, thread, ans) {
				if first && !continued && (errors.Is(err, agent.ErrApprovalAnswered) || errors.Is(err, agent.ErrApprovalNotPending)) {
					refusal, refusedEv = err, ev
					break
				}
				first = false
				if !yield(ev, err) {
					return
				}
			}
			if refusal == nil {
				return
			}
			if _, status, err := s.cfg.Runner.State(ctx, thread); err != nil || status != agent.RunCanceled {
				yield(refusedEv, refusal)
				return
			}
			// Between two steps: the cut run goes on. When the answer is
			// still to be given, the end of that run is held back: the
			// answer's run goes on past it.
			taken := errors.Is(refusal, agent.ErrApprovalAnswered)
			var held *agent.Event
			for ev, err := range s.cfg.Runner.Resume(ctx, thread, agent.Answer{}) {
				if err == nil && !taken && ev.Type == agent.EventDone && ev.Status == agent.RunInterrupted {
					held = &ev
					continue
				}
				if !yield(ev, err) || err != nil {
					return
				}
			}
			if held == nil {
				return
			}
			if !s.stillPendingID(ctx, thread, ans.ApprovalID) {
				// The run went on and stopped at another question; this
				// answer has nothing to answer now.
				yield(*held, nil)
				return
			}
		}
	}
}

// answersAwaiting reports what the thread's open answer records (and its
// answer's run in this process, whose record may not be written yet) say:
// the approvals their answers are carried out for (taken), and those
// pending beside them (offered), which a queued answer may answer.
func (s *Server) answersAwaiting(ctx context.Context, thread string) (taken, offered []string, err error) {
	if r, ok := s.runs.ActiveOn(thread); ok && r.answering != "" {
		taken, offered = append(taken, r.answering), append(offered, r.beside...)
	}
	recs, err := s.records.ListRuns(ctx, runstore.Filter{Thread: thread,
		Status: []runstore.Status{runstore.Queued, runstore.Running}, Limit: recoverPage})
	if err != nil {
		return nil, nil, err
	}
	for _, rec := range recs {
		var in runInput
		if json.Unmarshal(rec.Input, &in) != nil || in.Kind != kindAnswer || in.Answer == nil {
			continue
		}
		taken = append(taken, in.Answer.ApprovalID)
		offered = append(offered, in.Answer.Beside...)
	}
	return taken, offered, nil
}

// queueable reports whether an answer to approval id may be queued on the
// thread, and the approvals that stay pending beside it: id is pending
// beside an answer being carried out, and no open record answers it yet.
func (s *Server) queueable(ctx context.Context, thread, id string) (beside []string, ok bool, err error) {
	taken, offered, err := s.answersAwaiting(ctx, thread)
	if err != nil || slices.Contains(taken, id) || !slices.Contains(offered, id) {
		return nil, false, err
	}
	for _, o := range offered {
		if o != id && !slices.Contains(taken, o) && !slices.Contains(beside, o) {
			beside = append(beside, o)
		}
	}
	return beside, true, nil
}

// queueAnswer records sp, an answer to an approval pending beside one
// being carried out, as a queued run: durable, acknowledged, and started
// when the thread's run ends (startNext) or, with replicas, claimed from
// the queue. dup is the record an equal request made before.
func (s *Server) queueAnswer(ctx context.Context, sp runSpec) (rec runstore.Record, dup *runstore.Record, err error) {
	in, err := sp.input()
	if err != nil {
		return rec, nil, err
	}
	rec, created, err := s.records.CreateRun(ctx, runstore.Record{ID: "run-" + uuid.NewString(), Thread: sp.thread,
		Status: runstore.Queued, Key: sp.key, Input: in, Labels: sp.labels()})
	if err != nil {
		return rec, nil, err
	}
	if !created {
		return rec, &rec, nil
	}
	if s.cluster != nil {
		s.signal(runstore.SignalQueued, rec.ID)
		return rec, nil, nil
	}
	s.waitBehind(sp.thread)
	return rec, nil, nil
}

// waitBehind makes a recorded run wait for the run on the thread: its end
// starts the next (startNext), and if it ended already, the next starts
// now.
func (s *Server) waitBehind(thread string) {
	s.waitFor(thread)
	if _, busy := s.runs.ActiveOn(thread); !busy {
		// The run it waited for ended meanwhile.
		s.background.Go(func(context.Context) { s.startNext(thread) })
	}
}

// nextRuns notes the threads with a recorded run waiting for the run on
// the thread to end (a queued answer, a recovered run that found the
// thread busy), so that the end of a run looks for the next one only
// where there is one. One process only: replicas claim from the queue.
type nextRuns struct {
	mu      sync.Mutex
	threads map[string]bool
}

// waitFor notes that a recorded run waits for the thread.
func (s *Server) waitFor(thread string) {
	s.next.mu.Lock()
	defer s.next.mu.Unlock()
	if s.next.threads == nil {
		s.next.threads = map[string]bool{}
	}
	s.next.threads[thread] = true
}

// afterRun starts what waited for the run on thread to end.
func (s *Server) afterRun(thread string) {
	s.next.mu.Lock()
	waiting := s.next.threads[thread]
	delete(s.next.threads, thread)
	s.next.mu.Unlock()
	if waiting {
		s.background.Go(func(context.Context) { s.startNext(thread) })
	}
}

// startNext starts the oldest recorded run waiting for the thread (one
// queued behind the run that ended, or one a crash left that recovery
// found the thread busy for), as RecoverRuns would.
func (s *Server) startNext(thread string) {
	ctx, cancel := context.WithTimeout(context.Background(), recordWriteTimeout)
	defer cancel()
	recs, err := s.records.ListRuns(ctx, runstore.Filter{Thread: thread,
		Status: []runstore.Status{runstore.Queued, runstore.Running}, Limit: recoverPage})
	if err != nil {
		s.cfg.Logger.Error("looking for the next run of a thread", "thread", thread, "error", err)
		return
	}
	for _, rec := range recs {
		if r, ours := s.runs.ByID(rec.ID); ours && !r.IsFinished() {
			// A run of this process goes on (or waits, parked): its end
			// looks again.
			s.waitFor(thread)
			return
		}
	}
	for i := len(recs) - 1; i >= 0; i-- { // oldest first
		rec := recs[i]
		started, err := s.takeOver(ctx, rec)
		if err != nil {
			s.cfg.Logger.Error("starting the next run of a thread", "thread", thread, "run", rec.ID, "error", err)
			return
		}
		if started {
			return
		}
		if _, busy := s.runs.ActiveOn(thread); busy {
			return // another run took the thread: its end looks again
		}
	}
}
