package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
)

// A thread busy on another replica (its lease held) is 409 run_in_progress,
// with Retry-After the time left on the holder's lease.
func TestThreadBusyOnAnotherReplica(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	s := &Server{cfg: Config{Now: func() time.Time { return now }}}
	held := &checkpoint.LeaseHeldError{Thread: "t", Holder: "replica-b", Expires: now.Add(12500 * time.Millisecond)}
	for _, tc := range []struct {
		name  string
		err   error
		after string
	}{
		{"lease held", fmt.Errorf("the run failed: %w", fmt.Errorf("%w: %q: %w", graph.ErrThreadBusy, "t", held)), "13"},
		{"busy in this process", fmt.Errorf("%w: %q", graph.ErrThreadBusy, "t"), ""},
	} {
		rec := httptest.NewRecorder()
		s.writeError(rec, tc.err)
		if rec.Code != http.StatusConflict || rec.Header().Get("Retry-After") != tc.after {
			t.Errorf("%s: status %d, Retry-After %q; want 409 and %q", tc.name, rec.Code, rec.Header().Get("Retry-After"), tc.after)
		}
	}
}
