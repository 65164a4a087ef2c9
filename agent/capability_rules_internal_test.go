package agent

import (
	"context"
	"errors"
	"math"
	"strings"
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
		if got := resolveDeadline(tc.c, tc.configured, tc.fallback); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A reading that is not finite is refused (the approval could not be held
// against it); finite readings, and none, are not.
func TestValidateReadings(t *testing.T) {
	var refused *capabilities.ActionRefusedError
	err := validateReadings([]capabilities.Reading{{Target: "Q1", Value: 92.0}, {Target: "Q2", Value: math.NaN()}})
	if !errors.As(err, &refused) || refused.Reason != capabilities.ReasonNotFinite || !strings.HasPrefix(refused.Message, "The reading of Q2 is NaN") {
		t.Fatalf("%v", err)
	}
	if err := validateReadings([]capabilities.Reading{{Target: "Q1", Value: 92.0}, {Target: "Q1:STATE", Value: "ON"}}); err != nil {
		t.Fatal(err)
	}
	if err := validateReadings(nil); err != nil {
		t.Fatal(err)
	}
}

// A reading agrees with a change's value within the tolerance; a
// non-finite number agrees with nothing, and other values compare as JSON.
func TestSame(t *testing.T) {
	for _, tc := range []struct {
		reading, value any
		tol            float64
		want           bool
	}{
		{92.0, 92.04, 0.05, true},
		{92.0, 92.1, 0.05, false},
		{92, 92.0, 0, true},
		{math.NaN(), math.NaN(), 1, false},
		{math.Inf(1), 1.0, 1e9, false},
		{"ON", 1.0, 0, false},
		{"ON", "ON", 0, true},
	} {
		if got := same(tc.reading, tc.value, tc.tol); got != tc.want {
			t.Errorf("same(%v, %v, %v) = %v, want %v", tc.reading, tc.value, tc.tol, got, tc.want)
		}
	}
}
