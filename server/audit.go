package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"sync"

	"github.com/capgraph/capgraph/agent"
)

// The server's audit log (Config.Audit; `server.audit_log` makes
// `capgraph serve` write it to a file) holds records of one type,
// agent.AuditRecord, in one vocabulary: the agent's records of every
// side-effecting attempt (planned … started, ended with its outcome; the
// store keeps them too and stays the record of truth), and one record with
// event agent.AuditStep for every attempt of every capability step the
// server ran, reads included (see auditor in runs.go).

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
