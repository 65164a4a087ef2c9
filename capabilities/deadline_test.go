package capabilities_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

// The operator's per-capability deadline wins over the capability's own,
// which wins over the configured default, which wins over the library's.
func TestResolveDeadline(t *testing.T) {
	run := func(context.Context, capabilities.Step) (capabilities.Output, error) {
		return capabilities.Output{}, nil
	}
	own := capabilities.Define(capabilities.Definition{Name: "slow_scan", Run: run, Deadline: 10 * time.Minute})
	plain := capabilities.Define(capabilities.Definition{Name: "read", Run: run})
	for _, tc := range []struct {
		name       string
		c          capabilities.Capability
		configured map[string]time.Duration
		fallback   time.Duration
		want       time.Duration
	}{
		{"library default", plain, nil, 0, capabilities.DefaultDeadline},
		{"configured default", plain, nil, 5 * time.Second, 5 * time.Second},
		{"own over configured default", own, nil, 5 * time.Second, 10 * time.Minute},
		{"operator over own", own, map[string]time.Duration{"slow_scan": time.Minute}, 5 * time.Second, time.Minute},
		{"other capability's override", plain, map[string]time.Duration{"slow_scan": time.Minute}, 0, capabilities.DefaultDeadline},
	} {
		if got := capabilities.ResolveDeadline(tc.c, tc.configured, tc.fallback); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A deadline error is a timeout, RETRIABLE, whatever the capability
// returned when cancelled; it still matches both errors.
func TestDeadlineErrorClassification(t *testing.T) {
	own := errors.New("driver: request aborted")
	err := &capabilities.DeadlineError{Capability: "read", Deadline: 30 * time.Second, Err: own}
	cl := capabilities.DefaultClassify(err)
	if cl.Severity != capabilities.Retriable || cl.Kind != capabilities.KindTimeout {
		t.Fatalf("classified %+v, want retriable timeout", cl)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, own) {
		t.Fatal("the deadline error does not match context.DeadlineExceeded and the capability's error")
	}
	ab := &capabilities.DeadlineError{Capability: "read", Deadline: 30 * time.Second, Abandoned: true}
	if got := ab.Error(); got != "read did not finish within its deadline of 30s; it did not stop when cancelled and was abandoned" {
		t.Fatalf("%q", got)
	}
}
