package capabilities

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// SideEffecter is implemented by a capability that acts on the outside world
// (writes a setpoint, moves a motor, sends a message). The framework, not the
// capability, then guards every execution of its steps: the configured write
// switch, a human's approval bound to the exact action, the caller's allowed
// capabilities and a change the user asked for (see docs/safety.md). A
// Definition declares it with SideEffects.
type SideEffecter interface {
	SideEffects() bool
}

// HasSideEffects reports whether c declared that it acts on the outside world.
func HasSideEffects(c Capability) bool {
	se, ok := c.(SideEffecter)
	return ok && se.SideEffects()
}

// Change is one change a side-effecting step makes to the outside world.
type Change struct {
	// Target is what is changed, in the capability's terms (a channel name).
	Target string `json:"target"`
	// Value is the new value: a number (float64) or a string.
	Value any `json:"value"`
	// Unit of Value, if any ("A", "kV").
	Unit string `json:"unit,omitempty"`
	// Tolerance is how far a reading of Target may differ from a value and
	// still count as that value (the channel's precision, in Unit): a
	// readback within it confirms the change, a value before it that moved
	// less than it since the approval still holds. Zero: exact.
	Tolerance float64 `json:"tolerance,omitempty"`
	// Description is what the application's catalog says Target is, in
	// words ("focusing quadrupole magnet current in storage ring sector
	// 3"), if it says. The gate reads the user's words against it as well
	// as against the name: "sector 3" agrees with SR:C03:QF:CURRENT so
	// described, and not with SR:C04:QF:CURRENT ("… sector 4"); a device
	// code (Q1, Q1A) must still be in Target itself.
	Description string `json:"description,omitempty"`
}

// Action is what one execution of a side-effecting step will do, known
// before it runs. An approval is bound to its Digest: a step whose action
// differs from the approved one does not run.
type Action struct {
	Capability string `json:"capability"`
	// Target is the named target system the action acts on ("live",
	// "simulator": target.go), set by the framework from the turn; empty
	// when the application configures no targets. It is part of the
	// digest: an approval for the simulator never approves the live machine.
	// (Each Change's Target is a channel on that system.)
	Target  string   `json:"target,omitempty"`
	Changes []Change `json:"changes,omitempty"`
	// Summary says it in words a human can judge ("set SR:RF:VOLT from 4.80
	// kV to 5.00 kV"): the one summary of a side effect, shown to the human
	// who approves it and recorded in the audit log. It is not part of the
	// digest. Empty: the framework writes one from the changes.
	Summary string `json:"-"`
}

// Digest is the hex SHA-256 of the action's capability, target (when set)
// and changes, in order.
func (a Action) Digest() string {
	b, err := json.Marshal(struct {
		Capability string   `json:"capability"`
		Target     string   `json:"target,omitempty"`
		Changes    []Change `json:"changes"`
	}{a.Capability, a.Target, a.Changes})
	if err != nil {
		b = []byte("unserialisable:" + a.Capability)
	}
	d := sha256.Sum256(b)
	return hex.EncodeToString(d[:])
}

// ActionDescriber is implemented by a side-effecting capability that can say
// exactly what a step will do before it runs (it must not act). The framework
// describes the action when it asks for approval and again where the step
// executes, and runs the step only when both agree.
type ActionDescriber interface {
	DescribeAction(step Step) (Action, error)
}

// StepAction is the action of a side-effecting capability that cannot
// describe its own: everything the step gives it (objective, parameters and
// resolved input values) as one change, so an approval binds to all of it.
func StepAction(capability string, step Step) Action {
	inputs := make([]json.RawMessage, len(step.Resolved))
	for i, e := range step.Resolved {
		inputs[i] = e.Value
	}
	return Action{Capability: capability, Changes: []Change{{
		Target: step.ContextKey,
		Value:  map[string]any{"objective": step.TaskObjective, "parameters": step.Parameters, "inputs": inputs},
	}}}
}

// DescribeAction returns what a step of side-effecting capability c will do:
// c's own description when it is an ActionDescriber, else StepAction. An
// action holding a number that is not finite is refused (Validate's
// *ActionRefusedError, unless c gave an error of its own) and comes back as
// FiniteCopy writes it, so that the records of its refusal can be stored.
func DescribeAction(c Capability, step Step) (Action, error) {
	a, err := StepAction(c.Name(), step), error(nil)
	if d, ok := c.(ActionDescriber); ok {
		a, err = d.DescribeAction(step)
		a.Capability = c.Name()
	}
	if bad := a.Validate(); bad != nil {
		a.Changes = FiniteCopy(a.Changes).([]Change)
		if err == nil {
			err = bad
		}
	}
	return a, err
}

// Validate returns an *ActionRefusedError with ReasonNotFinite when a
// change's value or tolerance holds ±Inf or NaN (what "1e400" or "inf" in a
// request become when read with strconv.ParseFloat): no target can take such
// a value and no human can judge it, so nobody is asked. DescribeAction
// applies it to every action.
func (a Action) Validate() error {
	for _, ch := range a.Changes {
		var nf *NonFiniteError
		if !errors.As(CheckFinite(ch), &nf) {
			continue
		}
		target := ch.Target
		if target == "" {
			target = "the change"
		}
		var what string
		switch {
		case nf.Path == "value" || nf.Path == "tolerance":
			what = fmt.Sprintf("The %s for %s is %s", nf.Path, target, nf.Number)
		default:
			what = fmt.Sprintf("The value for %s holds %s at %s", target, nf.Number, strings.TrimPrefix(nf.Path, "value."))
		}
		return &ActionRefusedError{Reason: ReasonNotFinite,
			Message: what + ", which is not a finite number, so nobody was asked and nothing was changed."}
	}
	return nil
}
