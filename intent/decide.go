package intent

import (
	"fmt"
	"strings"
)

// Decide combines the rules' finding with a model's structured reading of
// the same words (nil when the model gave none). The rules decide whether
// anything changes, what and to which value; a model never introduces a
// change, a target or a value, and cannot turn the user's change into a
// read either (its reading is not the user's words). Nor does a model give
// the unit of a value stated without one: any unit scales the number
// ("610" read as 610 V would permit writing 0.61 kV to a device in kV), so
// a value without a unit is compared with the device's own number. The
// second result says, in operator language, where the model read otherwise
// (empty when it agreed or gave nothing), for an event.
func Decide(rules Finding, model *Intent) (Intent, string) {
	in := rules.Intent
	if model == nil || model.Kind == "" {
		return in, ""
	}
	if !in.IsChange() {
		if model.IsChange() {
			return in, fmt.Sprintf("The model read a change (%s), but your words do not ask for one (%s); nothing will be changed.",
				model.Summary(), rules.Reason)
		}
		return in, ""
	}
	var differ []string
	if !model.IsChange() {
		differ = append(differ, "as "+model.kindName())
	}
	for _, mc := range model.Changes {
		matched := false
		for _, rc := range in.Changes {
			if !sameTarget(rc, mc.Target) {
				continue
			}
			if sameStated(rc, mc) {
				matched = true
			}
		}
		if !matched {
			differ = append(differ, mc.Target+quantityText(mc))
		}
	}
	if len(differ) == 0 {
		return in, ""
	}
	return in, fmt.Sprintf("The model read your request differently (%s); the change stays as you stated it: %s.",
		strings.Join(differ, "; "), strings.TrimPrefix(in.Summary(), "change: "))
}

// Includes reports whether c is one of the intent's changes: the same
// numbered names each way, and the same value (in its units) or amount. A
// model's task text is held to it (only the user's changes may be in it).
func (i Intent) Includes(c RequestedChange) bool {
	if !i.IsChange() {
		return false
	}
	for _, rc := range i.Changes {
		if sameTarget(rc, c.named()) && sameStated(rc, c) {
			return true
		}
	}
	return false
}

// sameTarget: the model's target and the user's name the same numbered
// things, each way.
func sameTarget(rc RequestedChange, target string) bool {
	a, _ := targetAgrees(rc.named(), target)
	b, _ := targetAgrees(target, rc.named())
	return a && b
}

// sameStated: the model states the user's value (or amount) for it.
func sameStated(rc, mc RequestedChange) bool {
	switch {
	case rc.Value != nil:
		return mc.Value != nil && sameQuantity(*rc.Value, rc.Unit, *mc.Value, mc.Unit)
	case rc.By != nil:
		return mc.Value == nil && (mc.By == nil || *mc.By == *rc.By && mc.Unit == rc.Unit)
	}
	return mc.Value == nil && mc.By == nil && (rc.State == "" || mc.State == "" || rc.State == mc.State)
}

func quantityText(c RequestedChange) string {
	switch {
	case c.Value != nil:
		return " to " + quantity{*c.Value, c.Unit}.String()
	case c.By != nil:
		return " by " + quantity{*c.By, c.Unit}.String()
	}
	return ""
}
