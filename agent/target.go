package agent

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

// Targets: a turn's side effects act on one named target system (the
// demo's "live" machine or its "simulator"), chosen by the turn's options
// (state.Options.Target; Config.Options.Target is the default). The posture
// of each target — writes on or off, how writes are approved, how many a turn
// may make — is this process's configuration (Config.Targets), read where a
// step executes: a resumed, recovered or taken-over turn is judged by the
// configuration of the process that runs it, never by what a checkpoint
// says. docs/time-travel.md and docs/safety.md say what is promised.

// Approval policies of a target (TargetPolicy.Approval).
const (
	// TargetApprovalAlways: every write asks a human (the default; the
	// only policy a target that is not simulated may have).
	TargetApprovalAlways = "always"
	// TargetApprovalNone: writes to a simulated target run without asking;
	// everything else (the switch, the intent, the limits, at most once,
	// the audit) holds.
	TargetApprovalNone = "none"
)

// Refusal reasons of the target checks (see the Refused* constants).
const (
	// RefusedUnknownTarget: the turn's target is not configured in the
	// process that executes the step.
	RefusedUnknownTarget = "unknown_target"
	// RefusedTargetUnsupported: the capability cannot act on the turn's
	// target (it is no capabilities.Targeter naming it).
	RefusedTargetUnsupported = "target_unsupported"
	// RefusedTargetLimit: the turn made the target's MaxWritesPerTurn
	// writes already.
	RefusedTargetLimit = "target_limit"
)

// TargetPolicy is the configured posture of one target.
type TargetPolicy struct {
	// WritesEnabled is the target's write switch; a write runs only when
	// it and the process's switch (Options.WritesEnabled) are both on.
	WritesEnabled bool `json:"writes_enabled"`
	// Simulated marks a target that is not the real machine: replays and
	// forks write to it unless a human chooses another (RehearsalTarget).
	Simulated bool `json:"simulated,omitempty"`
	// Approval is TargetApprovalAlways (default, "") or TargetApprovalNone
	// (only for a simulated target).
	Approval string `json:"approval,omitempty"`
	// MaxWritesPerTurn caps the writes a turn starts on this target,
	// counted from the audit log (so on every replica); 0: no cap.
	MaxWritesPerTurn int `json:"max_writes_per_turn,omitempty"`
}

// asks reports whether a write to the target asks a human.
func (p TargetPolicy) asks() bool { return p.Approval != TargetApprovalNone }

// validateTargets checks Targets and the default target.
func (c *Config) validateTargets() []error {
	var errs []error
	bad := func(field, problem string) { errs = append(errs, &ConfigError{Field: field, Problem: problem}) }
	if len(c.Targets) == 0 {
		if c.Options.Target != "" {
			bad("Options.Target", fmt.Sprintf("names target %q but no Targets are configured", c.Options.Target))
		}
		return errs
	}
	for _, name := range c.targetNames() {
		p := c.Targets[name]
		if strings.TrimSpace(name) == "" || strings.ContainsAny(name, "/ \t\n") {
			bad("Targets", fmt.Sprintf("target name %q must be a word (no spaces or slashes)", name))
		}
		switch p.Approval {
		case "", TargetApprovalAlways:
		case TargetApprovalNone:
			if !p.Simulated {
				bad("Targets["+name+"].Approval", "\"none\" is only allowed for a simulated target: every write to a real machine asks a human")
			}
		default:
			bad("Targets["+name+"].Approval", fmt.Sprintf("must be %q or %q, got %q", TargetApprovalAlways, TargetApprovalNone, p.Approval))
		}
		if p.MaxWritesPerTurn < 0 {
			bad("Targets["+name+"].MaxWritesPerTurn", "must not be negative")
		}
	}
	if _, ok := c.Targets[c.Options.Target]; !ok {
		bad("Options.Target", fmt.Sprintf("the default target %q is not among the configured targets (%s)", c.Options.Target, strings.Join(c.targetNames(), ", ")))
	}
	return errs
}

func (c *Config) targetNames() []string {
	names := make([]string, 0, len(c.Targets))
	for n := range c.Targets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// TargetInfo is a target and its posture, as frontends show it.
type TargetInfo struct {
	Name string `json:"name"`
	TargetPolicy
	// Default: a turn that names no target acts on this one.
	Default bool `json:"default,omitempty"`
	// Rehearsal: replays and forks act on this one unless a human
	// chooses another.
	Rehearsal bool `json:"rehearsal,omitempty"`
	// Writes is whether a write to it can run now: its switch and the
	// process's.
	Writes bool `json:"writes"`
}

// Targets lists the configured targets and their posture, by name (nil
// when none is configured).
func (a *Agent) Targets() []TargetInfo {
	var out []TargetInfo
	for _, n := range a.cfg.targetNames() {
		p := a.cfg.Targets[n]
		out = append(out, TargetInfo{Name: n, TargetPolicy: p, Default: n == a.cfg.Options.Target,
			Rehearsal: n == a.RehearsalTarget(), Writes: p.WritesEnabled && a.cfg.Options.WritesEnabled})
	}
	return out
}

// RehearsalTarget is the target replays and forks act on unless a human
// chooses another: the first simulated target by name, or "" when there is
// none (a rehearsal then runs with writes off).
func (a *Agent) RehearsalTarget() string {
	for _, n := range a.cfg.targetNames() {
		if a.cfg.Targets[n].Simulated {
			return n
		}
	}
	return ""
}

// checkTarget is the option check of a requested target: a configured one.
func (a *Agent) checkTarget(target string) error {
	if target == "" {
		return nil
	}
	if _, ok := a.cfg.Targets[target]; !ok {
		known := "none is configured"
		if len(a.cfg.Targets) > 0 {
			known = "configured: " + strings.Join(a.cfg.targetNames(), ", ")
		}
		return &OptionError{Option: state.SettingTarget, Reason: fmt.Sprintf("unknown target %q (%s)", target, known)}
	}
	return nil
}

// targetRefusal is the gate's check of the turn's target for an action
// that changes something: the reason and message of a refusal, or "" when
// the target may take the write (its switch is checked with the process's).
func (a *Agent) targetRefusal(ctx context.Context, at attempt, action capabilities.Action) (reason, msg string) {
	target := at.s.Turn.Options.Target
	if target == "" {
		return "", ""
	}
	p, ok := a.cfg.Targets[target]
	if !ok {
		return RefusedUnknownTarget, fmt.Sprintf("Step %d (%s) was refused and not carried out: its target %q is not configured in this process.",
			at.idx+1, describe(action, at.ps), target)
	}
	if !actsOn(at.c, target, a.cfg.Options.Target) {
		return RefusedTargetUnsupported, fmt.Sprintf("Step %d (%s) was refused and not carried out: %s cannot act on the %s target.",
			at.idx+1, describe(action, at.ps), at.c.Name(), target)
	}
	if p.MaxWritesPerTurn > 0 {
		n, err := a.writesStarted(ctx, at, target)
		if err != nil {
			return RefusedAuditUnavailable, fmt.Sprintf("Step %d (%s) was not carried out: the writes of this turn on the %s target cannot be counted (%v).",
				at.idx+1, describe(action, at.ps), target, err)
		}
		if n >= p.MaxWritesPerTurn {
			return RefusedTargetLimit, fmt.Sprintf("Step %d (%s) was refused and not carried out: the %s target allows %d write(s) per turn, and this turn made %d.",
				at.idx+1, describe(action, at.ps), target, p.MaxWritesPerTurn, n)
		}
	}
	return "", ""
}

// startOnTarget writes the started record of an attempt, as startEffect
// does, after counting the turn's writes on its target again under a lock,
// so steps running side by side cannot both take the last write a target
// allows (a turn runs in one process at a time). reason is a refusal.
func (a *Agent) startOnTarget(ctx context.Context, at attempt, action capabilities.Action, rec AuditRecord) (reason, msg string, err error) {
	if p := a.cfg.Targets[rec.Target]; p.MaxWritesPerTurn > 0 {
		a.targetStarts.Lock()
		defer a.targetStarts.Unlock()
		if reason, msg := a.targetRefusal(ctx, at, action); reason != "" {
			return reason, msg, nil
		}
	}
	return "", "", a.startEffect(ctx, rec)
}

// writesStarted counts the attempts of this turn started on target, other
// than this one, from the audit log.
func (a *Agent) writesStarted(ctx context.Context, at attempt, target string) (int, error) {
	if a.cfg.AuditLog == nil {
		return 0, fmt.Errorf("no audit log")
	}
	recs, err := ListAudit(ctx, a.cfg.AuditLog, AuditFilter{Thread: threadOf(ctx), Event: AuditStarted, Forward: true})
	if err != nil {
		return 0, err
	}
	own := at.record(ctx).IdempotencyKey
	var keys []string
	for _, r := range recs {
		if r.Target == target && r.Turn == at.s.Turn.Number && r.TurnID == at.s.Turn.ID &&
			r.IdempotencyKey != own && !slices.Contains(keys, r.IdempotencyKey) {
			keys = append(keys, r.IdempotencyKey)
		}
	}
	return len(keys), nil
}

// targetWrites is whether the turn's target takes writes (true when no
// target is configured: the process's switch alone decides).
func (a *Agent) targetWrites(s state.State) bool {
	t := s.Turn.Options.Target
	if t == "" {
		return true
	}
	p, ok := a.cfg.Targets[t]
	return ok && p.WritesEnabled
}

// targetAsks is whether a write on the turn's target asks a human.
func (a *Agent) targetAsks(s state.State) bool {
	p, ok := a.cfg.Targets[s.Turn.Options.Target]
	return !ok || p.asks()
}

// onTarget prefixes a sentence about a write with its target ("on the
// simulator: set …"), so every frontend names where a write goes.
func onTarget(target, s string) string {
	if target == "" {
		return s
	}
	return "on the " + target + " target: " + s
}
