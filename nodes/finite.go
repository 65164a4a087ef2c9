package nodes

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/capgraph/capgraph/capabilities"
)

// Numbers that are not numbers in plans: JSON cannot carry ±Inf or NaN, and
// a model's JSON number beyond a float64 (1e400) fails to decode, so a
// model's plan never holds one — but a plan a human edited, or one an
// application's own planner made from text with strconv ("1e400" is +Inf),
// may. Such a plan is refused before anything runs (docs/safety.md, "Values
// that are not numbers").

// ErrNotFinite: a plan step's parameters hold a number that is not finite
// (±Inf, NaN) (REPLANNING).
var ErrNotFinite = errors.New("nodes: plan holds a number that is not finite")

// checkFinite rejects the first step whose parameters hold ±Inf or NaN.
func checkFinite(steps []capabilities.PlannedStep) *PlanError {
	for i, st := range steps {
		var nf *capabilities.NonFiniteError
		if !errors.As(capabilities.CheckFinite(st.Parameters), &nf) {
			continue
		}
		return &PlanError{Kind: ErrNotFinite, Step: i, Cause: nf, Problem: fmt.Sprintf(
			"step %d (%s): parameters.%s is %s, which is not a finite number, so no step can use it. "+
				"Give only finite numbers the user stated; if the user's value is not a number, ask (clarify)",
			i+1, st.Capability, nf.Path, nf.Number)}
	}
	return nil
}

// outOfRange says what is wrong with a JSON number that decoded into no
// float (1e400): encoding/json's own words name a Go type, not the problem.
func outOfRange(te *json.UnmarshalTypeError) (string, bool) {
	n, ok := strings.CutPrefix(te.Value, "number ")
	if !ok || te.Type == nil || te.Type.Kind() != reflect.Float64 && te.Type.Kind() != reflect.Float32 {
		return "", false
	}
	return fmt.Sprintf("holds the number %s, beyond the range of a 64-bit float (about ±1.8e308); write a finite number", n), true
}
