package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"sync"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

// The server's audit log (Config.Audit; `server.audit_log` makes
// `capgraph serve` write it to a file) holds records of one type,
// agent.AuditRecord, in one vocabulary: the agent's records of every
// side-effecting attempt (planned … started, ended with its outcome; the
// store keeps them too and stays the record of truth), and one record with
// event agent.AuditStep for every attempt of every capability step the
// server ran, reads included (see auditor below).

// AuditLog receives the audit records. Record must be safe for concurrent
// use; a failure is logged, never fatal to the run.
type AuditLog interface {
	Record(ctx context.Context, r agent.AuditRecord) error
}

type nopAudit struct{}

func (nopAudit) Record(context.Context, agent.AuditRecord) error { return nil }

// JSONLAudit writes one JSON object per line to W.
type JSONLAudit struct {
	mu sync.Mutex
	w  io.Writer
	c  io.Closer
}

// OpenJSONLAuditFile appends JSON lines to the file at path (created with
// mode 0600 if missing). Close it when the server has stopped.
func OpenJSONLAuditFile(path string) (*JSONLAudit, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return &JSONLAudit{w: f, c: f}, nil
}

// Close closes the file of OpenJSONLAuditFile; for NewJSONLAudit it does
// nothing (the caller owns the writer).
func (a *JSONLAudit) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.c == nil {
		return nil
	}
	return a.c.Close()
}

// NewJSONLAudit returns an AuditLog writing JSON lines to w (a file opened
// with O_APPEND, say).
func NewJSONLAudit(w io.Writer) *JSONLAudit { return &JSONLAudit{w: w} }

// Record writes r as one line.
func (a *JSONLAudit) Record(_ context.Context, r agent.AuditRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	_, err = a.w.Write(b)
	return err
}

// argsDigest hashes what a step was asked to do.
func argsDigest(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte("unserialisable")
	}
	d := sha256.Sum256(b)
	return hex.EncodeToString(d[:])
}

// auditor turns step events into audit records (agent.AuditRecord, event
// agent.AuditStep): one per attempt of a capability (retries and fallbacks
// included), written when the attempt ends, or when the run ends with the
// attempt still open (the run was canceled, stopped, or the capability
// asked for approval mid-way). It also copies the agent's own records of
// side-effecting attempts to the log, and gives a step record the outcome
// its attempt's ended record says.
type auditor struct {
	s    *Server
	r    *run
	plan *state.Plan
	open map[int]agent.Event // step index → its step_start
	// outcomes are the outcomes the agent recorded, by attempt.
	outcomes map[attemptKey]capabilities.Outcome
}

type attemptKey struct {
	step       int
	capability string
	attempt    int
}

func newAuditor(s *Server, r *run) *auditor {
	return &auditor{s: s, r: r, open: map[int]agent.Event{}, outcomes: map[attemptKey]capabilities.Outcome{}}
}

func (a *auditor) observe(ctx context.Context, ev agent.Event) {
	switch ev.Type {
	case agent.EventPlan:
		a.plan = ev.Plan
	case agent.EventStepStart:
		a.open[ev.Step] = ev
	case agent.EventDenied:
		// Not an execution: the capability was refused before it ran (the
		// principal may not use it, or the gate refused the change).
		// Audited so refusals can be reviewed.
		rec := a.record(ctx, ev)
		rec.Outcome, rec.Message = capabilities.OutcomeRefused, ev.Text
		a.write(ctx, rec)
	case agent.EventStepEnd:
		rec := a.record(ctx, ev)
		rec.Duration = ev.Duration
		if st, ok := a.open[ev.Step]; ok && rec.Duration == 0 {
			rec.Duration = ev.Time.Sub(st.Time)
		}
		delete(a.open, ev.Step)
		if ev.Err != "" {
			rec.Outcome, rec.Message = capabilities.OutcomeFailed, ev.Err
		}
		if o, ok := a.outcomes[attemptKey{ev.Step, ev.Capability, ev.Attempt}]; ok {
			rec.Outcome = o // the side-effecting attempt's own outcome
		}
		a.write(ctx, rec)
	}
}

// finish records the attempts still open when the run ended.
func (a *auditor) finish(ctx context.Context, status agent.RunStatus, now time.Time) {
	for _, st := range a.open {
		rec := a.record(ctx, st)
		rec.Time, rec.Duration = now, now.Sub(st.Time)
		rec.Reason, rec.Message = "canceled", "the run was canceled or stopped during this attempt; a resume settles it"
		if status == agent.RunInterrupted {
			rec.Reason, rec.Message = "interrupted", "the capability asked a human before it went on"
		}
		a.write(context.WithoutCancel(ctx), rec)
	}
	clear(a.open)
}

// record fills who, where, what and with which arguments for a step event.
func (a *auditor) record(ctx context.Context, ev agent.Event) agent.AuditRecord {
	rec := agent.AuditRecord{Event: agent.AuditStep, Time: ev.Time, Tenant: a.r.Owner.Principal.Tenant, Principal: a.r.Owner.Principal.Name,
		User: a.r.Owner.User, Thread: a.r.Thread, Run: a.r.ID, Capability: ev.Capability, Step: ev.Step, Attempt: ev.Attempt}
	if a.plan == nil {
		// A resumed run did not see the plan event: take the plan from
		// the checkpointed state.
		if st, _, err := a.s.cfg.Runner.State(context.WithoutCancel(ctx), a.r.Thread); err == nil {
			a.plan = st.Turn.Plan
		}
	}
	var args any
	if a.plan != nil {
		rec.Plan = a.plan.Number
	}
	if a.plan != nil && ev.Step >= 0 && ev.Step < len(a.plan.Steps) {
		st := a.plan.Steps[ev.Step]
		args = map[string]any{"parameters": st.Parameters, "inputs": st.Inputs}
		if rec.Capability == "" {
			rec.Capability = st.Effective()
		}
		if st.Capability != rec.Capability {
			rec.PlannedCapability = st.Capability // a fallback stood in
		}
	}
	rec.Digest = argsDigest(args)
	return rec
}

// action copies an audit record of a side-effecting attempt to the audit
// log, and keeps its outcome for the attempt's step record.
func (a *auditor) action(ctx context.Context, rec *agent.AuditRecord) {
	if rec == nil {
		return
	}
	if rec.Outcome != "" {
		a.outcomes[attemptKey{rec.Step, rec.Capability, rec.Attempt}] = rec.Outcome
	}
	a.write(context.WithoutCancel(ctx), *rec)
}

func (a *auditor) write(ctx context.Context, rec agent.AuditRecord) {
	if err := a.s.cfg.Audit.Record(ctx, rec); err != nil {
		a.s.cfg.Logger.Error("audit log write failed", "error", err, "run", a.r.ID)
	}
}
