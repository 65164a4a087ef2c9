package state

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/capgraph/capgraph/capabilities"
)

// IntentKind says what the user asks for. Only a change may lead to a
// side-effecting step.
type IntentKind string

const (
	// IntentRead: a question, a lookup, history (the default: nothing changes).
	IntentRead IntentKind = "read"
	// IntentChange: the user asks to change something.
	IntentChange IntentKind = "change"
	// IntentHypothetical: "what would happen if…": nothing changes.
	IntentHypothetical IntentKind = "hypothetical"
)

// Intent is what task extraction found the user to ask for.
type Intent struct {
	// Kind; empty reads as IntentRead.
	Kind IntentKind `json:"kind,omitempty"`
	// Changes the user stated, for IntentChange.
	Changes []RequestedChange `json:"changes,omitempty"`
}

// RequestedChange is one change as the user stated it.
type RequestedChange struct {
	// Target as the user named it ("the quadrupole Q1 current in the BTS line").
	Target string `json:"target,omitempty"`
	// Value is the number asked for; nil when none was given.
	Value *float64 `json:"value,omitempty"`
	// Unit as stated ("A"), if any.
	Unit string `json:"unit,omitempty"`
}

// IsChange reports whether the user asked for a change.
func (i Intent) IsChange() bool { return i.Kind == IntentChange }

// ErrNoChangeIntent: a side-effecting action the user did not ask for.
var ErrNoChangeIntent = errors.New("the user did not ask for a change")

// ErrIntentMismatch: a side-effecting action that differs from the change
// the user stated.
var ErrIntentMismatch = errors.New("the action differs from the change the user asked for")

// Permits reports whether action a is a change the user asked for: the
// intent must be a change, and every numeric value a writes must be one the
// user stated (when the user stated values).
func (i Intent) Permits(a capabilities.Action) error {
	if !i.IsChange() {
		return fmt.Errorf("%w (the request reads as %s)", ErrNoChangeIntent, i.kindName())
	}
	var stated []float64
	for _, c := range i.Changes {
		if c.Value != nil {
			stated = append(stated, *c.Value)
		}
	}
	if len(stated) == 0 {
		return nil
	}
	for _, ch := range a.Changes {
		v, ok := number(ch.Value)
		if !ok {
			continue
		}
		if !containsClose(stated, v) {
			return fmt.Errorf("%w: %s would be set to %v, the user asked for %s", ErrIntentMismatch, ch.Target, v, formatValues(stated))
		}
	}
	return nil
}

func (i Intent) kindName() string {
	if i.Kind == "" {
		return string(IntentRead)
	}
	return string(i.Kind)
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	return 0, false
}

func containsClose(xs []float64, v float64) bool {
	for _, x := range xs {
		if math.Abs(x-v) <= 1e-9*math.Max(1, math.Max(math.Abs(x), math.Abs(v))) {
			return true
		}
	}
	return false
}

func formatValues(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strings.Join(s, ", ")
}
