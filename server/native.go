package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/native"
	"github.com/capgraph/capgraph/server/internal/turns"
	"github.com/capgraph/capgraph/state"
)

// The native API: threads and runs as JSON, run events as SSE with ids for
// reconnection. Its routes are package native's; they reach the server
// through serverNative (and serverTimeTravel, timetravel.go).

// serverNative is the server as the native API's package sees it
// (native.Threads, native.Runs, native.Approvals): the caller is the
// request's. The runs it is handed back are the ones it gave (*run).
type serverNative struct{ s *Server }

var (
	_ native.Threads   = serverNative{}
	_ native.Runs      = serverNative{}
	_ native.Approvals = serverNative{}
)

func (n serverNative) FindThread(ctx context.Context, id string) (native.Thread, bool, error) {
	th, found, err := n.s.findThread(ctx, callerFrom(ctx), id)
	return th.Thread, found, err
}

func (n serverNative) Status(ctx context.Context, th native.Thread) string {
	return n.s.threadStatus(ctx, th.Internal)
}

func (n serverNative) CreateThread(ctx context.Context, id string, meta map[string]string) (native.Thread, bool, error) {
	if err := n.s.checkMetadata(meta); err != nil {
		return native.Thread{}, false, err
	}
	th, created, err := n.s.openThread(ctx, callerFrom(ctx), id, "native", meta)
	return th.Thread, created, err
}

func (n serverNative) ListThreads(ctx context.Context, limit int, cursor string) ([]native.Thread, string, error) {
	ths, next, err := n.s.listThreads(ctx, callerFrom(ctx), page{limit: limit, cursor: cursor})
	if err != nil {
		return nil, "", err
	}
	out := make([]native.Thread, len(ths))
	for i := range ths {
		out[i] = ths[i].Thread
	}
	return out, next, nil
}

// DeleteThread deletes a thread the store may not have (created, never
// run): that is no error.
func (n serverNative) DeleteThread(ctx context.Context, th native.Thread) error {
	s, c := n.s, callerFrom(ctx)
	if ru, busy := s.runs.ActiveOn(th.Internal); busy {
		return &apierror.RequestError{Kind: apierror.ErrRunInProgress, Message: "run " + ru.ID + " is still running; cancel it first"}
	}
	if err := s.cfg.Runner.DeleteThread(ctx, th.Internal); err != nil && !errors.Is(err, agent.ErrUnknownThread) {
		return err
	}
	if err := s.records.DeleteRuns(ctx, th.Internal); err != nil {
		return err
	}
	s.threads.delete(c, th.ID)
	s.counts.release(ownerKey(c))
	s.transcripts.Forget(th.Internal)
	return nil
}

func (n serverNative) ThreadState(ctx context.Context, thread string) (state.State, agent.RunStatus, error) {
	return n.s.cfg.Runner.State(ctx, thread)
}

func (n serverNative) WriteError(w http.ResponseWriter, err error) { n.s.writeError(w, err) }

// threadStatus is the status of a thread's latest run: running while a
// run of this process goes on, else the status of its latest checkpoint,
// read through the agent (one store read). A thread created but never run
// has none.
func (s *Server) threadStatus(ctx context.Context, thread string) string {
	if _, busy := s.runs.ActiveOn(thread); busy {
		return "running"
	}
	if st, status, err := s.cfg.Runner.State(ctx, thread); err == nil && st.Turn.Number > 0 {
		return string(status)
	}
	return ""
}

// Admit decides whether an answer to approval id may be carried out: now
// (the thread waits for it; beside are the approvals pending with it), or
// queued (it is pending beside an answer being carried out). Otherwise
// the error says why not (checkPending).
func (n serverNative) Admit(ctx context.Context, th native.Thread, id string) (beside []string, queue bool, err error) {
	s := n.s
	err = s.checkPending(ctx, th.Internal, id)
	if err == nil {
		if pl := s.features.approvals; pl != nil {
			aps, perr := pl.PendingApprovals(ctx, th.Internal)
			if perr != nil {
				return nil, false, perr
			}
			for _, ap := range aps {
				if ap.ID != id {
					beside = append(beside, ap.ID)
				}
			}
		}
		return beside, false, nil
	}
	var re *apierror.RequestError
	if !errors.As(err, &re) {
		return nil, false, err
	}
	// Queued only while a run goes on (the thread stands between two
	// steps), for an approval not answered already.
	st, status, serr := s.cfg.Runner.State(ctx, th.Internal)
	if _, busy := s.runs.ActiveOn(th.Internal); serr != nil || !busy && status != agent.RunCanceled ||
		slices.ContainsFunc(st.Turn.Approvals, func(d state.ApprovalDecision) bool { return d.ID == id }) {
		return nil, false, err
	}
	beside, queue, qerr := s.queueable(ctx, th.Internal, id)
	if qerr != nil {
		return nil, false, qerr
	}
	if !queue {
		return nil, false, err
	}
	return beside, true, nil
}

func (n serverNative) Queueable(ctx context.Context, th native.Thread, id string) ([]string, bool) {
	beside, queue, _ := n.s.queueable(ctx, th.Internal, id)
	return beside, queue
}

func (n serverNative) Queue(ctx context.Context, sp turns.Spec, key string) (native.RunInfo, *runstore.Record, error) {
	rs := protocolSpec(callerFrom(ctx), sp)
	rs.key = key
	rec, dup, err := n.s.queueAnswer(ctx, rs)
	if err != nil {
		return native.RunInfo{}, nil, err
	}
	if dup != nil {
		if err := sameRequest(*dup, rs.requestDigest()); err != nil {
			return native.RunInfo{}, nil, err
		}
	}
	return recordInfo(rec), dup, nil
}

// checkPending makes sure the thread waits for this approval (one of the
// approvals it waits for), so a repeated answer cannot resume (and
// execute) twice: once answered, the approval is no longer pending.
func (s *Server) checkPending(ctx context.Context, thread, id string) error {
	if _, busy := s.runs.ActiveOn(thread); busy {
		return &apierror.RequestError{Kind: apierror.ErrRunInProgress, Message: "a run is in progress on this thread"}
	}
	st, status, err := s.cfg.Runner.State(ctx, thread)
	if errors.Is(err, agent.ErrUnknownThread) {
		return &apierror.RequestError{Kind: apierror.ErrConflict, Param: "approval_id", Message: "the thread has no pending approval"}
	}
	if err != nil {
		return err
	}
	if i := slices.IndexFunc(st.Turn.Approvals, func(d state.ApprovalDecision) bool { return d.ID == id }); i >= 0 {
		// Answered before (here or on another replica): say so, rather
		// than only that it is not pending.
		d := st.Turn.Approvals[i]
		verdict := "rejected"
		if d.Approved {
			verdict = "approved"
		}
		if d.By != "" {
			verdict += " by " + d.By
		}
		return &apierror.RequestError{Kind: apierror.ErrConflict, Param: "approval_id", Message: fmt.Sprintf("approval %q was already answered (%s at %s); an answer is carried out once",
			id, verdict, d.At.UTC().Format(time.RFC3339))}
	}
	if status != agent.RunInterrupted {
		return &apierror.RequestError{Kind: apierror.ErrConflict, Param: "approval_id", Message: fmt.Sprintf("approval %q is not pending on this thread (status %s)", id, status)}
	}
	// Any of the approvals the run waits for (concurrent steps each ask):
	// they are answered independently, in any order.
	if !s.stillPendingID(ctx, thread, id) {
		return &apierror.RequestError{Kind: apierror.ErrConflict, Param: "approval_id", Message: fmt.Sprintf("approval %q is not pending on this thread", id)}
	}
	return nil
}

// FindRun finds the caller's run id on its thread thread: a run of this
// process, else its record.
func (n serverNative) FindRun(ctx context.Context, thread, id string) (native.Found, bool, error) {
	s, c := n.s, callerFrom(ctx)
	if ru, ok := s.runs.Get(ownerKey(c), id); ok {
		if ru.ClientThread != thread {
			return native.Found{}, false, nil
		}
		return native.Found{Live: ru}, true, nil
	}
	if len(id) > 64 {
		return native.Found{}, false, nil
	}
	rec, err := s.records.GetRun(ctx, id)
	if errors.Is(err, runstore.ErrNotFound) {
		return native.Found{}, false, nil
	}
	if err != nil {
		return native.Found{}, false, err
	}
	if rec.Thread != internalThreadID(c, thread) || !recordOf(c, rec) {
		return native.Found{}, false, nil
	}
	return native.Found{Record: rec, Info: recordInfo(rec)}, true, nil
}

// recordOf reports whether c made the recorded run.
func recordOf(c caller, rec runstore.Record) bool {
	l := rec.Labels
	return l[labelOwner] == c.Principal.Name && l[labelTenant] == c.Principal.Tenant && l[labelUser] == c.User
}

func (n serverNative) Mirror(ctx context.Context, rec runstore.Record) native.Run {
	if ru := n.s.mirror(ctx, callerFrom(ctx), rec); ru != nil {
		return ru
	}
	return nil
}

func (n serverNative) Cancel(ctx context.Context, ru native.Run) error {
	return n.s.cancelAnywhere(ctx, ru.(*run))
}

// ListRuns lists the thread's runs from their records, newest first.
func (n serverNative) ListRuns(ctx context.Context, th turns.Thread, limit int, before int64) ([]native.RunInfo, string, error) {
	s, c := n.s, callerFrom(ctx)
	f := runstore.Filter{Thread: th.Internal, Limit: limit, Before: before,
		Labels: map[string]string{labelOwner: c.Principal.Name, labelTenant: c.Principal.Tenant, labelUser: c.User}}
	recs, err := s.records.ListRuns(ctx, f)
	if err != nil {
		return nil, "", err
	}
	out := make([]native.RunInfo, 0, len(recs))
	for _, rec := range recs {
		if ru, ok := s.runs.ByID(rec.ID); ok {
			out = append(out, ru.Info())
			continue
		}
		out = append(out, recordInfo(rec))
	}
	next := ""
	if len(recs) == limit {
		next = strconv.FormatInt(recs[len(recs)-1].Seq, 10)
	}
	return out, next, nil
}

func (n serverNative) Page(r *http.Request) (int, string, error) {
	p, err := n.s.pageOf(r)
	return p.limit, p.cursor, err
}

func (n serverNative) RecordInfo(rec runstore.Record) native.RunInfo { return recordInfo(rec) }

// nativeStreams is how the native API writes this server's event streams.
func (s *Server) nativeStreams() native.Streams {
	return native.Streams{Now: s.cfg.Now, WriteTimeout: s.cfg.StreamWriteTimeout, Heartbeat: s.cfg.Heartbeat, PublicMessage: s.publicMessage}
}
