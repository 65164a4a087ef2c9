package agent

import (
	"context"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

// attempt is one attempt of one plan step, as the step node runs it (step.go):
// what the gate (gate.go), the at-most-once execution (effect.go), the
// audit records (audit.go) and the failure pipeline (failure.go) all need
// to know of it. It is passed by value: a part that settles the plan step
// (approves it, grants it) works on its own copy and hands the step back.
type attempt struct {
	s   state.State // the state the node was given
	c   capabilities.Capability
	idx int            // the step's index in the plan
	ps  state.PlanStep // the plan step as this attempt runs it
	n   int            // the attempt's number, from 1
	now time.Time      // when the node started the attempt
	// firstAt is when the step's first attempt started.
	firstAt time.Time
	// apID is the id of the step's approval question; ans is the human's
	// answer the node was re-entered with, when answered.
	apID     string
	ans      state.ApprovalDecision
	answered bool
}

// mine reports whether the answer the node was re-entered with is the
// answer to this step's question (asked first, or asked again).
func (at attempt) mine() bool { return at.answered && ownAnswer(at.ans.ID, at.apID) }

// record is the audit record of the attempt, without its event.
func (at attempt) record(ctx context.Context) AuditRecord {
	return auditBase(ctx, at.s, at.c.Name(), at.idx, at.ps, at.n, at.now)
}
