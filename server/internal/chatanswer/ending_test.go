package chatanswer

import (
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
)

// Each outcome's line in a chat answer, unrequested and a reconciled
// confirmation included (no turn of the test plant produces those).
func TestOutcomeLines(t *testing.T) {
	q1 := []capabilities.Change{{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0, Unit: "A"}}
	before := []capabilities.Reading{{Target: "BTS:MAG:Q1:CURRENT", Value: 92.0, Unit: "A"}}
	back := []capabilities.Reading{{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0, Unit: "A"}}
	for _, tc := range []struct {
		rec  agent.AuditRecord
		want string
	}{
		{agent.AuditRecord{Outcome: capabilities.OutcomeConfirmed, Changes: q1, Before: before, Readback: back, Reconciled: true},
			"**confirmed** — set BTS:MAG:Q1:CURRENT 92.00 → 105.00 A (readback 105.00 A), established by a readback after the run was interrupted."},
		{agent.AuditRecord{Outcome: capabilities.OutcomeUnrequested, Changes: q1, Reason: agent.RefusedNoChangeIntent, Message: "You did not ask for a change, so nothing will be changed."},
			"**unrequested** — set BTS:MAG:Q1:CURRENT to 105.00 A was not carried out: the request did not ask for this change."},
		{agent.AuditRecord{Outcome: capabilities.OutcomeUnrequested, Changes: q1, Reason: agent.RefusedIntentMismatch, Message: "The plan's step 1 was not the change you asked for."},
			"**unrequested** — set BTS:MAG:Q1:CURRENT to 105.00 A was not carried out: it is not the change the request asked for."},
		{agent.AuditRecord{Outcome: capabilities.OutcomeRefused, Changes: q1, Message: "Writes are disabled by this turn's options, so step 1 was not carried out."},
			"**refused** — set BTS:MAG:Q1:CURRENT to 105.00 A was not carried out: Writes are disabled by this turn's options, so step 1 was not carried out."},
		{agent.AuditRecord{Outcome: capabilities.OutcomeUnconfirmed, Capability: "send_logbook_entry", Summary: "post the shift summary"},
			"**UNCONFIRMED** — post the shift summary may or may not have been applied. It was not retried: check the result of send_logbook_entry on the machine before asking for the change again."},
	} {
		if got := outcomeLine(tc.rec); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}
