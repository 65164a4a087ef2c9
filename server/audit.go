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
)

// AuditRecord is one capability execution (one attempt of a plan step),
// as seen by the server.
type AuditRecord struct {
	// Record is "step" (a JSONLAudit file also holds "action" lines: the
	// agent's records of side-effecting steps, see ActionAuditLog).
	Record     string    `json:"record,omitempty"`
	Time       time.Time `json:"time"`
	Tenant     string    `json:"tenant"`
	Principal  string    `json:"principal"`
	User       string    `json:"user,omitempty"` // end user forwarded by a trusted frontend
	Thread     string    `json:"thread"`         // internal thread id
	Run        string    `json:"run"`
	Capability string    `json:"capability"`
	Step       int       `json:"step"`
	// Attempt numbers the attempts of the step's capability from 1; a
	// retry is a new record, a fallback starts again at 1.
	Attempt int `json:"attempt,omitempty"`
	// PlannedCapability is the plan's capability when a fallback
	// (Capability) ran in its place.
	PlannedCapability string `json:"planned_capability,omitempty"`
	// ArgsDigest is the hex SHA-256 of the step's planned parameters and
	// inputs (JSON), so arguments can be matched without storing them.
	ArgsDigest string `json:"args_digest"`
	// Outcome is "ok", "failed", or, for an attempt the run left open,
	// "canceled" (the run was canceled or stopped; a resume runs the step
	// again) or "interrupted" (the capability asked for approval).
	Outcome  string        `json:"outcome"`
	Error    string        `json:"error,omitempty"`
	Duration time.Duration `json:"duration_ns,omitempty"`
}

// AuditLog receives an AuditRecord for every capability step. Record must
// be safe for concurrent use; a failure is logged, never fatal to the run.
type AuditLog interface {
	Record(ctx context.Context, r AuditRecord) error
}

// ActionAuditLog is an AuditLog that also keeps the agent's audit records
// of side-effecting steps (refused, approved, rejected, executed, failed),
// which the agent stores durably in the checkpoint store first. JSONLAudit
// implements it.
type ActionAuditLog interface {
	RecordAction(ctx context.Context, r agent.AuditRecord) error
}

type nopAudit struct{}

func (nopAudit) Record(context.Context, AuditRecord) error { return nil }

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
func (a *JSONLAudit) Record(_ context.Context, r AuditRecord) error {
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

// RecordAction writes r as one line, marked "record":"action".
func (a *JSONLAudit) RecordAction(_ context.Context, r agent.AuditRecord) error {
	b, err := json.Marshal(struct {
		Record string `json:"record"`
		agent.AuditRecord
	}{"action", r})
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
