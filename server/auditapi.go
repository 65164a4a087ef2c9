package server

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/jsonreply"
	"github.com/capgraph/capgraph/server/internal/native"
)

// Audit API limits.
const (
	defaultAuditLimit = 100
	maxAuditLimit     = 1000
)

// handleAudit lists audit records (GET /api/audit) for an admin key:
// ?thread= (internal id), event=, outcome=, key= (an attempt's idempotency
// key), principal=, tenant=, since=, until=
// (RFC 3339, a date, or a duration before now), limit= (newest first kept,
// default 100, at most 1000). Records are returned oldest first.
// ?cursor=<seq> pages forward: the records after that one, oldest first,
// with next_cursor while more follow (cursor=0 starts at the oldest).
func (s *Server) handleAudit(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	if !c.Principal.Admin {
		s.writeError(w, &apierror.RequestError{Kind: apierror.ErrForbidden, Message: "the audit log is readable only with an admin key (server.api_keys[].admin: true)"})
		return
	}
	ar := s.features.audit
	if ar == nil {
		s.writeError(w, &apierror.RequestError{Kind: apierror.ErrNotFound, Message: "this server's agent keeps no audit log"})
		return
	}
	q := r.URL.Query()
	f := agent.AuditFilter{Thread: q.Get("thread"), Event: q.Get("event"), Outcome: q.Get("outcome"), IdempotencyKey: q.Get("key"),
		Principal: q.Get("principal"), Tenant: q.Get("tenant"), Limit: defaultAuditLimit}
	if f.Event != "" && !slices.Contains(agent.AuditEvents, f.Event) {
		s.writeError(w, badRequest("event", "must be one of %s, got %q", strings.Join(agent.AuditEvents, ", "), f.Event))
		return
	}
	if f.Outcome != "" && !capabilities.Outcome(f.Outcome).Valid() {
		s.writeError(w, badRequest("outcome", "must be one of refused, failed, confirmed, mismatch, unconfirmed, unrequested, got %q", f.Outcome))
		return
	}
	for param, dst := range map[string]*time.Time{"since": &f.Since, "until": &f.Until} {
		if v := q.Get(param); v != "" {
			t, err := agent.ParseAuditTime(v, s.cfg.Now())
			if err != nil {
				s.writeError(w, &apierror.RequestError{Kind: apierror.ErrBadRequest, Param: param, Message: err.Error()})
				return
			}
			*dst = t
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxAuditLimit {
			s.writeError(w, badRequest("limit", "must be a whole number from 1 to %d, got %q", maxAuditLimit, v))
			return
		}
		f.Limit = n
	}
	paging := q.Has("cursor")
	if paging {
		n, err := strconv.ParseInt(q.Get("cursor"), 10, 64)
		if err != nil || n < 0 {
			s.writeError(w, badRequest("cursor", "must be the seq of a record (next_cursor), or 0 for the oldest"))
			return
		}
		f.Forward, f.After = true, n
	}
	recs, err := ar.Audit(r.Context(), f)
	if err != nil {
		s.writeError(w, err)
		return
	}
	if recs == nil {
		recs = []agent.AuditEntry{}
	}
	next := ""
	if paging && len(recs) == f.Limit {
		next = strconv.FormatInt(recs[len(recs)-1].Seq, 10)
	}
	jsonreply.JSON(w, http.StatusOK, native.ListPage("records", recs, next))
}
