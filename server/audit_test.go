package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
)

func TestJSONLAuditFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for i := range 2 { // reopening appends
		a, err := OpenJSONLAuditFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Record(t.Context(), agent.AuditRecord{Event: agent.AuditStep, Principal: "alice", Capability: "channel_write", Step: i, Outcome: capabilities.OutcomeConfirmed, Digest: argsDigest(map[string]any{"value": 1.5})}); err != nil {
			t.Fatal(err)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines: %s", len(lines), b)
	}
	var r agent.AuditRecord
	if err := json.Unmarshal([]byte(lines[1]), &r); err != nil || r.Event != agent.AuditStep || r.Step != 1 || r.Capability != "channel_write" || len(r.Digest) != 64 {
		t.Fatalf("%+v %v", r, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", fi.Mode(), err)
	}
	if _, err := OpenJSONLAuditFile(filepath.Join(t.TempDir(), "missing", "a.jsonl")); err == nil {
		t.Fatal("opened a file in a missing directory")
	}
}
