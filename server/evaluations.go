package server

import (
	"context"
	"net/http"
	"strconv"

	"github.com/capgraph/capgraph/server/internal/jsonreply"
)

// EvaluationLister lists the last evaluation runs a store keeps, newest
// first (at most limit): each a JSON object (package eval's Summary).
// Package wiring gives one over the store's record log.
type EvaluationLister interface {
	RecentEvaluations(ctx context.Context, limit int) ([]any, error)
}

// Evaluation listing limits.
const (
	defaultEvaluations = 20
	maxEvaluations     = 100
)

// handleEvaluations lists the last evaluation runs (GET /api/evaluations,
// ?limit=N from 1 to 100, default 20), newest first: what the page's
// Evaluations panel shows. A server without a lister answers an empty
// list. Suites, metrics and failed case ids hold no thread's content, so
// any caller the server lets in may read them.
func (s *Server) handleEvaluations(w http.ResponseWriter, r *http.Request) {
	limit := defaultEvaluations
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxEvaluations {
			s.writeError(w, badRequest("limit", "must be a whole number from 1 to %d, got %q", maxEvaluations, v))
			return
		}
		limit = n
	}
	out := []any{}
	if s.cfg.Evaluations != nil {
		runs, err := s.cfg.Evaluations.RecentEvaluations(r.Context(), limit)
		if err != nil {
			s.writeError(w, err)
			return
		}
		out = append(out, runs...)
	}
	jsonreply.JSON(w, http.StatusOK, map[string]any{"evaluations": out})
}
