package server

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/chatanswer"
	"github.com/capgraph/capgraph/server/internal/mcphttp"
	"github.com/capgraph/capgraph/server/internal/native"
	"github.com/capgraph/capgraph/server/internal/runs"
)

// run is the server's part of a run (package server/internal/runs keeps
// its event log, its followers and its lifecycle): who owns it and how
// its protocol and the replicas see it.
type run struct {
	*runs.Run[*run]
	Owner caller
	// pub stores the events for other replicas (nil without a cluster).
	pub *publisher
	// chat renders the events as the Chat Completions answer the run's
	// record keeps for repeated requests (nil for other protocols).
	chat *chatanswer.Renderer
	// mcp: the record keeps the answer as MCP's ask tool gives it
	// instead (a call with a request_id).
	mcp bool
	// answering is the approval an answer's run carries out, beside the
	// approvals pending with it (storedAnswer.Beside), for an answer to
	// one of them that arrives before the run's record is read.
	answering string
	beside    []string

	mu sync.Mutex
	// implicitKey is the run's record key when it was derived from the
	// request (a repeat is a retry only until an answer was delivered),
	// and recStatus the status finishRecord wrote.
	implicitKey string
	recStatus   runstore.Status
}

// runManager is the run manager of package server/internal/runs, holding
// the server's runs.
type runManager = runs.Manager[*run]

// newRunManager makes the server's run manager: its limits, and the
// server's parts of a run's agent call (runHooks).
func newRunManager(s *Server) *runManager {
	d := runs.Deps[*run]{Hooks: runHooks{s}, Logger: s.cfg.Logger, Now: s.cfg.Now,
		MaxConcurrentRuns: s.cfg.MaxConcurrentRuns, MaxTotalRuns: s.cfg.MaxTotalRuns, EventLogSize: s.cfg.EventLogSize,
		DetachGrace: s.cfg.DetachGrace, TurnTimeout: s.cfg.TurnTimeout, ParkAfter: s.cfg.ParkAfter}
	if s.cluster != nil {
		d.Replicas, d.LeaseTTL = true, s.cluster.ttl
	}
	return runs.New(d)
}

// runSpecOf is what the run manager registers of sp.
func runSpecOf(sp runSpec) runs.Spec {
	c := sp.c
	return runs.Spec{ID: sp.id, Thread: sp.thread, ClientThread: sp.clientThread, Origin: sp.origin, Started: sp.started,
		OwnerKey: ownerKey(c), LimitKey: c.key(), Limit: c.Principal.MaxConcurrentRuns, Trace: c.Trace,
		Log: []any{"principal", c.Principal.Name, "tenant", c.Principal.Tenant}}
}

// reserve registers a run of sp (limits and one run per thread checked)
// without starting it (runs.Manager.Reserve).
func (s *Server) reserve(sp runSpec) (*run, error) {
	return s.runs.Reserve(runSpecOf(sp), func(core *runs.Run[*run]) *run {
		r := &run{Run: core, Owner: sp.c}
		if sp.chat {
			r.chat = &chatanswer.Renderer{}
			r.mcp = sp.source == mcphttp.Source
		}
		if strings.HasPrefix(sp.key, implicitKeyPrefix) {
			r.implicitKey = sp.key
		}
		if sp.kind == kindAnswer && sp.answer != nil {
			r.answering, r.beside = sp.answer.ApprovalID, sp.beside
		}
		return r
	})
}

// runHooks are the server's parts of a run's agent call.
type runHooks struct{ s *Server }

// Begin makes a run of a process with replicas theirs to follow: its
// lease held, its events published, numbered on from those the replica
// that ran it before stored. Its events are audited, rendered for its
// record and published (runObserver).
func (h runHooks) Begin(ctx context.Context, r *run) runs.Observer {
	s := h.s
	if s.cluster != nil {
		if r.Origin == runs.FromRecord {
			if last := s.lastEventSeq(ctx, r.ID); last > 0 {
				// Events the replica that ran it before sent to its
				// clients but did not store yet are skipped over, so a
				// client reconnecting with the last id it saw gets this
				// attempt's events.
				r.NumberFrom(last + resumeSeqGap)
			}
		}
		s.background.Go(func(context.Context) { s.holdLease(r) })
		r.pub = s.newPublisher(r)
	}
	return runObserver{r: r, aud: newAuditor(s, r)}
}

// Park handles r, whose agent call ended parked until until (park.go).
func (h runHooks) Park(r *run, until time.Time) { h.s.park(r, until) }

// Settle writes the run's record; with replicas, after its events are
// stored, and then the replicas following it are told.
func (h runHooks) Settle(r *run, status agent.RunStatus, runErr error, shutdown bool) {
	s := h.s
	if r.pub != nil {
		r.pub.close()
	}
	s.finishRecord(r, status, runErr, shutdown)
	if s.cluster != nil {
		s.signal(runstore.SignalEvents, r.ID)
	}
}

// ThreadFreed lets a queued answer go on (answers.go).
func (h runHooks) ThreadFreed(thread string) { h.s.afterRun(thread) }

// HandedBack follows the run in the store: whoever runs it next, the
// requests following it here follow it from there.
func (h runHooks) HandedBack(r *run) { h.s.startTail(r) }

// runObserver audits a run's events, renders them for its record and
// publishes them to the replicas.
type runObserver struct {
	r   *run
	aud *auditor
}

// Action copies an action to the server's audit log; clients see the
// outcomes only, without who or the approval id (outcomes.go).
func (o runObserver) Action(ctx context.Context, rec *agent.AuditRecord) *agent.AuditRecord {
	o.aud.action(ctx, rec)
	return publicOutcome(rec)
}

func (o runObserver) Observe(ctx context.Context, ev agent.Event) {
	o.aud.observe(ctx, ev)
	if o.r.chat != nil {
		o.r.chat.Render(ev)
	}
}

func (o runObserver) Logged(ev agent.Event) {
	if o.r.pub != nil {
		o.r.pub.add(ev)
	}
}

func (o runObserver) Finish(ctx context.Context, status agent.RunStatus, now time.Time) {
	o.aud.finish(ctx, status, now)
}

// result is what the run's record keeps for a repeated Chat Completions
// request: the answer as the first request got it, or its failure when
// the server was at fault. msg is the client's message of runErr.
func (r *run) recordResult(s *Server, status agent.RunStatus, runErr error, msg string, shutdown bool) *runResult {
	if r.chat == nil {
		return nil
	}
	if r.mcp {
		res := mcphttp.ResultOf(r.chat, status, runErr, msg, shutdown)
		return &runResult{MCP: &res}
	}
	if runErr != nil && !chatanswer.Answerable(runErr) {
		st, _, code, _ := apierror.Status(runErr)
		return &runResult{Failure: &runFailure{Status: st, Code: code, Message: msg}}
	}
	rd := r.chat
	content := rd.Content.String()
	if runErr != nil {
		content = chatanswer.Join(content, msg)
	}
	if rd.Approval != nil && status == agent.RunInterrupted {
		content += chatanswer.ApprovalText(rd.Approval, approvalToken(ownerKey(r.Owner), r.Thread, *rd.Approval), rd.Content.Len() > 0)
	}
	content += chatanswer.EndNote(status, shutdown)
	u := rd.Usage
	return &runResult{Content: content, Reasoning: rd.Reasoning.String(), Usage: &u}
}

// Info is the run as the native API shows it.
func (r *run) Info() native.RunInfo {
	sn := r.Snapshot()
	ri := native.RunInfo{ID: r.ID, Thread: r.ClientThread, Started: sn.Started, Finished: sn.Finished, Status: sn.Status, LastSeq: sn.LastSeq}
	if sn.Err != nil {
		ri.Error = sn.Err.Error()
	}
	return ri
}

// resumeSeqGap is how far a run resumed on another replica numbers its
// events beyond the last stored one (runHooks.Begin).
const resumeSeqGap = 1000
