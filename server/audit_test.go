package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestJSONLAuditFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for i := range 2 { // reopening appends
		a, err := OpenJSONLAuditFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Record(t.Context(), AuditRecord{Principal: "alice", Capability: "channel_write", Step: i, Outcome: "ok", ArgsDigest: argsDigest(map[string]any{"value": 1.5})}); err != nil {
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
	var r AuditRecord
	if err := json.Unmarshal([]byte(lines[1]), &r); err != nil || r.Step != 1 || r.Capability != "channel_write" || len(r.ArgsDigest) != 64 {
		t.Fatalf("%+v %v", r, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", fi.Mode(), err)
	}
	if _, err := OpenJSONLAuditFile(filepath.Join(t.TempDir(), "missing", "a.jsonl")); err == nil {
		t.Fatal("opened a file in a missing directory")
	}
}
