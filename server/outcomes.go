package server

import (
	"net/http"
	"strconv"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/jsonreply"
)

// How an attempt of a side-effecting step ended (capabilities.Outcome) is
// shown on every face: the agent's audit records that carry an outcome
// (ended, refused, unrequested) go to the run's followers as "audit"
// events (the page draws a badge per step, AG-UI sends CUSTOM "outcome"),
// and a chat answer ends with one line per outcome (outcomeMarkdown).

// publicOutcome is what a run's followers see of an audit record: nil for
// a record without an outcome (planned, asked, approved, started), else
// the attempt's outcome without who ran it, the approval id (it ends in a
// secret of the turn), the idempotency key or the stored result.
func publicOutcome(r *agent.AuditRecord) *agent.AuditRecord {
	if r == nil || r.Outcome == "" {
		return nil
	}
	return &agent.AuditRecord{Time: r.Time, Event: r.Event, Outcome: r.Outcome, Reason: r.Reason, Message: r.Message,
		Capability: r.Capability, Summary: r.Summary, Changes: r.Changes, Target: r.Target, Turn: r.Turn, Plan: r.Plan, Step: r.Step, Attempt: r.Attempt,
		Before: r.Before, Readback: r.Readback, Reconciled: r.Reconciled, ResultSummary: r.ResultSummary, Duration: r.Duration}
}

// handleThreadOutcomes lists what became of the thread's changes (GET
// /api/threads/{thread}/outcomes, ?turn=N for one turn): each attempt's
// outcome as its followers saw it (publicOutcome), oldest first, from the
// agent's audit log — so a page opened later, or after a restart, shows
// the badges of every turn. The owner's, like the thread.
func (s *Server) handleThreadOutcomes(w http.ResponseWriter, r *http.Request) {
	_, th, ok := s.thread(w, r)
	if !ok {
		return
	}
	turn := 0
	if q := r.URL.Query().Get("turn"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 {
			s.writeError(w, badRequest("turn", "must be a turn number from 1"))
			return
		}
		turn = n
	}
	out := []*agent.AuditRecord{}
	if ar, ok := s.cfg.Runner.(AuditReader); ok {
		recs, err := ar.Audit(r.Context(), agent.AuditFilter{Thread: th.internal, Limit: maxAuditLimit})
		if err != nil {
			s.writeError(w, err)
			return
		}
		for _, e := range recs {
			if p := publicOutcome(&e.AuditRecord); p != nil && (turn == 0 || p.Turn == turn) {
				out = append(out, p)
			}
		}
	}
	jsonreply.JSON(w, http.StatusOK, map[string]any{"thread_id": th.ID, "outcomes": out})
}
