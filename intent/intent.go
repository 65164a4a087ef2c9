package intent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

// Kind says what the user asks for. Only a change may lead to a
// side-effecting step.
type Kind string

const (
	// KindRead: a question, a lookup, history (the default: nothing changes).
	KindRead Kind = "read"
	// KindChange: the user asks to change something.
	KindChange Kind = "change"
	// KindHypothetical: "what would happen if…": nothing changes.
	KindHypothetical Kind = "hypothetical"
)

// Intent is what the user's own words ask for (see FromMessages; a model's
// reading is never taken into it, see Decide).
type Intent struct {
	// Kind; empty reads as KindRead.
	Kind Kind `json:"kind,omitempty"`
	// Changes the user stated, for KindChange.
	Changes []RequestedChange `json:"changes,omitempty"`
	// Note says to the operator, in plain words, what the rules understood
	// when the message sounds like a change they will not carry out (no
	// value, a question mark, a value to restore): "You asked to change Q1
	// but gave no value, so nothing will be changed…". Empty otherwise.
	Note string `json:"note,omitempty"`
}

// RequestedChange is one change as the user stated it.
type RequestedChange struct {
	// Target as the user named it ("the quadrupole Q1 current in the BTS line").
	Target string `json:"target,omitempty"`
	// Value is the number asked for; nil when none was given.
	Value *float64 `json:"value,omitempty"`
	// Unit as stated ("A"), if any; "%" with By is a percentage of the
	// value before.
	Unit string `json:"unit,omitempty"`
	// By is a relative change ("raise Q1 by 5 A": +5, "lower it by 2 %":
	// -2 with Unit "%"): the value to set is the value before plus By,
	// worked out from a reading (see Permits and Derivation). Value is nil.
	By *float64 `json:"by,omitempty"`
	// Ago is a change back to the value the target had this long before
	// the request ("restore Q1 to yesterday's value": 24 h): the value to
	// set is read from the target's history at At (capabilities.
	// HistoryReader), never taken from a model. Value and By are nil.
	Ago time.Duration `json:"ago,omitempty"`
	// At is the time Ago points to, fixed when the turn's intent is
	// decided (Dated).
	At time.Time `json:"at,omitzero"`
	// Direction is +1 when the user's words raise the target to Value
	// ("raise Q1 to 105 A", "bring it up to…"), −1 when they lower it
	// ("lower Q1 to 90 A"), 0 when they do not say. Where the step executes,
	// a reading of the target before that the value does not move away from
	// in that direction refuses the action ("lower Q1 to 110 A" with Q1 at
	// 92 A).
	Direction int `json:"direction,omitempty"`
	// State is the state an on/off change asks for, "on" or "off" ("turn
	// off RF cavity 2", "enable…", "schalte … aus", "éteins…"); empty for
	// other changes. An action's word must mean that state.
	State string `json:"state,omitempty"`
	// Refers is the user's earlier words a target such as "it" refers to
	// ("Read the BTS Q1 current" before "set it to 105 A"): its names
	// count as the target's.
	Refers string `json:"refers,omitempty"`
}

// IsChange reports whether the user asked for a change.
func (i Intent) IsChange() bool { return i.Kind == KindChange }

// Relative reports whether a change is relative to the value before, so
// that judging an action needs a reading of its targets (Permits).
func (i Intent) Relative() bool {
	return i.IsChange() && slices.ContainsFunc(i.Changes, func(c RequestedChange) bool { return c.By != nil })
}

// Directed reports whether a change to a value says which way it goes
// (Direction), so that judging an action needs a reading before (Permits).
func (i Intent) Directed() bool {
	return i.IsChange() && slices.ContainsFunc(i.Changes, func(c RequestedChange) bool { return c.Value != nil && c.Direction != 0 })
}

// Restores reports whether a change goes back to the value at a time the
// user named, so that judging an action needs a reading of that time
// (Permits).
func (i Intent) Restores() bool {
	return i.IsChange() && slices.ContainsFunc(i.Changes, func(c RequestedChange) bool { return c.Ago > 0 })
}

// Dated fixes the time each dated restore points to: now (the request's
// time) minus its Ago.
func (i Intent) Dated(now time.Time) Intent {
	if !i.Restores() {
		return i
	}
	i.Changes = slices.Clone(i.Changes)
	for k, c := range i.Changes {
		if c.Ago > 0 && c.At.IsZero() {
			i.Changes[k].At = now.Add(-c.Ago).UTC().Truncate(time.Second)
		}
	}
	return i
}

// ErrNoChange: a side-effecting action the user did not ask for.
var ErrNoChange = errors.New("the user did not ask for a change")

// ErrMismatch: a side-effecting action that differs from the change the
// user stated.
var ErrMismatch = errors.New("the action differs from the change the user asked for")

// Permits reports whether action a, about to be put to a human, is a
// change the user asked for; before are its targets' readings now (the
// gate's readback; needed only when Relative). The intent must be a change.
// When the user stated what to change, every change of a must agree with
// one stated change:
//   - target: each numbered name the user gave ("Q1", "cavity 2", or the
//     earlier words "it" refers to) agrees with the action's target (see
//     identifier.agrees); a change whose value is not a number or string
//     (an opaque step action) is matched on its target and the text of its
//     value;
//   - words: the user's words and the action's target (its name and
//     description) agree on any property of the device other than its
//     setting (an alarm limit, an offset), which the unit cannot tell
//     apart, and the target is not named by the opposite of a word the
//     user names it by ("focusing" and a "defocusing quadrupole":
//     wordsDisagree);
//   - value: a stated value equals the action's number, compared in the
//     units when both are known ("0.61 MV" is "610 kV"; amperes never match
//     volts); a relative change ("by 5 A") equals the reading before plus
//     the amount (Derivation), within the change's tolerance, and without
//     a reading of the target it is refused; a change stated without a
//     value ("turn off cavity 2") admits no number, only an on/off or a
//     word. A number the user's words do not give never passes.
//
// The error wraps ErrNoChange or ErrMismatch and says why.
func (i Intent) Permits(a capabilities.Action, before []capabilities.Reading) error {
	return i.permits(a, before, true)
}

// PermitsPlanned is Permits for a planned step, before anything ran: an
// action change without a value (not known yet) is judged on its target
// alone, and a relative change on its target (its value is checked by
// Permits against the reading at the gate).
func (i Intent) PermitsPlanned(a capabilities.Action) error {
	return i.permits(a, nil, false)
}

func (i Intent) permits(a capabilities.Action, before []capabilities.Reading, final bool) error {
	if !i.IsChange() {
		return fmt.Errorf("%w (the request reads as %s)", ErrNoChange, i.kindName())
	}
	if len(i.Changes) == 0 {
		return fmt.Errorf("%w: the request names no change", ErrMismatch)
	}
	for _, ch := range a.Changes {
		if err := i.permitsChange(ch, before, final); err != nil {
			return err
		}
	}
	return nil
}

func (i Intent) permitsChange(ch capabilities.Change, before []capabilities.Reading, final bool) error {
	text, vals, other := describeChange(ch)
	var fit []RequestedChange
	var disagree identifier
	var differs string // why a target naming the user's device is still another thing
	cands := describedNames(text, ch.Description)
	for _, rc := range i.Changes {
		ok, id := targetAgreesWith(rc.named(), cands)
		switch why := wordsDisagree(rc.named(), ch.Target, ch.Description); {
		case ok && why == "":
			fit = append(fit, rc)
		case ok && differs == "":
			differs = fmt.Sprintf("%s, but the user asked to change %q", why, rc.named())
		case !ok && disagree == (identifier{}):
			disagree = id
		}
	}
	if len(fit) == 0 && differs != "" {
		return fmt.Errorf("%w: it changes %s, %s", ErrMismatch, shortTarget(ch.Target), differs)
	}
	if len(fit) == 0 {
		return fmt.Errorf("%w: it changes %s, but the user asked to change %s (%s is not its target)",
			ErrMismatch, shortTarget(ch.Target), i.targets(), disagree)
	}
	if final {
		if patternTarget(ch.Target) {
			return fmt.Errorf("%w: its target %s is a pattern, which may name devices the user did not, but the user asked to change %s",
				ErrMismatch, shortTarget(ch.Target), i.targets())
		}
		if none := namesNone(fit[0].named(), cands, strings.TrimSpace(ch.Description) != ""); none != "" && len(fit) == 1 {
			return fmt.Errorf("%w: it changes %s, which names none of %s, but the user asked to change %q",
				ErrMismatch, shortTarget(ch.Target), none, fit[0].named())
		}
		if extra, ok := unstatedName(ch.Target, fit); ok {
			return fmt.Errorf("%w: it changes %s, which names %s as well, but the user asked to change %s",
				ErrMismatch, shortTarget(ch.Target), extra, i.targets())
		}
	}
	amounts := opaqueAmounts(ch.Value, ch.Unit)
	if final && len(vals) == 0 && len(amounts) == 0 && other == "" {
		// No value at all where the step executes (nil, an opaque step
		// without one): permitted only where the user stated none either
		// (an on/off). Planned, the value may not be known yet.
		other = "no value"
		if ch.Value != nil {
			other = fmt.Sprint(ch.Value)
		}
	}
	if other != "" {
		for _, rc := range fit {
			if rc.Value == nil && rc.By == nil && rc.Ago == 0 && (rc.State == "" || stateOf(other) == rc.State || opaque(ch.Value) && !opaqueSays(ch.Value, otherState(rc.State))) {
				return nil
			}
		}
		return fmt.Errorf("%w: %s would be set to %q, the user asked for %s", ErrMismatch, shortTarget(ch.Target), other, statedValues(fit))
	}
	// An opaque action's amount (parameters.by) must be the user's amount.
	for _, a := range amounts {
		if !slices.ContainsFunc(fit, func(rc RequestedChange) bool {
			return rc.By != nil && (a.unit == "" && *rc.By == a.value || sameQuantity(*rc.By, rc.Unit, a.value, a.unit))
		}) {
			return fmt.Errorf("%w: %s would be changed by %s, the user asked for %s", ErrMismatch, shortTarget(ch.Target), a, statedValues(fit))
		}
	}
	reading, haveReading := readingOf(before, ch.Target)
next:
	for _, v := range vals {
		var wrongWay *RequestedChange // the user's value, but against the user's direction
		for _, rc := range fit {
			switch {
			case rc.Value != nil:
				if sameQuantity(*rc.Value, rc.Unit, v.value, v.unit) || !final && v.unit == "" && prefixedSame(*rc.Value, rc.Unit, v.value) {
					if final && rc.Direction != 0 && haveReading && !movesToward(reading, v, rc.Direction) {
						wrongWay = &rc
						continue
					}
					continue next
				}
			case rc.By != nil:
				if !final {
					continue next
				}
				if haveReading {
					if want, _, ok := rc.resolve(reading); ok && closeTo(want, v, ch.Tolerance) {
						continue next
					}
				}
			case rc.Ago > 0:
				if !final {
					continue next
				}
				if want, ok := pastQuantity(before, ch.Target, rc.At); ok && closeTo(want, v, ch.Tolerance) {
					continue next
				}
			}
		}
		if wrongWay != nil {
			way := "raise"
			if wrongWay.Direction < 0 {
				way = "lower"
			}
			return fmt.Errorf("%w: %s would be set to %s, but the user asked to %s it to that value and it reads %v %s now",
				ErrMismatch, shortTarget(ch.Target), v, way, reading.Value, reading.Unit)
		}
		if final && slices.ContainsFunc(fit, func(rc RequestedChange) bool { return rc.Ago > 0 && !hasPast(before, ch.Target, rc.At) }) {
			return fmt.Errorf("%w: %s would be set to %s; the user asked for %s, but that value could not be read from its history",
				ErrMismatch, shortTarget(ch.Target), v, statedValues(fit))
		}
		if final && !haveReading && slices.ContainsFunc(fit, func(rc RequestedChange) bool { return rc.By != nil }) {
			return fmt.Errorf("%w: %s would be set to %s; the user asked for %s, but the value now could not be read to work it out",
				ErrMismatch, shortTarget(ch.Target), v, statedValues(fit))
		}
		return fmt.Errorf("%w: %s would be set to %s, the user asked for %s", ErrMismatch, shortTarget(ch.Target), v, statedValues(fit))
	}
	return nil
}

// movesToward reports whether setting v moves the target from its reading
// r in direction dir (+1 up, −1 down); true when the reading is no number.
func movesToward(r capabilities.Reading, v quantity, dir int) bool {
	b, ok := number(r.Value)
	if !ok {
		return true
	}
	if ru, rok := lookupUnit(CanonicalUnit(r.Unit)); rok {
		if vu, vok := lookupUnit(v.unit); vok && vu.dim == ru.dim {
			v = quantity{v.value * vu.scale / ru.scale, r.Unit}
		}
	}
	return (v.value-b)*float64(dir) > 1e-9*math.Max(1, math.Abs(b))
}

// prefixedSame: a planned value without a unit (the planner wrote the
// number in the target's own unit, which the plan does not say) is the
// stated value in one of its unit's SI prefixes: 105 for "0.105 kA"
// (105 A), 610 for "0.61 MV" (610 kV). The gate checks it again in the
// units the capability states.
func prefixedSame(want float64, wantUnit string, got float64) bool {
	u, ok := lookupUnit(wantUnit)
	if !ok {
		return false
	}
	base := want * u.scale
	for _, f := range siPrefixes {
		if sameQuantity(base/f, "", got, "") {
			return true
		}
	}
	return sameQuantity(base, "", got, "")
}

// named is the text a change's target is matched by: the target and the
// earlier words it refers to.
func (rc RequestedChange) named() string {
	if rc.Refers == "" {
		return rc.Target
	}
	return rc.Target + " (" + rc.Refers + ")"
}

// readingOf finds the reading of target now (not one of its history).
func readingOf(rs []capabilities.Reading, target string) (capabilities.Reading, bool) {
	for _, r := range rs {
		if r.Target == target && r.At.IsZero() {
			return r, true
		}
	}
	return capabilities.Reading{}, false
}

// resolve works out the value a relative change asks for from the reading
// before: before + By (By converted to the reading's unit when both are
// known), or before × (1 + By/100) for a percentage; with the derivation
// shown to the human ("92 A + 5 A = 97 A").
func (rc RequestedChange) resolve(r capabilities.Reading) (quantity, string, bool) {
	b, ok := number(r.Value)
	if !ok || rc.By == nil || math.IsNaN(b) || math.IsInf(b, 0) {
		return quantity{}, "", false
	}
	bq := quantity{b, CanonicalUnit(r.Unit)}
	by := *rc.By
	if rc.Unit == "%" {
		d := b * by / 100
		w := quantity{b + d, bq.unit}
		return w, fmt.Sprintf("%s %s %s%% = %s", bq, sign(by), strconv.FormatFloat(math.Abs(by), 'g', -1, 64), w), true
	}
	delta := by
	if rc.Unit != "" && bq.unit != "" {
		ru, rok := lookupUnit(rc.Unit)
		bu, bok := lookupUnit(bq.unit)
		if !rok || !bok || ru.dim != bu.dim {
			return quantity{}, "", false
		}
		delta = by * ru.scale / bu.scale
	}
	w := quantity{b + delta, bq.unit}
	amount := quantity{math.Abs(by), rc.Unit}
	if amount.unit == "" {
		amount.unit = bq.unit
	}
	return w, fmt.Sprintf("%s %s %s = %s", bq, sign(by), amount, w), true
}

func sign(v float64) string {
	if v < 0 {
		return "−"
	}
	return "+"
}

// closeTo compares an action's value with a worked-out one, within the
// change's tolerance (or a rounding error).
func closeTo(want, got quantity, tol float64) bool {
	if got.unit != "" && want.unit != "" {
		wu, wok := lookupUnit(want.unit)
		gu, gok := lookupUnit(got.unit)
		if wok && gok {
			if wu.dim != gu.dim {
				return false
			}
			got = quantity{got.value * gu.scale / wu.scale, want.unit}
		}
	}
	slack := math.Max(math.Abs(tol), 1e-9*math.Max(1, math.Abs(want.value)))
	return math.Abs(want.value-got.value) <= slack
}

// Derivation says how each relative change of action a was worked out from
// the readings before ("BTS:MAG:Q1:CURRENT: 92 A + 5 A = 97 A"), for the
// approval card; nil when the intent has no relative change.
func (i Intent) Derivation(a capabilities.Action, before []capabilities.Reading) []string {
	if !i.Relative() && !i.Restores() {
		return nil
	}
	var out []string
	for _, ch := range a.Changes {
		text, _, _ := describeChange(ch)
		for _, rc := range i.Changes {
			if rc.Ago <= 0 {
				continue
			}
			if agree, _ := targetAgrees(rc.named(), text); !agree {
				continue
			}
			if q, ok := pastQuantity(before, ch.Target, rc.At); ok {
				out = append(out, ch.Target+": "+restoreText(rc.Ago)+rc.atText()+" was "+q.String())
				break
			}
		}
		r, ok := readingOf(before, ch.Target)
		if !ok {
			continue
		}
		for _, rc := range i.Changes {
			if rc.By == nil {
				continue
			}
			if agree, _ := targetAgrees(rc.named(), text); !agree {
				continue
			}
			if _, d, ok := rc.resolve(r); ok {
				out = append(out, ch.Target+": "+d)
				break
			}
		}
	}
	return out
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
		if opaque(v) {
			vals = opaqueValues(v, ch.Unit)
			break
		}
		// A list, a map, a struct: every number in it is a value written,
		// and each must be one the user gave; one without any is a word.
		if vals = numbersIn(b, ch.Unit); len(vals) == 0 {
			other = string(b)
		}
	}
	return text, vals, other
}

// opaque reports the value of capabilities.StepAction's change: the
// step's objective, parameters and inputs.
func opaque(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	_, objective := m["objective"]
	_, params := m["parameters"]
	return objective || params
}

// numbersIn returns every number in a JSON document, in unit.
func numbersIn(doc []byte, unit string) []quantity {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil
	}
	var out []quantity
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case json.Number, string:
			// A numeric string counts: a capability may read "140" as 140.
			if f, ok := number(x); ok {
				out = append(out, quantity{f, unit})
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// opaqueAmounts are the amounts an opaque action changes by
// (parameters.by, in parameters.unit or the change's unit).
func opaqueAmounts(v any, unit string) []quantity {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	params, _ := m["parameters"].(map[string]any)
	f, ok := number(params["by"])
	if !ok {
		return nil
	}
	if u, ok := params["unit"].(string); ok && strings.TrimSpace(u) != "" {
		unit = CanonicalUnit(u)
	}
	return []quantity{{f, unit}}
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
	// Every other number among the parameters may be written too, as far
	// as the framework can tell: it must be the user's as well (an amount,
	// parameters.by, is checked as one: opaqueAmounts).
	rest := maps.Clone(params)
	delete(rest, "by")
	if b, err := json.Marshal(rest); err == nil {
		for _, q := range numbersIn(b, unit) {
			if !slices.Contains(out, q) {
				out = append(out, q)
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
		switch {
		case c.Value != nil:
			s = append(s, quantity{*c.Value, c.Unit}.String())
		case c.By != nil:
			s = append(s, c.byText())
		case c.Ago > 0:
			s = append(s, restoreText(c.Ago)+c.atText())
		case c.State != "":
			s = append(s, c.State)
		}
	}
	if len(s) == 0 {
		return "no value"
	}
	return strings.Join(s, " or ")
}

// byText says a relative change: "5 A more", "2 % less".
func (c RequestedChange) byText() string {
	q := quantity{math.Abs(*c.By), c.Unit}
	if *c.By < 0 {
		return q.String() + " less than now"
	}
	return q.String() + " more than now"
}

func (i Intent) kindName() string {
	if i.Kind == "" {
		return string(KindRead)
	}
	return string(i.Kind)
}

// onOffWords are the words an action may write for an on/off change.
var onOffWords = map[string]string{
	"on": "on", "true": "on", "enable": "on", "enabled": "on", "ein": "on", "an": "on", "eingeschaltet": "on", "aktiv": "on",
	"active": "on", "activé": "on", "actif": "on", "allumé": "on", "marche": "on",
	"off": "off", "false": "off", "disable": "off", "disabled": "off", "aus": "off", "ausgeschaltet": "off", "inaktiv": "off",
	"inactive": "off", "désactivé": "off", "inactif": "off", "éteint": "off", "arrêt": "off", "arret": "off",
}

// stateOf is the state ("on", "off") a word an action writes means, or "".
func stateOf(word string) string { return onOffWords[strings.ToLower(strings.TrimSpace(word))] }

// otherState is the state an on/off change does not ask for.
func otherState(state string) string {
	if state == "on" {
		return "off"
	}
	return "on"
}

// opaqueSays reports whether an opaque action's objective or parameters
// name state: a step whose capability does not describe its action (a
// tool that toggles) is held to the user's state only where its words say
// one ("Turn on the logging" for "turn off…" is refused).
func opaqueSays(v any, state string) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	for _, c := range scan(strings.ToLower(string(b))) {
		for _, t := range c.toks {
			// Fewer words than onOffWords: "an", "ein", "aus" are common
			// words in an objective's prose.
			switch t.w {
			case "on", "off", "true", "false", "enable", "enabled", "disable", "disabled":
				if stateOf(t.w) == state {
					return true
				}
			}
		}
	}
	return false
}

// number reads v as a finite number: a Go number of any kind, a
// json.Number or a numeric string.
func number(v any) (float64, bool) {
	f, ok := anyNumber(v)
	return f, ok && !math.IsNaN(f) && !math.IsInf(f, 0)
}

func anyNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	switch r := reflect.ValueOf(v); r.Kind() {
	case reflect.Float32, reflect.Float64:
		return r.Float(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(r.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(r.Uint()), true
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
		switch {
		case c.Value != nil:
			t += " to " + quantity{*c.Value, c.Unit}.String()
		case c.By != nil:
			t += " by " + strconv.FormatFloat(*c.By, 'g', -1, 64)
			if c.Unit != "" {
				t += " " + c.Unit
			}
		case c.Ago > 0:
			t += " back to " + restoreText(c.Ago)
		case c.State != "":
			t += " " + c.State
		}
		parts[k] = t
	}
	return "change: " + strings.Join(parts, "; ")
}
