package state

import (
	"encoding/json"
	"errors"
	"fmt"
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

// Permits reports whether action a is a change the user asked for. The
// intent must be a change. When the user stated what to change, every change
// of a must agree with one stated change:
//   - target: each numbered name the user gave ("Q1", "cavity 2") agrees
//     with the action's target (see identifier.agrees); a change whose value
//     is not a number or string (an opaque step action) is matched on its
//     target and the text of its value;
//   - value: when that stated change has a value, the action's number equals
//     it, compared in the units when both are known ("0.61 MV" is "610 kV";
//     amperes never match volts); a non-numeric value does not match a
//     stated number. An action change without a value (not known yet when a
//     plan is checked) is judged on its target alone.
//
// The error wraps ErrNoChangeIntent or ErrIntentMismatch and says why.
func (i Intent) Permits(a capabilities.Action) error {
	if !i.IsChange() {
		return fmt.Errorf("%w (the request reads as %s)", ErrNoChangeIntent, i.kindName())
	}
	if len(i.Changes) == 0 {
		return nil
	}
	for _, ch := range a.Changes {
		if err := i.permitsChange(ch); err != nil {
			return err
		}
	}
	return nil
}

func (i Intent) permitsChange(ch capabilities.Change) error {
	text, vals, other := describeChange(ch)
	var fit []RequestedChange
	var disagree identifier
	for _, rc := range i.Changes {
		if ok, id := targetAgrees(rc.Target, text); ok {
			fit = append(fit, rc)
		} else if disagree == (identifier{}) {
			disagree = id
		}
	}
	if len(fit) == 0 {
		return fmt.Errorf("%w: it changes %s, but the user asked to change %s (%s is not its target)",
			ErrIntentMismatch, shortTarget(ch.Target), i.targets(), disagree)
	}
	if other != "" {
		for _, rc := range fit {
			if rc.Value == nil {
				return nil
			}
		}
		return fmt.Errorf("%w: %s would be set to %q, the user asked for %s", ErrIntentMismatch, shortTarget(ch.Target), other, statedValues(fit))
	}
next:
	for _, v := range vals {
		for _, rc := range fit {
			if rc.Value == nil || sameQuantity(*rc.Value, rc.Unit, v.value, v.unit) {
				continue next
			}
		}
		return fmt.Errorf("%w: %s would be set to %s, the user asked for %s", ErrIntentMismatch, shortTarget(ch.Target), v, statedValues(fit))
	}
	return nil
}

// quantity is a number with its unit, as an action states it.
type quantity struct {
	value float64
	unit  string
}

func (q quantity) String() string {
	s := strconv.FormatFloat(q.value, 'g', -1, 64)
	if q.unit != "" {
		s += " " + q.unit
	}
	return s
}

// describeChange returns the text a change's target is matched against,
// the numbers it sets, and a non-numeric value it sets ("ON"), if any. An
// opaque value (capabilities.StepAction: objective, parameters, inputs) adds
// its text to the target, and its numbers are parameters.value,
// parameters.values and the value its objective states.
func describeChange(ch capabilities.Change) (text string, vals []quantity, other string) {
	text = ch.Target
	switch v := ch.Value.(type) {
	case nil:
	case string:
		if f, ok := number(v); ok {
			vals = append(vals, quantity{f, ch.Unit})
		} else if strings.TrimSpace(v) != "" {
			other = v
		}
	case bool:
		other = strconv.FormatBool(v)
	default:
		if f, ok := number(v); ok {
			vals = append(vals, quantity{f, ch.Unit})
			break
		}
		b, err := json.Marshal(v)
		if err != nil {
			other = fmt.Sprint(v)
			break
		}
		text += " " + string(b)
		vals = opaqueValues(v, ch.Unit)
	}
	return text, vals, other
}

func opaqueValues(v any, unit string) []quantity {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var out []quantity
	params, _ := m["parameters"].(map[string]any)
	if f, ok := number(params["value"]); ok {
		out = append(out, quantity{f, unit})
	}
	if vs, ok := params["values"].(map[string]any); ok {
		for _, x := range vs {
			if f, ok := number(x); ok {
				out = append(out, quantity{f, unit})
			}
		}
	}
	if len(out) == 0 {
		if obj, _ := m["objective"].(string); obj != "" {
			if f, u, ok := StatedValue(obj); ok {
				out = append(out, quantity{f, u})
			}
		}
	}
	return out
}

func shortTarget(t string) string {
	if t == "" {
		return "the target"
	}
	if len(t) > 80 {
		return t[:80] + "…"
	}
	return t
}

func (i Intent) targets() string {
	var ts []string
	for _, c := range i.Changes {
		if c.Target != "" {
			ts = append(ts, fmt.Sprintf("%q", c.Target))
		}
	}
	if len(ts) == 0 {
		return "what they named"
	}
	return strings.Join(ts, " and ")
}

func statedValues(cs []RequestedChange) string {
	var s []string
	for _, c := range cs {
		if c.Value != nil {
			s = append(s, quantity{*c.Value, c.Unit}.String())
		}
	}
	return strings.Join(s, " or ")
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

// Summary says the intent in a few words for prompts and logs: "read",
// "change: Q1 to 105 A; Q2 to 98 A".
func (i Intent) Summary() string {
	if !i.IsChange() || len(i.Changes) == 0 {
		return i.kindName()
	}
	parts := make([]string, len(i.Changes))
	for k, c := range i.Changes {
		t := c.Target
		if t == "" {
			t = "(target not named)"
		}
		if c.Value != nil {
			t += " to " + quantity{*c.Value, c.Unit}.String()
		}
		parts[k] = t
	}
	return "change: " + strings.Join(parts, "; ")
}
