package capabilities_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func sec(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

func TestRetryPolicyNext(t *testing.T) {
	none := capabilities.RetryPolicy{Jitter: capabilities.JitterNone}
	tests := []struct {
		name   string
		p      capabilities.RetryPolicy
		a      capabilities.Attempt
		now    time.Time
		delay  time.Duration
		ok     bool
		seeded bool // use the seeded source
	}{
		{"first retry waits the initial interval", none, capabilities.Attempt{Number: 1}, t0, time.Second, true, false},
		{"second retry doubles", none, capabilities.Attempt{Number: 2}, t0, 2 * time.Second, true, false},
		{"max_attempts counts the first try", none, capabilities.Attempt{Number: 3}, t0, 0, false, false},
		{"max_attempts 1 never retries", capabilities.RetryPolicy{MaxAttempts: 1}, capabilities.Attempt{Number: 1}, t0, 0, false, false},
		{"capped at max_interval", capabilities.RetryPolicy{MaxAttempts: 10, InitialInterval: sec(10), MaxInterval: sec(25), Jitter: capabilities.JitterNone}, capabilities.Attempt{Number: 3}, t0, 25 * time.Second, true, false},
		{"coefficient 1.5", capabilities.RetryPolicy{MaxAttempts: 5, InitialInterval: sec(0.5), BackoffCoefficient: 1.5, Jitter: capabilities.JitterNone}, capabilities.Attempt{Number: 3}, t0, 1125 * time.Millisecond, true, false},
		{"huge attempt number stays at the cap", capabilities.RetryPolicy{MaxAttempts: 5000, Jitter: capabilities.JitterNone}, capabilities.Attempt{Number: 4000}, t0, 30 * time.Second, true, false},
		{"retry-after overrides", none, capabilities.Attempt{Number: 1, RetryAfter: 7 * time.Second}, t0, 7 * time.Second, true, false},
		{"non-retryable kind", capabilities.RetryPolicy{NonRetryable: []string{capabilities.KindAuth}}, capabilities.Attempt{Number: 1, Kind: capabilities.KindAuth}, t0, 0, false, false},
		{"max_elapsed stops", capabilities.RetryPolicy{MaxElapsed: sec(5), Jitter: capabilities.JitterNone}, capabilities.Attempt{Number: 2, FirstAt: t0}, t0.Add(4 * time.Second), 0, false, false},
		{"max_elapsed allows", capabilities.RetryPolicy{MaxElapsed: sec(5), Jitter: capabilities.JitterNone}, capabilities.Attempt{Number: 1, FirstAt: t0}, t0.Add(3 * time.Second), time.Second, true, false},
		{"full jitter, seeded", capabilities.RetryPolicy{}, capabilities.Attempt{Number: 2}, t0, 1538746539, true, true},
		{"equal jitter, seeded", capabilities.RetryPolicy{Jitter: capabilities.JitterEqual}, capabilities.Attempt{Number: 2}, t0, 1769373270, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r *rand.Rand
			if tc.seeded {
				r = rand.New(rand.NewPCG(1, 2))
			}
			d, ok := tc.p.Next(tc.a, tc.now, r)
			if d != tc.delay || ok != tc.ok {
				t.Fatalf("Next = %v (%d), %v; want %v, %v", d, int64(d), ok, tc.delay, tc.ok)
			}
		})
	}
}

func TestRetryJitterBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	full := capabilities.RetryPolicy{MaxAttempts: 10}
	equal := capabilities.RetryPolicy{MaxAttempts: 10, Jitter: capabilities.JitterEqual}
	for i := 0; i < 1000; i++ {
		n := 1 + i%5
		base := time.Second << (n - 1)
		if d, _ := full.Next(capabilities.Attempt{Number: n}, t0, r); d < 0 || d > base {
			t.Fatalf("full jitter %v outside [0, %v]", d, base)
		}
		if d, _ := equal.Next(capabilities.Attempt{Number: n}, t0, r); d < base/2 || d > base {
			t.Fatalf("equal jitter %v outside [%v, %v]", d, base/2, base)
		}
	}
}

func TestRetryPolicyDefaultsAndJSON(t *testing.T) {
	p := capabilities.RetryPolicy{}.WithDefaults()
	if p.MaxAttempts != 3 || p.InitialInterval != time.Second || p.BackoffCoefficient != 2 || p.MaxInterval != 30*time.Second || p.Jitter != capabilities.JitterFull {
		t.Fatalf("defaults %+v", p)
	}
	var q capabilities.RetryPolicy
	if err := json.Unmarshal([]byte(`{"max_attempts":4,"initial_interval":"250ms","backoff_coefficient":1.5,"max_interval":10,"jitter":"equal","non_retryable":["auth"]}`), &q); err != nil {
		t.Fatal(err)
	}
	if q.MaxAttempts != 4 || q.InitialInterval != 250*time.Millisecond || q.MaxInterval != 10*time.Second || q.Jitter != capabilities.JitterEqual {
		t.Fatalf("decoded %+v", q)
	}
	b, _ := json.Marshal(q)
	if !strings.Contains(string(b), `"initial_interval":"250ms"`) {
		t.Fatalf("encoded %s", b)
	}
}

func TestRetryPolicyValidate(t *testing.T) {
	tests := []struct {
		p    capabilities.RetryPolicy
		want string
	}{
		{capabilities.RetryPolicy{MaxAttempts: -1}, "max_attempts"},
		{capabilities.RetryPolicy{BackoffCoefficient: 0.5}, "backoff_coefficient"},
		{capabilities.RetryPolicy{InitialInterval: sec(5), MaxInterval: sec(1)}, "initial_interval"},
		{capabilities.RetryPolicy{Jitter: "random"}, "jitter"},
		{capabilities.RetryPolicy{MaxElapsed: -1}, "negative"},
	}
	for _, tc := range tests {
		if err := tc.p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want an error naming %s", tc.p, err, tc.want)
		}
	}
	if err := (capabilities.RetryPolicy{}).WithDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestResolveRetryPolicy(t *testing.T) {
	own := capabilities.RetryPolicy{MaxAttempts: 1}
	mk := func(name string, p capabilities.RetryPolicy) capabilities.Capability {
		c := capabilities.Define(capabilities.Definition{Name: name, Description: "d", Retry: p,
			Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
				return capabilities.Output{}, nil
			}})
		return c
	}
	configured := map[string]capabilities.RetryPolicy{
		"write_pv": {MaxAttempts: 5, InitialInterval: sec(3)},
		"read_pv":  {MaxAttempts: 5, InitialInterval: sec(3)},
	}
	global := capabilities.RetryPolicy{MaxAttempts: 4, BackoffCoefficient: 3}
	tests := []struct {
		c                capabilities.Capability
		attempts         int
		initial, maximum time.Duration
		coefficient      float64
	}{
		{mk("write_pv", own), 1, 3 * time.Second, 30 * time.Second, 3},                       // own wins, rest inherited
		{mk("read_pv", capabilities.RetryPolicy{}), 5, 3 * time.Second, 30 * time.Second, 3}, // application config, then global
		{mk("other", capabilities.RetryPolicy{}), 4, time.Second, 30 * time.Second, 3},       // global, then defaults
	}
	for _, tc := range tests {
		p := capabilities.ResolveRetryPolicy(tc.c, configured, global)
		if p.MaxAttempts != tc.attempts || p.InitialInterval != tc.initial || p.MaxInterval != tc.maximum || p.BackoffCoefficient != tc.coefficient {
			t.Errorf("%s: %+v", tc.c.Name(), p)
		}
	}
	// A raised initial interval lifts an inherited cap so the result is valid.
	p := capabilities.MergeRetryPolicies(capabilities.RetryPolicy{InitialInterval: sec(60)}, capabilities.RetryPolicy{MaxInterval: sec(10)})
	if err := p.Validate(); err != nil || p.MaxInterval != time.Minute {
		t.Fatalf("merged %+v: %v", p, err)
	}
}

// A policy encoded before its intervals were time.Duration (as
// capabilities.Duration, duration strings) decodes to the same values, and
// the policy encodes the same way: old checkpoints and configs still read.
func TestRetryPolicyOldEncodingStillDecodes(t *testing.T) {
	old := `{"max_attempts":4,"initial_interval":"200ms","backoff_coefficient":2,"max_interval":"2s","max_elapsed":"1m0s","non_retryable":["not_found"]}`
	var p capabilities.RetryPolicy
	if err := json.Unmarshal([]byte(old), &p); err != nil {
		t.Fatal(err)
	}
	want := capabilities.RetryPolicy{MaxAttempts: 4, InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2,
		MaxInterval: 2 * time.Second, MaxElapsed: time.Minute, NonRetryable: []string{"not_found"}}
	if p.MaxAttempts != want.MaxAttempts || p.InitialInterval != want.InitialInterval || p.MaxInterval != want.MaxInterval ||
		p.MaxElapsed != want.MaxElapsed || p.BackoffCoefficient != 2 || len(p.NonRetryable) != 1 {
		t.Fatalf("decoded %+v, want %+v", p, want)
	}
	b, err := json.Marshal(want)
	if err != nil || string(b) != old {
		t.Fatalf("encoded %s (%v), want %s", b, err, old)
	}
	// Inside a larger value (a checkpointed map of policies) too.
	var m map[string]capabilities.RetryPolicy
	if err := json.Unmarshal([]byte(`{"read":{"initial_interval":1.5}}`), &m); err != nil || m["read"].InitialInterval != 1500*time.Millisecond {
		t.Fatalf("seconds: %+v %v", m, err)
	}
	if err := json.Unmarshal([]byte(`{"initial_interval":"soon"}`), &p); err == nil || !strings.Contains(err.Error(), "soon") {
		t.Fatalf("bad duration: %v", err)
	}
}

// The zero policy is no policy of its own; MaxAttempts 1 is "never retry",
// which is one.
func TestHasOwnRetryPolicy(t *testing.T) {
	run := func(context.Context, capabilities.Step) (capabilities.Output, error) {
		return capabilities.Output{}, nil
	}
	none := capabilities.Define(capabilities.Definition{Name: "none", Description: "d", Run: run})
	if _, ok := capabilities.HasOwnRetryPolicy(none); ok {
		t.Fatal("a Definition without Retry has a policy of its own")
	}
	never := capabilities.Define(capabilities.Definition{Name: "never", Description: "d", Run: run, Retry: capabilities.RetryPolicy{MaxAttempts: 1}})
	if p, ok := capabilities.HasOwnRetryPolicy(never); !ok || p.MaxAttempts != 1 {
		t.Fatalf("never: %+v %v", p, ok)
	}
	if p := capabilities.ResolveRetryPolicy(never, nil, capabilities.RetryPolicy{MaxAttempts: 5}); p.MaxAttempts != 1 {
		t.Fatalf("resolved %+v: the own MaxAttempts 1 must win", p)
	}
}
