package effectcrash

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/state"
)

// Defects the crash test found in code outside this package, each pinned
// by a test that keeps them fixed.

// TestCutIdempotentAttemptHasItsEnd: an idempotent capability (or MCP tool
// with idempotentHint) cut during its call is called again with the same
// key after the restart, and the cut call gets an ended record of its own
// (unconfirmed, reconciled_idempotent) before the new start: every started
// attempt ends in the audit.
func TestCutIdempotentAttemptHasItsEnd(t *testing.T) {
	sc := sqliteScenario(t, []string{variantIdempotent, variantMCPIdem})
	sc.points, sc.rounds = []string{pointBeforeEffect, pointAfterEffect}, 1
	_, specs := runScenario(t, sc)
	store, closeStore := sc.open(t)
	defer closeStore()
	for _, s := range specs {
		recs, err := agent.ListAudit(context.Background(), store, agent.AuditFilter{Thread: threadOf(s.N), Forward: true})
		if err != nil {
			t.Fatal(err)
		}
		var trail []string
		open := false
		unended := 0
		for _, r := range recs {
			trail = append(trail, r.Event+":"+string(r.Outcome))
			switch r.Event {
			case agent.AuditStarted:
				if open {
					unended++
				}
				open = true
			case agent.AuditEnded:
				open = false
			}
		}
		if open {
			unended++
		}
		if unended > 0 {
			t.Errorf("%s (%s cut %s): %d started record(s) never ended: audit %v; want every started attempt to have its ended record before the next starts",
				threadOf(s.N), s.Variant, s.Point, unended, trail)
		}
	}
}

// TestUnconfirmedReportDoesNotSayNothingWasDone: a change cut after it took
// effect, by a capability that cannot reconcile it, ends in an error report
// that says the step may or may not have been carried out — and, above it,
// "What was done: nothing — no step was completed", although the journal
// holds the change. errornode/report.go Markdown lists only steps with
// status done under "What was done", so an unconfirmed step reads as
// nothing done.
func TestUnconfirmedReportDoesNotSayNothingWasDone(t *testing.T) {
	sc := sqliteScenario(t, []string{variantBlind, variantMCPOnce})
	sc.points, sc.rounds = []string{pointAfterEffect}, 1
	dir, specs := runScenario(t, sc)
	journal, err := readLines(filepath.Join(dir, "journal.log"))
	if err != nil {
		t.Fatal(err)
	}
	store, closeStore := sc.open(t)
	defer closeStore()
	for _, s := range specs {
		st, _ := finalState(t, store, threadOf(s.N))
		m, _ := st.LastAssistant()
		effects := 0
		for _, e := range journal {
			if e.Target == targetOf(s.N) {
				effects++
			}
		}
		if m.Kind != state.KindErrorReport || effects != 1 {
			t.Fatalf("%s: message %s, %d effects; want an error report after one effect", threadOf(s.N), m.Kind, effects)
		}
		if strings.Contains(m.Content, "**What was done:** nothing") {
			t.Errorf("%s (%s cut %s): the change is in the journal, but the report says:\n%s", threadOf(s.N), s.Variant, s.Point, m.Content)
		}
	}
}
