package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

// The rules by which the agent runs a capability, read from the optional
// interfaces it implements: where it may act, how long an attempt may take,
// whether a write may run again, and how a reading is compared.

// actsOn reports whether c can act on target, where defaultTarget is the
// target of a capability that names none. An empty target (no targets
// configured) is every capability's.
func actsOn(c capabilities.Capability, target, defaultTarget string) bool {
	if target == "" {
		return true
	}
	if t, ok := c.(capabilities.Targeter); ok && len(t.Targets()) > 0 {
		return slices.Contains(t.Targets(), target)
	}
	return target == defaultTarget
}

// resolveDeadline is the deadline of one attempt of c: configured[c's name]
// (the operator's override), else c's own (capabilities.Deadliner), else fallback (the
// configured default), else capabilities.DefaultDeadline. A zero or negative duration
// at any level means "not set here".
func resolveDeadline(c capabilities.Capability, configured map[string]time.Duration, fallback time.Duration) time.Duration {
	if d := configured[c.Name()]; d > 0 {
		return d
	}
	if dl, ok := c.(capabilities.Deadliner); ok {
		if d := dl.Deadline(); d > 0 {
			return d
		}
	}
	if fallback > 0 {
		return fallback
	}
	return capabilities.DefaultDeadline
}

// isIdempotent reports whether c declared its effect idempotent.
func isIdempotent(c capabilities.Capability) bool {
	i, ok := c.(capabilities.Idempotenter)
	return ok && i.Idempotent()
}

// same reports whether a reading agrees with a change's value: numbers
// within tol of each other, anything else equal as JSON. A non-finite
// number agrees with nothing.
func same(reading, value any, tol float64) bool {
	a, aok := number(reading)
	b, bok := number(value)
	if aok || bok {
		if !aok || !bok || math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
			return false
		}
		return math.Abs(a-b) <= math.Abs(tol)
	}
	x, err1 := json.Marshal(reading)
	y, err2 := json.Marshal(value)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// validateReadings returns an *capabilities.ActionRefusedError with capabilities.ReasonNotFinite when
// a reading of an action's targets (capabilities.Readbacker) holds ±Inf or NaN: the state
// a change would start from cannot be judged, and an approval given against
// it could never be matched again (a NaN equals nothing), so nobody is
// asked. The framework applies it to the readings an approval shows.
func validateReadings(readings []capabilities.Reading) error {
	for _, r := range readings {
		var nf *capabilities.NonFiniteError
		if !errors.As(capabilities.CheckFinite(r), &nf) {
			continue
		}
		target := r.Target
		if target == "" {
			target = "a target"
		}
		return &capabilities.ActionRefusedError{Reason: capabilities.ReasonNotFinite, Message: fmt.Sprintf(
			"The reading of %s is %s, which is not a finite number, so the state the change would start from cannot be judged; nobody was asked and nothing was changed.",
			target, nf.Number)}
	}
	return nil
}
