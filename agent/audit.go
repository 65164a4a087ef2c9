package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/state"
)

// Every attempt of a side-effecting step is a sequence of durable audit
// records in the checkpoint store's record log (checkpoint.RecordLog, kind
// "audit"), in one vocabulary (the Audit* events below, the outcome a
// capabilities.Outcome): planned, unrequested, refused (and why), asked,
// unclear (an answer that decided nothing, in the human's words),
// approved or rejected (by whom, by which rule, in the human's words),
// expired, started — written before the capability is called, the
// write-ahead record that keeps a crash from running a change twice — and
// ended (the outcome, with the readback). The records are written by the
// step wrapper itself, so every path that executes a step — a server run,
// the command line, RecoverRuns, another replica — writes them. A step whose
// approval or start cannot be recorded does not run.

// recordKindAudit is the checkpoint.Record kind of audit records.
const recordKindAudit = "audit"

// Audit events: what a record says happened.
const (
	// AuditPlanned: a plan holding a side-effecting step was accepted.
	AuditPlanned = "planned"
	// AuditUnrequested: a plan step was refused at planning because the
	// user did not ask for that change (outcome unrequested).
	AuditUnrequested = "unrequested"
	// AuditRefused: the step was refused where it executes (outcome refused).
	AuditRefused = "refused"
	// AuditAsked: a human was asked to approve the action (Before holds the
	// machine state the question showed).
	AuditAsked = "asked"
	// AuditUnclear: a human's answer that decides nothing (neither a yes
	// nor a no; ApprovedBy is who answered, Rule and Answer how it was
	// read and what it said): the approval stays pending, asked again.
	AuditUnclear = "unclear"
	// AuditApproved and AuditRejected: a human's answer (ApprovedBy, Rule,
	// Answer).
	AuditApproved = "approved"
	AuditRejected = "rejected"
	// AuditExpired: the approval's time ran out before a human answered.
	AuditExpired = "expired"
	// AuditStarted: the capability is about to be called. Written, durably,
	// before it is: an attempt with a started record and no ended one is in
	// doubt, and is reconciled, never called again blind.
	AuditStarted = "started"
	// AuditEnded: the attempt's outcome (Outcome; Readback, Result).
	AuditEnded = "ended"
)

// AuditStep: one attempt of a capability step, of any capability, as a
// server ran it. A server writes these to its audit log (server.AuditLog)
// beside the records above; the store does not keep them. Outcome is the
// side-effecting attempt's (from its ended record), failed for an attempt
// that ended in an error, refused for a capability the caller may not use,
// and empty for a step that changes nothing and ended without error;
// Reason is "canceled" or "interrupted" for an attempt the run left open.
const AuditStep = "step"

// AuditEvents lists the audit events in the order an attempt meets them.
var AuditEvents = []string{AuditPlanned, AuditUnrequested, AuditRefused, AuditAsked, AuditUnclear, AuditApproved, AuditRejected, AuditExpired, AuditStarted, AuditEnded}

// The metadata keys a frontend sets on a turn (TurnRequest.Metadata) to
// name who runs it; the audit record copies them.
const (
	MetaOwner  = "owner"  // the principal (API key) name
	MetaTenant = "tenant" // the principal's tenant
	MetaUser   = "user"   // the end user a trusted frontend forwarded
)

// AuditRecord is one event of an attempt of a side-effecting step, as the
// audit log keeps it (the record's JSON data).
type AuditRecord struct {
	Time time.Time `json:"time"`
	// Event is what happened (Audit* events).
	Event string `json:"event"`
	// Outcome is set on the records that end an attempt: refused,
	// unrequested, and ended (failed, confirmed, mismatch, unconfirmed).
	Outcome capabilities.Outcome `json:"outcome,omitempty"`
	// Reason is the refusal reason (Refused* constants), or the error kind
	// of a failure; Severity is a failed attempt's severity (a repeat of the
	// attempt after a crash routes as the first one did).
	Reason   string `json:"reason,omitempty"`
	Severity string `json:"severity,omitempty"`
	// Message says what happened, for a human.
	Message string `json:"message,omitempty"`

	Capability string `json:"capability"`
	// PlannedCapability is the plan's capability when a fallback
	// (Capability) ran in its place (AuditStep records).
	PlannedCapability string `json:"planned_capability,omitempty"`
	// Summary, Changes and Digest describe the action (empty when it
	// could not be described). In an AuditStep record, Digest is the hex
	// SHA-256 of the step's planned parameters and inputs, so arguments
	// can be matched without storing them.
	Summary string                `json:"summary,omitempty"`
	Changes []capabilities.Change `json:"changes,omitempty"`
	// Target is the target system the attempt acted on (Config.Targets;
	// empty when none is configured).
	Target string `json:"target,omitempty"`
	Digest string `json:"digest,omitempty"`

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
	// Rule is how a human's answer was read (state.Answer* rules); Answer
	// is the human's literal words, when they typed any.
	Rule   string `json:"rule,omitempty"`
	Answer string `json:"answer,omitempty"`

	// Before is the machine state the approval was given against (asked,
	// approved, started); Readback what was read after the attempt or when
	// it was reconciled (ended).
	Before   []capabilities.Reading `json:"before,omitempty"`
	Readback []capabilities.Reading `json:"readback,omitempty"`
	// Reconciled: the outcome of an attempt cut short (a crash, a replica
	// taking the run over) was established afterwards, not seen.
	Reconciled bool `json:"reconciled,omitempty"`

	// Result is the capability's output (ended, confirmed): what it
	// changed, from what to what. A repeated attempt with the same
	// idempotency key returns it instead of acting again.
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
func auditBase(ctx context.Context, s state.State, capability string, idx int, ps state.PlanStep, attempt int, now time.Time) AuditRecord {
	r := AuditRecord{Time: now, Capability: capability, Thread: threadOf(ctx), Run: runIDOf(ctx), TurnID: s.Turn.ID, Turn: s.Turn.Number,
		Step: idx, Attempt: attempt, Principal: s.Metadata[MetaOwner], Tenant: s.Metadata[MetaTenant], User: s.Metadata[MetaUser],
		Target: s.Turn.Options.Target}
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
	labels := map[string]string{"event": r.Event, "capability": r.Capability}
	for k, v := range map[string]string{"outcome": string(r.Outcome), "principal": r.Principal, "tenant": r.Tenant,
		"approval_id": r.ApprovalID, "idempotency_key": r.IdempotencyKey, "target": r.Target} {
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
			Text: "the audit record (" + r.Event + ") could not be written: " + err.Error()})
	}
}

// AuditFilter narrows Agent.Audit.
type AuditFilter struct {
	Thread string
	// Event and Outcome keep records of one event (Audit*) or outcome.
	Event   string
	Outcome string
	// IdempotencyKey keeps the records of one attempt.
	IdempotencyKey string
	Principal      string
	Tenant         string
	// Since and Until bound the records' time (Until exclusive).
	Since, Until time.Time
	// Limit keeps the newest Limit records (0: all); they are returned oldest first.
	Limit int
	// Forward pages forward instead: the oldest Limit records with Seq >
	// After (the last Seq of the previous page; 0 starts at the oldest).
	Forward bool
	After   int64
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
	for k, v := range map[string]string{"event": f.Event, "outcome": f.Outcome, "principal": f.Principal, "tenant": f.Tenant,
		"idempotency_key": f.IdempotencyKey} {
		if v != "" {
			labels[k] = v
		}
	}
	recs, err := log.Records(ctx, checkpoint.RecordFilter{Kind: recordKindAudit, Thread: f.Thread, Since: f.Since, Until: f.Until,
		Labels: labels, Newest: !f.Forward, Limit: f.Limit, After: f.After})
	if err != nil {
		return nil, err
	}
	if f.Forward {
		slices.Reverse(recs) // oldest first already; the loop below reverses
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
