package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/state"
)

// Every attempt of a side-effecting step is a durable audit record in the
// checkpoint store's record log (checkpoint.RecordLog, kind "audit"):
// refused (and why), approved (by whom), rejected, executed (with the
// capability's output: old → new, readback) or failed. The records are
// written by the step wrapper itself, so every path that executes a step —
// a server run, the command line, RecoverRuns, another replica — writes
// them. An approval is recorded before its step runs; a step whose approval
// cannot be recorded does not run.

// recordKindAudit is the checkpoint.Record kind of audit records.
const recordKindAudit = "audit"

// Audit outcomes.
const (
	AuditRefused  = "refused"
	AuditApproved = "approved"
	AuditRejected = "rejected"
	AuditExecuted = "executed"
	AuditFailed   = "failed"
)

// The metadata keys a frontend sets on a turn (TurnRequest.Metadata) to
// name who runs it; the audit record copies them.
const (
	MetaOwner  = "owner"  // the principal (API key) name
	MetaTenant = "tenant" // the principal's tenant
	MetaUser   = "user"   // the end user a trusted frontend forwarded
)

// AuditRecord is one attempt of a side-effecting step, as the audit log
// keeps it (the record's JSON data).
type AuditRecord struct {
	Time time.Time `json:"time"`
	// Outcome is refused, approved, rejected, executed or failed.
	Outcome string `json:"outcome"`
	// Reason is the refusal reason (Refused* constants), or the error kind
	// of a failure.
	Reason string `json:"reason,omitempty"`
	// Message says what happened, for a human.
	Message string `json:"message,omitempty"`

	Capability string `json:"capability"`
	// Summary, Changes and Digest describe the action (empty when it
	// could not be described).
	Summary string                `json:"summary,omitempty"`
	Changes []capabilities.Change `json:"changes,omitempty"`
	Digest  string                `json:"digest,omitempty"`

	Principal string `json:"principal,omitempty"`
	Tenant    string `json:"tenant,omitempty"`
	User      string `json:"user,omitempty"`
	Thread    string `json:"thread"`
	// Run is the caller's id of the run (the server's run id, WithRunID).
	Run    string `json:"run,omitempty"`
	TurnID string `json:"turn_id,omitempty"`
	Turn   int    `json:"turn"`
	Plan   int    `json:"plan"`
	// Step is the plan step's index, from 0; Attempt counts from 1.
	Step    int `json:"step"`
	Attempt int `json:"attempt"`
	// IdempotencyKey is the attempt's capabilities.Step.IdempotencyKey.
	IdempotencyKey string `json:"idempotency_key,omitempty"`

	ApprovalID string    `json:"approval_id,omitempty"`
	ApprovedBy string    `json:"approved_by,omitempty"`
	ApprovedAt time.Time `json:"approved_at,omitzero"`

	// Result is the capability's output values (executed): what it
	// changed, from what to what, and the readback it verified.
	Result        json.RawMessage `json:"result,omitempty"`
	ResultSummary string          `json:"result_summary,omitempty"`
	Duration      time.Duration   `json:"duration_ns,omitempty"`
}

func (r *AuditRecord) setAction(a capabilities.Action) {
	if a.Capability == "" {
		return
	}
	r.Summary, r.Changes, r.Digest = a.Summary, a.Changes, a.Digest()
}

type runIDKey struct{}

// WithRunID names the run a Run or Resume call is (the server's run id);
// audit records carry it.
func WithRunID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, runIDKey{}, id)
}

func runIDOf(ctx context.Context) string {
	id, _ := ctx.Value(runIDKey{}).(string)
	return id
}

// auditBase fills who, where and which attempt.
func (a *Agent) auditBase(ctx context.Context, s state.State, capability string, idx int, ps state.PlanStep, attempt int, now time.Time) AuditRecord {
	r := AuditRecord{Time: now, Capability: capability, Thread: threadOf(ctx), Run: runIDOf(ctx), TurnID: s.Turn.ID, Turn: s.Turn.Number,
		Step: idx, Attempt: attempt, Principal: s.Metadata[MetaOwner], Tenant: s.Metadata[MetaTenant], User: s.Metadata[MetaUser]}
	if s.Turn.Plan != nil {
		r.Plan = s.Turn.Plan.Number
		r.IdempotencyKey = fmt.Sprintf("%s/%d/%d/%d/%d", r.Thread, s.Turn.Number, s.Turn.Plan.Number, idx, attempt)
	}
	if g := ps.Grant; g != nil {
		r.ApprovalID, r.ApprovedBy, r.ApprovedAt = g.ApprovalID, g.By, g.At
	}
	return r
}

// auditRecord appends r to the audit log durably.
func (a *Agent) auditRecord(ctx context.Context, r AuditRecord) error {
	if a.cfg.AuditLog == nil {
		return fmt.Errorf("agent: no audit log (the store keeps no records and Config.AuditLog is nil)")
	}
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("agent: encode audit record: %w", err)
	}
	labels := map[string]string{"outcome": r.Outcome, "capability": r.Capability}
	for k, v := range map[string]string{"principal": r.Principal, "tenant": r.Tenant, "approval_id": r.ApprovalID} {
		if v != "" {
			labels[k] = v
		}
	}
	// The record outlives a canceled run: it says what happened.
	_, err = a.cfg.AuditLog.AppendRecords(context.WithoutCancel(ctx), checkpoint.Record{Kind: recordKindAudit, Thread: r.Thread, Time: r.Time, Labels: labels, Data: data})
	if err != nil {
		return fmt.Errorf("agent: write audit record: %w", err)
	}
	emit(ctx, Event{Type: EventAudit, Node: r.Capability, Step: r.Step, Capability: r.Capability, Audit: &r})
	return nil
}

// auditBestEffort appends r; a failure is reported as a status event (the
// outcome it records has happened and stands either way).
func (a *Agent) auditBestEffort(ctx context.Context, r AuditRecord) {
	if err := a.auditRecord(ctx, r); err != nil {
		emit(ctx, Event{Type: EventStatus, Node: r.Capability, Step: r.Step, Capability: r.Capability,
			Text: "the audit record (" + r.Outcome + ") could not be written: " + err.Error()})
	}
}

// AuditFilter narrows Agent.Audit.
type AuditFilter struct {
	Thread    string
	Outcome   string
	Principal string
	Tenant    string
	// Since and Until bound the records' time (Until exclusive).
	Since, Until time.Time
	// Limit keeps the newest Limit records (0: all); they are returned oldest first.
	Limit int
}

// AuditEntry is a stored audit record with its sequence number.
type AuditEntry struct {
	Seq int64 `json:"seq"`
	AuditRecord
}

// Audit lists the audit records f keeps, oldest first.
func (a *Agent) Audit(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	return ListAudit(ctx, a.cfg.AuditLog, f)
}

// ListAudit lists the audit records of a record log (a store opened
// without an agent, as `capgraph audit` does), oldest first.
func ListAudit(ctx context.Context, log checkpoint.RecordLog, f AuditFilter) ([]AuditEntry, error) {
	if log == nil {
		return nil, fmt.Errorf("agent: the store keeps no audit records")
	}
	labels := map[string]string{}
	for k, v := range map[string]string{"outcome": f.Outcome, "principal": f.Principal, "tenant": f.Tenant} {
		if v != "" {
			labels[k] = v
		}
	}
	recs, err := log.Records(ctx, checkpoint.RecordFilter{Kind: recordKindAudit, Thread: f.Thread, Since: f.Since, Until: f.Until,
		Labels: labels, Newest: true, Limit: f.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]AuditEntry, 0, len(recs))
	for i := len(recs) - 1; i >= 0; i-- {
		e := AuditEntry{Seq: recs[i].Seq}
		if err := json.Unmarshal(recs[i].Data, &e.AuditRecord); err != nil {
			return nil, fmt.Errorf("agent: audit record %s: %w", strconv.FormatInt(recs[i].Seq, 10), err)
		}
		out = append(out, e)
	}
	return out, nil
}

// auditExecution records how an executed attempt of a side-effecting step
// ended: executed with the capability's output, or failed.
func (a *Agent) auditExecution(ctx context.Context, s state.State, c capabilities.Capability, idx int, ps state.PlanStep, attempt int,
	action capabilities.Action, out capabilities.Output, err error, took time.Duration, end time.Time) {
	rec := a.auditBase(ctx, s, c.Name(), idx, ps, attempt, end)
	rec.setAction(action)
	rec.Duration = took
	switch {
	case err == nil:
		rec.Outcome = AuditExecuted
		type value struct {
			Type    string `json:"type"`
			Key     string `json:"key,omitempty"`
			Value   any    `json:"value"`
			Summary string `json:"summary,omitempty"`
		}
		vals := make([]value, len(out.Values))
		sums := make([]string, 0, len(out.Values))
		for i, v := range out.Values {
			vals[i] = value{v.Type, v.Key, v.Value, v.Summary}
			if v.Summary != "" {
				sums = append(sums, v.Summary)
			}
		}
		if b, jerr := json.Marshal(vals); jerr == nil {
			rec.Result = b
		}
		rec.ResultSummary = strings.Join(sums, "; ")
	case ctx.Err() != nil:
		rec.Outcome, rec.Reason = AuditFailed, "canceled"
		rec.Message = "the run was canceled while the step ran; when the run resumes it runs again with the same idempotency key"
	default:
		if _, ok := graph.IsInterrupt(err); ok {
			return // the capability asks a human; the attempt goes on after the answer
		}
		cl := capabilities.Classify(c, err, capabilities.ErrorContext{Capability: c.Name(), StepIndex: idx, Attempt: attempt, Task: taskText(s)})
		rec.Outcome, rec.Reason, rec.Message = AuditFailed, cl.Kind, err.Error()
	}
	a.auditBestEffort(ctx, rec)
}

// ParseAuditTime reads a time bound of an audit query: an RFC 3339 time
// ("2026-05-01T12:00:00Z"), a date ("2026-05-01", midnight UTC) or a
// duration before now ("24h", "90m").
func ParseAuditTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%w: %q is not a time: give an RFC 3339 time (2026-05-01T12:00:00Z), a date (2026-05-01) or a duration before now (24h)", ErrBadRequest, s)
}
