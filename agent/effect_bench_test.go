package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
)

// BenchmarkEffectRecords is what the at-most-once guarantee adds to one
// attempt of a side-effecting step on SQLite: the lookup of the attempt's
// records by its idempotency key, then the durable started and ended
// appends (docs/performance.md, "Side effects at most once"). The thread
// already holds a turn's worth of records.
func BenchmarkEffectRecords(b *testing.B) {
	store, _ := newSQLite(b)
	ctx := context.Background()
	appendRec := func(r agent.AuditRecord) {
		data, err := json.Marshal(r)
		if err != nil {
			b.Fatal(err)
		}
		labels := map[string]string{"event": r.Event, "capability": r.Capability, "idempotency_key": r.IdempotencyKey}
		if r.Outcome != "" {
			labels["outcome"] = string(r.Outcome)
		}
		if _, err := store.AppendRecords(ctx, checkpoint.Record{Kind: "audit", Thread: r.Thread, Time: r.Time, Labels: labels, Data: data}); err != nil {
			b.Fatal(err)
		}
	}
	rec := agent.AuditRecord{Capability: "set_q1", Thread: "t", Turn: 1, Plan: 1, Attempt: 1,
		Changes: []capabilities.Change{{Target: "Q1", Value: 105.0, Unit: "A", Tolerance: 0.5}},
		Before:  []capabilities.Reading{{Target: "Q1", Value: 92.0, Unit: "A"}}}
	for _, ev := range []string{agent.AuditPlanned, agent.AuditAsked, agent.AuditApproved} {
		r := rec
		r.Event, r.Time, r.IdempotencyKey = ev, time.Now(), "t/1/1/0/1"
		appendRec(r)
	}
	i := 0
	for b.Loop() {
		i++
		key := fmt.Sprintf("t/1/1/0/%d", i)
		if _, err := agent.ListAudit(ctx, store, agent.AuditFilter{Thread: "t", IdempotencyKey: key, Forward: true}); err != nil {
			b.Fatal(err)
		}
		r := rec
		r.Event, r.Time, r.IdempotencyKey = agent.AuditStarted, time.Now(), key
		appendRec(r)
		r.Event, r.Outcome = agent.AuditEnded, capabilities.OutcomeConfirmed
		appendRec(r)
	}
}
