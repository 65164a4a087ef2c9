package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/capgraph/capgraph/state"
)

// Configuration owns safety: Config.Options are the ceiling of every turn.
// A request (TurnRequest.Options, from the Go API or any HTTP API) may only
// tighten them — writes off, more approval, plan approval on, the steps
// that select capabilities and extract the task kept — unless the caller
// may raise a setting (TurnRequest.MayRaise, from a per-key permission in
// the server's configuration). A request that loosens fails with a
// *LoosenError before anything runs. The write switch is checked again
// where a side-effecting step executes, against this process's Config
// (see gate.go), so no stored or requested option can turn it on.

// TurnOptions are the options a turn asks for. A nil field (an absent JSON
// key) keeps the configured value; a set field may only tighten it.
type TurnOptions struct {
	// PlanApproval: true asks for plan approval (tighter); false asks to
	// skip a configured plan approval (looser).
	PlanApproval *bool `json:"plan_approval,omitempty"`
	// ApprovalMode: disabled < selective < all_capabilities; "" keeps the
	// configured mode. Side-effecting steps are always approved, whatever
	// the mode.
	ApprovalMode string `json:"approval_mode,omitempty"`
	// SkipTaskExtraction and SkipClassification widen what runs (the raw
	// message as the task, every capability active): true is looser. They
	// are unconditional; the bounded, automatic skips (a task extraction
	// call only when the message needs the chat, no classifier call while
	// the guides fit the planner's prompt) are node configuration
	// (nodes.Config, model_calls), which no request changes: false keeps
	// them as configured.
	SkipTaskExtraction *bool `json:"skip_task_extraction,omitempty"`
	SkipClassification *bool `json:"skip_classification,omitempty"`
	// WritesEnabled: false turns writes off for the turn; true is allowed
	// only when the configuration enables writes.
	WritesEnabled *bool `json:"writes_enabled,omitempty"`
	// Target names the target system the turn's side effects act on
	// (Config.Targets); "" keeps the configured default. Each target's
	// posture is the configuration's: choosing one loosens nothing.
	Target string `json:"target,omitempty"`
}

// Exactly returns TurnOptions asking for every switch of o (the command
// line's chat sends its whole option set this way). The target is left out:
// a turn that names none acts on the thread's (a fork's rehearsal target)
// or the configured default, and only a human's explicit choice names one.
func Exactly(o state.Options) *TurnOptions {
	return &TurnOptions{PlanApproval: &o.PlanApproval, ApprovalMode: o.ApprovalMode, SkipTaskExtraction: &o.SkipTaskExtraction,
		SkipClassification: &o.SkipClassification, WritesEnabled: &o.WritesEnabled}
}

// UnmarshalJSON refuses unknown keys, so a misspelt option ("writes_enable")
// is an error instead of being silently ignored.
func (o *TurnOptions) UnmarshalJSON(b []byte) error {
	type plain TurnOptions
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p plain
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("options: %w", err)
	}
	if err := checkMode(p.ApprovalMode); err != nil {
		return err
	}
	*o = TurnOptions(p)
	return nil
}

// OptionError is a malformed option of a request, by its JSON name: a
// server answers it as a 400 naming the option. It matches ErrBadRequest.
type OptionError struct {
	Option, Reason string
}

func (e *OptionError) Error() string { return "option " + e.Option + ": " + e.Reason }

// Unwrap makes errors.Is(err, ErrBadRequest) true.
func (e *OptionError) Unwrap() error { return ErrBadRequest }

// checkMode refuses an approval mode that is none of the three.
func checkMode(mode string) error {
	if validMode(mode) {
		return nil
	}
	return &OptionError{Option: "approval_mode", Reason: fmt.Sprintf("must be %q, %q or %q, got %q",
		state.ApprovalModeDisabled, state.ApprovalModeSelective, state.ApprovalModeAll, mode)}
}

// ErrLoosen is the kind of every *LoosenError.
var ErrLoosen = errors.New("agent: a request may only tighten the configured safety settings")

// LoosenError is a request asking for a safety setting looser than the
// configuration. Nothing of the turn ran.
type LoosenError struct {
	// Setting is the setting's name (Setting* constants).
	Setting string
	// Configured and Requested are the two values, as text.
	Configured, Requested string
	// Hint says how a deployment allows it, for the human reading the error.
	Hint string
}

func (e *LoosenError) Error() string {
	msg := fmt.Sprintf("option %s: the request asks for %s but the configuration says %s; a request may only tighten the configured safety settings",
		e.Setting, e.Requested, e.Configured)
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrLoosen) true.
func (e *LoosenError) Unwrap() error { return ErrLoosen }

// approvalRank orders approval modes from loosest to strictest.
func approvalRank(mode string) int {
	switch mode {
	case state.ApprovalModeDisabled:
		return 0
	case state.ApprovalModeAll:
		return 2
	}
	return 1 // selective, also ""
}

// TurnOptions returns the options a turn of req runs with: the configured
// ones tightened by req.Options. A looser request is a *LoosenError unless
// req.MayRaise names the setting; a malformed one matches ErrBadRequest.
func (a *Agent) TurnOptions(req TurnRequest) (state.Options, error) {
	if req.Options != nil {
		if err := a.checkTarget(req.Options.Target); err != nil {
			return a.cfg.Options, err
		}
	}
	return turnOptions(a.cfg.Options, req.Options, req.MayRaise)
}

func turnOptions(cfg state.Options, req *TurnOptions, mayRaise []string) (state.Options, error) {
	for i, s := range mayRaise {
		if !slices.Contains(state.RaisableSettings(), s) {
			why := "known: " + strings.Join(state.RaisableSettings(), ", ")
			if s == state.SettingWritesEnabled {
				why = "the write switch is the process's configuration (control_system.writes_enabled); no request may raise it"
			}
			return cfg, fmt.Errorf("%w: may-raise setting %d (%q) cannot be raised: %s", ErrBadRequest, i, s, why)
		}
	}
	out := cfg
	if req == nil {
		return out, nil
	}
	if err := checkMode(req.ApprovalMode); err != nil {
		return cfg, err
	}
	may := func(s string) bool { return slices.Contains(mayRaise, s) }
	loosen := func(setting, configured, requested string) error {
		hint := "an API key may raise it only with " + setting + " in its may_raise list"
		if setting == state.SettingWritesEnabled {
			hint = "writes are enabled only by the configuration (control_system.writes_enabled)"
		}
		return &LoosenError{Setting: setting, Configured: configured, Requested: requested, Hint: hint}
	}
	// Settings checked in this order, so the same request names the same one.
	if v := req.WritesEnabled; v != nil {
		if *v && !cfg.WritesEnabled {
			return cfg, loosen(state.SettingWritesEnabled, "false", "true")
		}
		out.WritesEnabled = *v
	}
	if req.Target != "" {
		out.Target = req.Target
	}
	if m := req.ApprovalMode; m != "" {
		if approvalRank(m) < approvalRank(cfg.ApprovalMode) && !may(state.SettingApprovalMode) {
			return cfg, loosen(state.SettingApprovalMode, cfg.Mode(), m)
		}
		out.ApprovalMode = m
	}
	if v := req.PlanApproval; v != nil {
		if !*v && cfg.PlanApproval && !may(state.SettingPlanApproval) {
			return cfg, loosen(state.SettingPlanApproval, "true", "false")
		}
		out.PlanApproval = *v
	}
	if v := req.SkipClassification; v != nil {
		if *v && !cfg.SkipClassification && !may(state.SettingSkipClassification) {
			return cfg, loosen(state.SettingSkipClassification, "false", "true")
		}
		out.SkipClassification = *v
	}
	if v := req.SkipTaskExtraction; v != nil {
		if *v && !cfg.SkipTaskExtraction && !may(state.SettingSkipTaskExtraction) {
			return cfg, loosen(state.SettingSkipTaskExtraction, "false", "true")
		}
		out.SkipTaskExtraction = *v
	}
	return out, nil
}
