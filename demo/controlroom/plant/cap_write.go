package plant

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/intent"
)

// ChannelWrite is the channel_write capability: it sets channels in its
// CHANNEL_ADDRESSES input to new values and verifies them by readback
// (CHANNEL_WRITE_RESULTS). Parameters: value (one number for one channel),
// values (channel → number), or by (an amount for one channel, with unit;
// "%" of the value now): the value now plus the amount; otherwise the value
// is parsed from the objective or task ("… to 105 A", "to 0.105 kA" in the
// channel's units).
//
// It declares side effects (SideEffects), says exactly what a step will
// write (DescribeAction) and refuses there what it would refuse anyway — a
// read-only channel, a value outside the limits — so nobody is asked to
// approve it. The framework then runs it only if this process enables
// writes, a human approved exactly that change and the user asked for it,
// and at most once: it reads the channels back (Readback) to show the
// value before on the approval card, to ask again when the machine moved,
// to confirm a write and to reconcile one a crash cut short
// (docs/safety.md). Its own checks stay as defence in depth: the global
// writes switch (step.WritesEnabled), the channel's writable flag and
// limits (checked for every channel before anything is written), and
// readback verification.
type ChannelWrite struct {
	plant *Plant
	// targets, when set, are the plants it acts on by the step's target
	// (targets.go); plant is then the default one's.
	targets Targets
}

// NewChannelWrite returns channel_write over p.
func NewChannelWrite(p *Plant) *ChannelWrite {
	return &ChannelWrite{plant: p}
}

func (*ChannelWrite) Name() string { return "channel_write" }
func (*ChannelWrite) Description() string {
	return "Write a new setpoint to a control-system channel: set, change or adjust a setting to a number the user gives. A human must approve first."
}
func (*ChannelWrite) Provides() []string { return []string{ChannelWriteResultsType} }
func (*ChannelWrite) Requires() []capabilities.Requirement {
	return []capabilities.Requirement{ChannelAddressesKey.RequiredAll()}
}
func (*ChannelWrite) SideEffects() bool { return true }

// writeOp is one planned write.
type writeOp struct {
	channel Channel
	target  float64
	old     float64
	// by is the amount of a relative write ("by 5 A"); the framework
	// shows the derivation on the approval card.
	by string
}

func (o writeOp) text() string {
	return fmt.Sprintf("%s from %s → %s", o.channel.Name, o.channel.Format(o.old), o.channel.FormatWithUnits(o.target))
}

// valuePattern finds "to 105", "to -3.5e2", "= 105" in a request.
var valuePattern = regexp.MustCompile(`(?i)(?:\bto|=)\s*([-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?)`)

// plan decides what the step will write, without writing.
func (w *ChannelWrite) plan(step capabilities.Step) ([]writeOp, error) {
	p, err := w.targets.on(w.plant, step.Target)
	if err != nil {
		return nil, err
	}
	chans, _, err := p.readChannels(step) // a follow-up ("same for Q4") writes the device it names, as a read reads it
	if err != nil {
		return nil, err
	}
	targets := map[string]float64{}
	values, err := capabilities.Param[map[string]float64](step, "values", nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAmbiguousWrite, err)
	}
	for k, v := range values {
		targets[strings.ToUpper(k)] = v
	}
	unit := "" // the unit the value is stated in, when not the channel's
	by, relative := 0.0, false
	if raw, ok := step.Parameters["by"]; ok && raw != nil && len(targets) == 0 {
		// A relative write: the value now plus the amount, per channel.
		if by, err = capabilities.Param(step, "by", 0.0); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrAmbiguousWrite, err)
		}
		relative = true
		unit, _ = capabilities.Param(step, "unit", "")
		unit = intent.CanonicalUnit(unit)
		if len(chans) != 1 {
			return nil, fmt.Errorf("%w: one amount for %d channels (%s); say which channel gets it", ErrAmbiguousWrite, len(chans), strings.Join(chans, ", "))
		}
	}
	var restoreAt time.Time // a dated restore: each channel back to its setpoint then
	if raw, ok := step.Parameters["at"]; ok && raw != nil && len(targets) == 0 && !relative {
		text, err := capabilities.Param(step, "at", "")
		if err == nil {
			restoreAt, err = time.Parse(time.RFC3339, text)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: parameters.at must be a time (RFC 3339): %w", ErrAmbiguousWrite, err)
		}
		for _, name := range chans {
			v, err := p.SetpointAt(name, restoreAt)
			if err != nil {
				// Nothing to go back to: refused before anyone is asked.
				return nil, &capabilities.ActionRefusedError{Reason: "no_history",
					Message: fmt.Sprintf("%s has no archived setpoint at %s (%v), so nobody was asked and nothing was written.",
						name, restoreAt.UTC().Format("2006-01-02 15:04 MST"), errors.Unwrap(err))}
			}
			targets[name] = v
		}
	}
	if len(targets) == 0 && !relative {
		var v float64
		found := false
		if raw, ok := step.Parameters["value"]; ok && raw != nil {
			if v, err = capabilities.Param(step, "value", 0.0); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrAmbiguousWrite, err)
			}
			found = true
		} else {
			for _, t := range stepTexts(step) {
				if m := valuePattern.FindStringSubmatchIndex(t); m != nil {
					v, _ = strconv.ParseFloat(t[m[2]:m[3]], 64)
					_, unit, _ = intent.ParseQuantity(t[m[2]:])
					found = true
					break
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: no value to write (give parameters.value or say \"to <number>\")", ErrAmbiguousWrite)
		}
		if len(chans) != 1 {
			return nil, fmt.Errorf("%w: one value for %d channels (%s); say which channel gets it", ErrAmbiguousWrite, len(chans), strings.Join(chans, ", "))
		}
		targets[chans[0]] = v
	}
	var ops []writeOp
	for _, name := range chans {
		v, ok := targets[name]
		if relative {
			v, ok = by, true
		}
		if !ok {
			continue
		}
		c, ok := p.Channel(name)
		if !ok {
			return nil, &ChannelError{Op: "write", Channel: name, Err: ErrUnknownChannel}
		}
		old, err := p.Setpoint(name)
		if err != nil {
			return nil, err
		}
		op := writeOp{channel: c, old: old}
		if relative {
			op.by = fmt.Sprintf("%+g %s", by, unit)
			if unit == "%" {
				op.by, v, unit = fmt.Sprintf("%+g%%", by), old*by/100, ""
			}
			op.by = strings.TrimSpace(strings.Replace(strings.Replace(op.by, "+", "+ ", 1), "-", "− ", 1))
		}
		if unit != "" && unit != c.Units {
			// "to 0.105 kA" on a channel in A is 105 A; amperes never become volts.
			cv, ok := intent.Convert(v, unit, c.Units)
			if !ok {
				return nil, fmt.Errorf("%w: %s is in %s, the value is given in %s", ErrAmbiguousWrite, name, c.Units, unit)
			}
			v = cv
		}
		if relative {
			v += old
		}
		op.target = v
		ops = append(ops, op)
	}
	for name := range targets {
		if !containsString(chans, name) {
			return nil, fmt.Errorf("%w: a value is given for %s, which is not among the step's channels", ErrAmbiguousWrite, name)
		}
	}
	return ops, nil
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// DescribeAction says what a step would write, without writing: one change
// per channel (name, target value, units), and a summary with the current
// setpoint ("set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A"), which is not
// part of the digest an approval binds to.
func (w *ChannelWrite) DescribeAction(step capabilities.Step) (capabilities.Action, error) {
	ops, err := w.plan(step)
	if errors.Is(err, errNothingFound) {
		// No channel matched: the step will change nothing (Execute reports it).
		return capabilities.Action{Capability: w.Name(), Summary: "nothing to write: no channel matches the request"}, nil
	}
	if err != nil {
		return capabilities.Action{}, err
	}
	a := capabilities.Action{Capability: w.Name()}
	parts := make([]string, len(ops))
	for i, o := range ops {
		a.Changes = append(a.Changes, capabilities.Change{Target: o.channel.Name, Value: o.target, Unit: o.channel.Units,
			Tolerance: o.channel.Tolerance(o.target), Description: o.channel.Description})
		parts[i] = "set " + o.text()
	}
	a.Summary = strings.Join(parts, "; ")
	if err := refusal(ops); err != nil {
		return a, err
	}
	return a, nil
}

// refusal is the write Execute would refuse whatever a human says: a
// read-only channel, a value outside the limits (or not a number at all).
func refusal(ops []writeOp) *capabilities.ActionRefusedError {
	for _, o := range ops {
		if !o.channel.Writable {
			return &capabilities.ActionRefusedError{Reason: "read_only",
				Message: fmt.Sprintf("%s is read-only; it cannot be set, so nobody was asked and nothing was written.", o.channel.Name)}
		}
		if math.IsNaN(o.target) || math.IsInf(o.target, 0) || o.target < o.channel.Low || o.target > o.channel.High {
			return &capabilities.ActionRefusedError{Reason: "limits",
				Message: fmt.Sprintf("%s is outside the limits of %s (%s), so nobody was asked and nothing was written.",
					o.channel.FormatWithUnits(o.target), o.channel.Name, o.channel.Limits())}
		}
	}
	return nil
}

// Readback reads each target's setpoint now, without writing.
func (w *ChannelWrite) Readback(_ context.Context, a capabilities.Action) ([]capabilities.Reading, error) {
	p, err := w.targets.on(w.plant, a.Target)
	if err != nil {
		return nil, err
	}
	out := make([]capabilities.Reading, 0, len(a.Changes))
	for _, ch := range a.Changes {
		v, err := p.Setpoint(ch.Target)
		if err != nil {
			return nil, err
		}
		c, _ := p.Channel(ch.Target)
		out = append(out, capabilities.Reading{Target: ch.Target, Value: v, Unit: c.Units})
	}
	return out, nil
}

// ReadAt reads each target's setpoint at an earlier time, from the archive
// (capabilities.HistoryReader): what a dated restore sets.
func (w *ChannelWrite) ReadAt(_ context.Context, a capabilities.Action, at time.Time) ([]capabilities.Reading, error) {
	p, err := w.targets.on(w.plant, a.Target)
	if err != nil {
		return nil, err
	}
	out := make([]capabilities.Reading, 0, len(a.Changes))
	for _, ch := range a.Changes {
		v, err := p.SetpointAt(ch.Target, at)
		if err != nil {
			return nil, err
		}
		c, _ := p.Channel(ch.Target)
		out = append(out, capabilities.Reading{Target: ch.Target, Value: v, Unit: c.Units, At: at})
	}
	return out, nil
}

// Execute writes after the safety checks and verifies by readback. When
// channel finding found no channel there is nothing to write, whatever the
// switch says, and the result says so. An error before the first write is
// marked capabilities.NotApplied: the framework then knows nothing changed.
func (w *ChannelWrite) Execute(ctx context.Context, step capabilities.Step) (capabilities.Output, error) {
	if _, err := stepChannels(step); errors.Is(err, errNothingFound) {
		return capabilities.Result(ChannelWriteResultsType, ChannelWriteResults{Writes: []WriteResult{}}, nothingDone("written", err)), nil
	}
	if !step.WritesEnabled {
		return capabilities.Output{}, capabilities.NotApplied(&capabilities.Error{Severity: capabilities.Critical, Kind: capabilities.KindWritesDisabled,
			UserMessage: "Control-system writes are disabled (control_system.writes_enabled is false), so nothing was written.",
			Metadata: map[string]any{capabilities.MetaSafetyAbortReason: "writes disabled by configuration",
				capabilities.MetaSuggestions: []string{"an operator can enable writes with control_system.writes_enabled: true"}},
			Err: capabilities.ErrWritesDisabled})
	}
	p, err := w.targets.on(w.plant, step.Target)
	if err != nil {
		return capabilities.Output{}, capabilities.NotApplied(err)
	}
	ops, err := w.plan(step)
	if err != nil {
		return capabilities.Output{}, capabilities.NotApplied(err)
	}
	// Check every channel before writing any, so a refused request leaves
	// the machine untouched.
	for _, o := range ops {
		if !o.channel.Writable {
			return capabilities.Output{}, capabilities.NotApplied(&ChannelError{Op: "write", Channel: o.channel.Name, Err: ErrNotWritable})
		}
		if math.IsNaN(o.target) || math.IsInf(o.target, 0) || o.target < o.channel.Low || o.target > o.channel.High {
			le := &LimitError{Channel: o.channel.Name, Value: o.target, Low: o.channel.Low, High: o.channel.High, Units: o.channel.Units}
			return capabilities.Output{}, capabilities.NotApplied(limitViolation(le, o.channel))
		}
	}
	var res ChannelWriteResults
	for i, o := range ops {
		if err := ctx.Err(); err != nil {
			if i == 0 {
				err = capabilities.NotApplied(err)
			}
			return capabilities.Output{}, err
		}
		old, err := p.Write(o.channel.Name, o.target)
		if err != nil {
			var le *LimitError
			if errors.As(err, &le) {
				err = limitViolation(le, o.channel)
			}
			if i == 0 && !errors.Is(err, ErrTimeout) {
				err = capabilities.NotApplied(err) // refused before anything was written
			}
			return capabilities.Output{}, err
		}
		o.old = old
		rb, err := p.Setpoint(o.channel.Name)
		if err != nil {
			return capabilities.Output{}, err
		}
		if math.Abs(rb-o.target) > o.channel.Tolerance(o.target) {
			return capabilities.Output{}, &ChannelError{Op: "write", Channel: o.channel.Name,
				Err: fmt.Errorf("%w: set %s, read back %s", ErrVerification, o.channel.FormatWithUnits(o.target), o.channel.FormatWithUnits(rb))}
		}
		res.Writes = append(res.Writes, WriteResult{Channel: o.channel.Name, Old: old, New: o.target, Readback: rb,
			Units: o.channel.Units, Verified: true, Text: o.text()})
	}
	return capabilities.Result(ChannelWriteResultsType, res, res.Summary()), nil
}

func limitViolation(le *LimitError, c Channel) *capabilities.Error {
	return &capabilities.Error{Severity: capabilities.Critical, Kind: capabilities.KindLimitViolation,
		UserMessage: fmt.Sprintf("%s is outside the limits of %s (%s), so nothing was written.", c.FormatWithUnits(le.Value), c.Name, c.Limits()),
		Metadata: map[string]any{capabilities.MetaSafetyAbortReason: "setpoint outside the channel's limits",
			capabilities.MetaTechnicalDetails: le.Error()},
		Err: le}
}

// RetryPolicy: only a timeout is worth one more try, and the framework
// retries a write only when it knows the first one changed nothing (the
// readback still shows the value before); safety refusals never are.
func (*ChannelWrite) RetryPolicy() capabilities.RetryPolicy {
	return capabilities.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Second,
		BackoffCoefficient: 2, MaxInterval: 5 * time.Second,
		NonRetryable: []string{capabilities.KindLimitViolation, capabilities.KindWritesDisabled, capabilities.KindRejected, capabilities.KindNotFound}}
}

// ClassifyError follows the reference: ambiguous request or missing input
// → REPLANNING; timeout → RETRIABLE; writes disabled, read-only channel,
// limit violation, failed verification and anything else → CRITICAL.
func (*ChannelWrite) ClassifyError(err error, _ capabilities.ErrorContext) capabilities.Classification {
	var ce *capabilities.Error
	details := map[string]any{capabilities.MetaTechnicalDetails: err.Error()}
	switch {
	case errors.As(err, &ce):
		return ce.Classification()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return capabilities.Classification{}
	case errors.Is(err, capabilities.ErrWritesDisabled):
		return capabilities.Classification{Severity: capabilities.Critical, Kind: capabilities.KindWritesDisabled,
			UserMessage: "Control-system writes are disabled, so nothing was written.", Metadata: details}
	case errors.Is(err, ErrLimitViolation):
		return capabilities.Classification{Severity: capabilities.Critical, Kind: capabilities.KindLimitViolation,
			UserMessage: "The value is outside the channel's limits, so nothing was written.", Metadata: details}
	case errors.Is(err, capabilities.ErrMissingInput):
		details[capabilities.MetaReplanningReason] = "add a channel_finding step and pass its CHANNEL_ADDRESSES as input"
		return capabilities.Classification{Severity: capabilities.Replanning, Kind: capabilities.KindMissingInput,
			UserMessage: "The write step has no channels.", Metadata: details}
	case errors.Is(err, ErrAmbiguousWrite):
		details[capabilities.MetaReplanningReason] = "the write must name exactly one value per channel (parameters.value for one channel, parameters.values for several)"
		return capabilities.Classification{Severity: capabilities.Replanning, Kind: capabilities.KindInvalidInput,
			UserMessage: "It is not clear which value to write to which channel.", Metadata: details}
	case errors.Is(err, ErrTimeout):
		return capabilities.Classification{Severity: capabilities.Retriable, Kind: capabilities.KindTimeout,
			UserMessage: "The control system did not confirm the write in time.", Metadata: details}
	case errors.Is(err, ErrNotWritable):
		return capabilities.Classification{Severity: capabilities.Critical, Kind: capabilities.KindInvalidInput,
			UserMessage: "That channel is read-only; it cannot be set.", Metadata: details}
	case errors.Is(err, ErrVerification):
		details[capabilities.MetaSafetyAbortReason] = "readback mismatch after a write"
		return capabilities.Classification{Severity: capabilities.Critical, Kind: capabilities.KindUnknown,
			UserMessage: "The write was sent but the readback does not match; an operator should check the device.", Metadata: details}
	case errors.Is(err, ErrUnknownChannel):
		return capabilities.Classification{Severity: capabilities.Critical, Kind: capabilities.KindNotFound,
			UserMessage: "The channel to write does not exist.", Metadata: details}
	}
	return capabilities.Classification{Severity: capabilities.Critical, Kind: capabilities.KindUnknown,
		UserMessage: "The write failed.", Metadata: details}
}

func (*ChannelWrite) ClassifierGuide() *capabilities.ClassifierGuide {
	return &capabilities.ClassifierGuide{
		Instructions: "Select only when the user tells you to set, change, adjust or write a value on the machine now. " +
			"Never select it for a question about a setting or about its history or for a hypothetical change.",
		Examples: []capabilities.ClassifierExample{
			{Query: "Set the quadrupole Q1 current in the BTS line to 105 A", Result: true, Reason: "an explicit setpoint change"},
			{Query: "Change the RF cavity 2 voltage to 610 kV", Result: true, Reason: "an explicit setpoint change"},
			{Query: "What is the Q1 current?", Result: false, Reason: "a read, nothing is changed"},
			{Query: "What's the setpoint of the BTS Q1 quadrupole?", Result: false, Reason: "asks what the setting is: a read"},
			{Query: "Was the RF voltage changed yesterday?", Result: false, Reason: "a question about history"},
			{Query: "What would happen if I raised the RF voltage to 650 kV?", Result: false, Reason: "hypothetical: nothing is to change"},
			{Query: "Don't change anything, just read the Q1 current", Result: false, Reason: "the user forbids a change"},
		},
	}
}

func (*ChannelWrite) OrchestratorGuide() *capabilities.OrchestratorGuide {
	return &capabilities.OrchestratorGuide{
		Instructions: "Use channel_write only when the user tells you to change a setting now, never to answer a question about it. It needs CHANNEL_ADDRESSES from channel_finding that name exactly the channel(s) to set. " +
			"Give parameters.value for one channel or parameters.values {channel: number} for several, with exactly the value the user stated. " +
			"A human approves every write; writes outside limits are refused; a plan that writes without the user asking for the change is rejected.",
		Priority: 40,
		Examples: []capabilities.OrchestratorExample{
			{Scenario: "Set the BTS Q1 quadrupole current to 105 A",
				Step: capabilities.PlannedStep{ContextKey: "q1_write", Capability: "channel_write",
					TaskObjective: "Set BTS:MAG:Q1:CURRENT to 105 A", ExpectedOutput: ChannelWriteResultsType,
					Parameters: map[string]any{"value": 105},
					Inputs:     []capabilities.InputRef{{Type: ChannelAddressesType, Key: "q1_channel"}}},
				Notes: "the readback is verified after the write"},
		},
	}
}
