package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/capgraph/capgraph/server/internal/runs"
	"iter"
	"slices"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/mcphttp"
	"github.com/capgraph/capgraph/state"
)

// ErrNoRecovery: the Agent claims no unfinished runs (it is no Recoverer).
var ErrNoRecovery = errors.New("server: the runner does not claim unfinished runs (no ClaimUnfinished method)")

// recoveryPrincipal owns recovered runs of threads the server did not
// create (no owner in their metadata), so their audit records say so.
const recoveryPrincipal = "(recovery)"

// defaultRecoveryLimit bounds recovery when neither Config.MaxTotalRuns nor
// the runner gives a bound.
const defaultRecoveryLimit = 8

// recoveryLimit is the number of runs (of any kind) this server may be
// running for RecoverRuns to claim another: Config.MaxTotalRuns when set,
// else the runner's RecoveryLimit, else defaultRecoveryLimit.
func (s *Server) recoveryLimit() int {
	if s.cfg.MaxTotalRuns > 0 {
		return s.cfg.MaxTotalRuns
	}
	if rl := s.features.recovery; rl != nil && rl.RecoveryLimit() > 0 {
		return rl.RecoveryLimit()
	}
	return defaultRecoveryLimit
}

// RecoverRuns finishes what a crash or a shutdown left unfinished and
// returns the threads of the runs it started: first the runs the server
// recorded and never ended (started from their input, resumed, or marked
// with how they ended), then the cut runs without a record
// (agent.ClaimUnfinished), each as a server run of its owner — audited,
// followable, waited for by Shutdown. It starts runs only while the server
// has room (Config.MaxTotalRuns, else the runner's RecoveryLimit, else 8)
// and stops at the limit; the rest stays for another replica or the next
// call. Replicas sharing a store may all call it, at start-up and
// periodically; how it shares the work: docs/frontends.md,
// "srv.RecoverRuns", and docs/reliability.md.
func (s *Server) RecoverRuns(ctx context.Context) ([]string, error) {
	return s.recoverRuns(ctx, false)
}

// RecoverAllRuns is RecoverRuns waiting for room at the limit instead of
// stopping: it returns once every unfinished run has started (or ctx
// ends). For a process that owns its store alone (SQLite) at start-up,
// where nobody else would take the rest.
func (s *Server) RecoverAllRuns(ctx context.Context) ([]string, error) {
	return s.recoverRuns(ctx, true)
}

func (s *Server) recoverRuns(ctx context.Context, wait bool) ([]string, error) {
	limit := s.recoveryLimit()
	room := func() bool {
		if wait {
			return s.runs.WaitRoom(ctx, limit) == nil
		}
		return s.runs.Running() < limit
	}
	recorded := s.recoverRecorded
	if s.cluster != nil {
		recorded = s.claimReady // the queue hands out the recorded runs
	}
	started, err := recorded(ctx, room)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	rc := s.features.recovery
	if rc == nil {
		return started, errors.Join(append(errs, ErrNoRecovery)...)
	}
	// Pulled one claim at a time: a claim not asked for is never made.
	next, stop := iter.Pull2(rc.ClaimUnfinished(ctx))
	defer stop()
	for room() {
		cr, err, more := next()
		if err != nil {
			errs = append(errs, err)
			break
		}
		if !more {
			break
		}
		if open, err := s.hasOpenRecord(ctx, cr.Thread); err != nil || open {
			// Its record says who answers it (recoverRecorded, once the
			// record is older than Config.RecoverGrace), or, with
			// replicas, it was canceled on request.
			cr.Release()
			if err != nil {
				errs = append(errs, err)
				break
			}
			continue
		}
		c, clientThread := s.ownerOf(ctx, cr.Thread)
		sp := runSpec{c: c, source: "recovery", clientThread: clientThread, thread: cr.Thread, kind: kindResume, claimed: cr, origin: runs.FromClaim}
		if _, _, err := s.submit(ctx, sp); err != nil {
			cr.Release()
			var re *apierror.RequestError
			if errors.As(err, &re) && errors.Is(re.Kind, apierror.ErrRunInProgress) {
				continue // a client's run of this server got there first
			}
			errs = append(errs, fmt.Errorf("server: recover thread %q: %w", cr.Thread, err))
			break // shutting down
		}
		started = append(started, cr.Thread)
	}
	return started, errors.Join(errs...)
}

// recoverPage is how many run records RecoverRuns reads at a time.
const recoverPage = 100

// recoverRecorded handles the recorded runs that never ended (see
// RecoverRuns).
func (s *Server) recoverRecorded(ctx context.Context, room func() bool) ([]string, error) {
	f := runstore.Filter{Status: []runstore.Status{runstore.Queued, runstore.Running}, Limit: recoverPage}
	if s.cfg.RecoverGrace > 0 {
		f.UpdatedBefore = s.cfg.Now().Add(-s.cfg.RecoverGrace)
	}
	var (
		started []string
		errs    []error
	)
	for {
		recs, err := s.records.ListRuns(ctx, f)
		if err != nil {
			return started, errors.Join(append(errs, fmt.Errorf("server: list unfinished runs: %w", err))...)
		}
		for _, rec := range recs {
			if ru, ours := s.runs.ByID(rec.ID); ours && !ru.IsFinished() {
				continue // running or parked here
			}
			if !room() {
				return started, errors.Join(append(errs, ctx.Err())...)
			}
			ok, err := s.takeOver(ctx, rec)
			if err != nil {
				errs = append(errs, fmt.Errorf("server: recover run %s: %w", rec.ID, err))
				var re *apierror.RequestError
				if errors.As(err, &re) && errors.Is(re.Kind, apierror.ErrShuttingDown) {
					return started, errors.Join(errs...)
				}
				continue
			}
			if ok {
				started = append(started, rec.Thread)
			}
		}
		if len(recs) < recoverPage {
			return started, errors.Join(errs...)
		}
		f.Before = recs[len(recs)-1].Seq
	}
}

// takeOver is the one way a recorded run starts again, wherever it was
// cut and whoever takes it: a run cut by a crash or a shutdown
// (RecoverRuns), one claimed from the replicas' queue (claimReady, its
// owner dead or its retry due there), a run parked in this process whose
// retry is due (park.go), an answer queued behind the run that just ended
// (startNext). It reads what the record asked and where the thread stands,
// then either starts the run — from its input, carrying out its answer, or
// resuming it between two steps — or writes how it ended into its record
// (and ends it, when it is parked here). started reports a run started.
// The lifecycle, and what each case means for a client: package
// server/internal/run.
func (s *Server) takeOver(ctx context.Context, rec runstore.Record) (started bool, err error) {
	c := s.callerOf(rec.Labels)
	sp := runSpec{c: c, source: rec.Labels[labelSource], clientThread: rec.Labels[labelThread], thread: rec.Thread,
		id: rec.ID, origin: runs.FromRecord, started: rec.Created,
		chat: rec.Labels[labelSource] == "openai" || rec.Labels[labelSource] == mcphttp.Source && rec.Key != ""}
	var in runInput
	if err := json.Unmarshal(rec.Input, &in); err != nil {
		return false, s.endRecord(ctx, rec, runstore.Failed, "the server restarted and could not read this run's input")
	}
	if ended, err := s.endOvertaken(ctx, rec, in); ended || err != nil {
		return false, err
	}
	if ru, busy := s.runs.ActiveOn(rec.Thread); busy && ru.ID != rec.ID && s.cluster == nil {
		// A run of this process goes on on the thread (another answer
		// recovered just before this one, say): the thread's state is
		// half-way through it and says nothing of this record yet. That
		// run's end takes this record over.
		s.waitBehind(rec.Thread)
		return false, nil
	}
	if goOn, err := s.recoveredWork(ctx, rec, in, &sp); !goOn || err != nil {
		return false, err
	}
	if claimed, err := s.claimRecord(ctx, rec); !claimed || err != nil {
		return false, err
	}
	r, _, err := s.submit(ctx, sp)
	if err != nil {
		var re *apierror.RequestError
		if errors.As(err, &re) && errors.Is(re.Kind, apierror.ErrRunInProgress) {
			// A run of this server got there first (a client's, another
			// recovered one): this one starts when it ends.
			if s.cluster == nil {
				s.waitBehind(rec.Thread)
			}
			return false, nil
		}
		return false, err
	}
	// Another process may hold the thread: with replicas the run waits
	// for it up to a third of a TTL, then gives the record back to the
	// queue; alone it ends at once. Either way it did not get going here.
	return r.Began(ctx), nil
}

// endOvertaken ends rec when a later turn on the thread overtook it (the
// client went on): its input is never run again. A later answer does not
// overtake an answer: concurrent steps' approvals are answered one after
// the other.
func (s *Server) endOvertaken(ctx context.Context, rec runstore.Record, in runInput) (ended bool, err error) {
	newest, err := s.records.ListRuns(ctx, runstore.Filter{Thread: rec.Thread, Limit: 1})
	if err != nil || len(newest) == 0 || newest[0].Seq <= rec.Seq {
		return false, err
	}
	later, _, err := s.neighbours(ctx, rec)
	if err != nil {
		return false, err
	}
	if !slices.ContainsFunc(later, func(k runKind) bool { return k != kindAnswer || in.Kind != kindAnswer }) {
		return false, nil
	}
	msg := "the server restarted before this run finished, and a later run on the thread replaced it; nothing more of this run will be done"
	if s.runs.Parked(rec.ID) {
		msg = overtakenMessage
	}
	return true, s.endRecord(ctx, rec, runstore.Failed, msg)
}

// recoveredWork decides from the thread's state what is left of rec's
// run, and sets sp to do it: its turn (acknowledged, but its input never
// reached the checkpoints), its answer (never taken, or taken and cut
// short: carryOut continues either way, never resuming without the
// answer), or a resume (cut between two steps). goOn is false when
// nothing is left to run: the record was ended as the thread says.
func (s *Server) recoveredWork(ctx context.Context, rec runstore.Record, in runInput, sp *runSpec) (goOn bool, err error) {
	st, status, err := s.cfg.Runner.State(ctx, rec.Thread)
	unknown := errors.Is(err, agent.ErrUnknownThread)
	if err != nil && !unknown {
		return false, err
	}
	switch {
	case unknown && in.Kind != kindTurn:
		return false, s.endRecord(ctx, rec, runstore.Failed, "the thread no longer exists")
	case in.Kind == kindTurn && in.Turn != nil && (unknown || st.Metadata[metaRun] != rec.ID):
		t := in.Turn
		sp.kind, sp.turn = kindTurn, &agent.TurnRequest{Thread: rec.Thread, Input: t.Input, Options: t.Options, MayRaise: t.MayRaise,
			By: t.By, Metadata: t.Metadata, AllowedCapabilities: t.AllowedCapabilities}
	case in.Kind == kindReplay && st.Metadata[agent.MetaForkInput] != "":
		// The fork's edited message never began (its turn's first
		// checkpoint clears it, and is durable before any side effect):
		// the replay runs.
		sp.kind = kindReplay
	case in.Kind == kindAnswer && in.Answer != nil && status == agent.RunCanceled && s.behindCanceled(ctx, rec):
		// Queued behind a run that was canceled on request: the turn
		// stopped there, and this answer does not start it again.
		return false, s.endRecord(ctx, rec, runstore.Failed, "the run this answer waited for was canceled, so the answer was not carried out; answer again to go on")
	case in.Kind == kindAnswer && in.Answer != nil && (status == agent.RunCanceled ||
		status == agent.RunInterrupted && s.stillPendingID(ctx, rec.Thread, in.Answer.ApprovalID)):
		a := in.Answer
		sp.kind, sp.answer = kindAnswer, &agent.Answer{ApprovalID: a.ApprovalID, Text: a.Text, Approved: a.Approved, Plan: a.Plan, By: a.By, Token: a.Token}
	case status == agent.RunCanceled:
		sp.kind = kindResume
	case status == agent.RunAnswered:
		// Answered before the crash; only its record and last events did
		// not say so.
		return false, s.endAnswered(ctx, rec, sp.chat, st)
	default:
		// It ended before the crash; only its record did not say so.
		end, msg := runstore.Interrupted, ""
		if status != agent.RunInterrupted {
			end, msg = runstore.Failed, "the run failed before the server restarted"
		}
		return false, s.endRecord(ctx, rec, end, msg)
	}
	return true, nil
}

// claimRecord makes rec this process's: with replicas it was claimed from
// the queue already (claimReady); alone, it is taken from whoever had it
// (this process, for a parked run). false when another process took it.
func (s *Server) claimRecord(ctx context.Context, rec runstore.Record) (bool, error) {
	if s.cluster != nil {
		return true, nil
	}
	_, err := s.records.UpdateRun(ctx, rec.ID, runstore.Update{From: []runstore.Status{runstore.Queued, runstore.Running},
		IfOwner: rec.Owner, Status: runstore.Running, Owner: s.cfg.Instance, Start: true})
	if errors.Is(err, runstore.ErrConflict) {
		return false, nil
	}
	return err == nil, err
}

// neighbours reads the thread's other run records around rec: the kinds
// of those made after it, and the status of the one made just before it
// ("" when none).
func (s *Server) neighbours(ctx context.Context, rec runstore.Record) (later []runKind, before runstore.Status, err error) {
	f := runstore.Filter{Thread: rec.Thread, Limit: recoverPage}
	for {
		recs, err := s.records.ListRuns(ctx, f)
		if err != nil {
			return nil, "", err
		}
		for _, o := range recs { // newest first
			switch {
			case o.Seq > rec.Seq:
				var in runInput
				_ = json.Unmarshal(o.Input, &in)
				later = append(later, in.Kind)
			case o.Seq < rec.Seq:
				return later, o.Status, nil
			}
		}
		if len(recs) < recoverPage {
			return later, "", nil
		}
		f.Before = recs[len(recs)-1].Seq
	}
}

// behindCanceled reports whether the run recorded just before rec on its
// thread was canceled on request.
func (s *Server) behindCanceled(ctx context.Context, rec runstore.Record) bool {
	_, before, err := s.neighbours(ctx, rec)
	return err == nil && before == runstore.Canceled
}

// hasOpenRecord reports whether the thread has a run record that has not
// ended.
// or, with replicas claiming every TTL/3, whose last run was canceled on
// request (a cancel is not undone a moment later; a process alone resumes
// a canceled run at its start, as before).
func (s *Server) hasOpenRecord(ctx context.Context, thread string) (bool, error) {
	recs, err := s.records.ListRuns(ctx, runstore.Filter{Thread: thread, Limit: 1})
	if len(recs) == 0 {
		return false, err
	}
	return !recs[0].Status.Terminal() || s.cluster != nil && recs[0].Status == runstore.Canceled, err
}

// endAnswered ends the record of a run whose turn was answered before a
// crash cut its process, with what the run's followers need: with
// replicas, the answer and the end as the run's last stored events (its
// replica may have died before storing them, and a client following the
// run from another replica would see it end without its answer); for a
// Chat Completions request, the answer a repetition of it gets.
func (s *Server) endAnswered(ctx context.Context, rec runstore.Record, chat bool, st state.State) error {
	m, ok := st.LastAssistant()
	ok = ok && m.Turn == st.Turn.Number
	if s.cluster != nil {
		var evs []runstore.Event
		stored, err := s.cluster.ev.ListRunEvents(ctx, rec.ID, 0)
		if err != nil {
			return err
		}
		last, ended, told := 0, false, false
		for _, e := range stored {
			var ev agent.Event
			if json.Unmarshal(e.Data, &ev) == nil {
				ended = ended || ev.Type == agent.EventDone
				told = told || ev.Type == agent.EventMessage
			}
			last = e.Seq
		}
		add := func(ev agent.Event) {
			last += resumeSeqGap
			ev.Seq, ev.RunID, ev.Thread, ev.Time = last, rec.ID, rec.Thread, s.cfg.Now()
			if b, err := json.Marshal(ev); err == nil {
				evs = append(evs, runstore.Event{Seq: ev.Seq, Data: b})
			}
		}
		if ok && !told && !ended {
			add(agent.Event{Type: agent.EventMessage, Message: &m})
		}
		if !ended {
			add(agent.Event{Type: agent.EventDone, Status: agent.RunAnswered})
		}
		if len(evs) > 0 {
			if err := s.cluster.ev.AppendRunEvents(ctx, rec.ID, evs); err != nil {
				return err
			}
		}
	}
	u := runstore.Update{From: []runstore.Status{runstore.Queued, runstore.Running}, IfOwner: rec.Owner, Status: runstore.Done}
	if chat && ok {
		res := runResult{Content: m.Content}
		if rec.Labels[labelSource] == mcphttp.Source {
			res = runResult{MCP: &mcphttp.Result{Status: agent.RunAnswered, Text: m.Content}}
		}
		if b, err := json.Marshal(res); err == nil {
			u.Result = b
		}
	}
	if _, err := s.records.UpdateRun(ctx, rec.ID, u); err != nil && !errors.Is(err, runstore.ErrConflict) {
		return err
	}
	if s.cluster != nil {
		s.signal(runstore.SignalEvents, rec.ID)
	}
	return nil
}

// endRecord gives a record its final status, if no other process took it,
// and ends its run when it waits parked in this process.
func (s *Server) endRecord(ctx context.Context, rec runstore.Record, st runstore.Status, msg string) error {
	_, err := s.records.UpdateRun(ctx, rec.ID, runstore.Update{From: []runstore.Status{runstore.Queued, runstore.Running},
		IfOwner: rec.Owner, Status: st, Error: msg})
	if errors.Is(err, runstore.ErrConflict) {
		return nil
	}
	if err == nil {
		s.endParkedAs(rec.ID, recordStatus(st), msg)
	}
	return err
}

// stillPendingID reports whether the thread waits for the approval id.
func (s *Server) stillPendingID(ctx context.Context, thread, id string) bool {
	if pl := s.features.approvals; pl != nil {
		aps, err := pl.PendingApprovals(ctx, thread)
		return err == nil && slices.ContainsFunc(aps, func(a state.Approval) bool { return a.ID == id })
	}
	st, _, err := s.cfg.Runner.State(ctx, thread)
	return err == nil && st.Turn.PendingApproval != nil && st.Turn.PendingApproval.ID == id
}

// callerOf is the caller a run record names, with the principal's current
// permissions when the key is still configured.
func (s *Server) callerOf(labels map[string]string) caller {
	c := caller{Principal: Principal{Name: labels[labelOwner], Tenant: labels[labelTenant]}, User: labels[labelUser]}
	for _, p := range s.keys.principals {
		if p.Name == c.Principal.Name && p.Tenant == c.Principal.Tenant {
			c.Principal = p
		}
	}
	if len(s.keys.principals) == 0 && c.Principal.Name == anonymous.Name && c.Principal.Tenant == anonymous.Tenant {
		c.Principal = anonymous
	}
	return c
}

// recoverLoop calls RecoverRuns every Config.RecoverEvery until ctx is
// done, logging what it resumed and what failed.
func (s *Server) recoverLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.RecoverEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		threads, err := s.RecoverRuns(ctx)
		if len(threads) > 0 {
			s.cfg.Logger.Info("took over cut runs", "threads", threads)
		}
		if err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("recovering cut runs", "error", err)
		}
	}
}

// ownerOf reads who owns an internal thread from its metadata; a thread
// whose id does not derive from that owner and client id (not created
// through this server) gets the recovery principal and its own id.
func (s *Server) ownerOf(ctx context.Context, thread string) (caller, string) {
	none := caller{Principal: Principal{Name: recoveryPrincipal, Tenant: "default"}}
	st, _, err := s.cfg.Runner.State(ctx, thread)
	if err != nil {
		return none, thread
	}
	md := st.Metadata
	c := caller{Principal: Principal{Name: md[metaOwner], Tenant: md[metaTenant]}, User: md[metaUser]}
	for _, p := range s.keys.principals {
		if p.Name == c.Principal.Name && p.Tenant == c.Principal.Tenant {
			c.Principal = p
		}
	}
	if len(s.keys.principals) == 0 && c.Principal.Name == anonymous.Name && c.Principal.Tenant == anonymous.Tenant {
		c.Principal = anonymous
	}
	id := md[metaThread]
	if c.Principal.Name == "" || id == "" || internalThreadID(c, id) != thread {
		return none, thread
	}
	return c, id
}
