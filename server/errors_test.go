package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/server/internal/apierror"
)

func TestErrorStatus(t *testing.T) {
	tests := []struct {
		err    error
		status int
		code   string
		retry  bool
	}{
		{&apierror.RequestError{Kind: apierror.ErrUnauthorized}, http.StatusUnauthorized, "invalid_api_key", false},
		{&http.MaxBytesError{Limit: 1}, http.StatusRequestEntityTooLarge, "request_too_large", false},
		{&apierror.RequestError{Kind: apierror.ErrNotFound}, http.StatusNotFound, "not_found", false},
		{badRequest("x", "bad"), http.StatusBadRequest, "invalid_request", false},
		{&apierror.RequestError{Kind: apierror.ErrTooManyRuns}, http.StatusTooManyRequests, "too_many_runs", true},
		{&apierror.RateLimitError{Limit: 1}, http.StatusTooManyRequests, "rate_limit_exceeded", true},
		{&apierror.RequestError{Kind: apierror.ErrRunInProgress}, http.StatusConflict, "run_in_progress", false},
		{&apierror.RequestError{Kind: apierror.ErrShuttingDown}, http.StatusServiceUnavailable, "shutting_down", true},
		// Failures of the agent, wrapped as a run failure.
		{fmt.Errorf("the run failed: %w", fmt.Errorf("%w: %q", graph.ErrThreadBusy, "t")), http.StatusConflict, "run_in_progress", false},
		{fmt.Errorf("the run failed: %w", &agent.ApprovalError{Kind: agent.ErrApprovalExpired}), http.StatusBadRequest, "invalid_request", false},
		{fmt.Errorf("the run failed: %w", fmt.Errorf("%w: t", agent.ErrUnknownThread)), http.StatusNotFound, "not_found", false},
		{fmt.Errorf("the run failed: %w", &apierror.TurnTimeoutError{Err: context.DeadlineExceeded}), http.StatusInternalServerError, "internal_error", false},
		{errors.New("boom"), http.StatusInternalServerError, "internal_error", false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%T %v", tc.err, tc.err), func(t *testing.T) {
			status, _, code, retry := apierror.Status(tc.err)
			if status != tc.status || code != tc.code || retry != tc.retry {
				t.Fatalf("got %d %s %v, want %d %s %v", status, code, retry, tc.status, tc.code, tc.retry)
			}
		})
	}
}
