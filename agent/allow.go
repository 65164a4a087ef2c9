package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

// A caller (an API key of the server, say) may be limited to some
// capabilities: TurnRequest.AllowedCapabilities. The set is kept in the
// thread's metadata under MetaAllowedCapabilities, so a resumed run (an
// approval answer, a crash recovery) enforces the set of the turn that
// started it. It is enforced four times: after the classifier (selection
// and dependency expansion), after the orchestrator (a plan may name any
// registered capability), at plan approval (an edited plan naming a
// capability not allowed is an invalid plan: *NotAllowedError), and in the
// step wrapper, which never executes a step whose capability is not allowed. respond and clarify are always
// allowed: without them a turn could not end with a message.

// MetaAllowedCapabilities is the metadata key holding a turn's allowed
// capabilities (comma-separated, sorted). Absent means every capability is
// allowed. The agent sets it from TurnRequest.AllowedCapabilities and
// removes it when that is nil, so it cannot be set through Metadata.
const MetaAllowedCapabilities = "allowed_capabilities"

// KindNotAllowed is the classification kind of a capability the caller may
// not use. It is CRITICAL: another attempt would be refused again.
const KindNotAllowed = "not_allowed"

// NotAllowedError: an edited plan names a capability the turn may not use.
// Resume reports it inside an *ApprovalError of kind ErrInvalidPlan (the
// approval stays pending).
type NotAllowedError struct {
	Step       int    // index of the step in the edited plan, from 0
	Capability string // what it names
}

func (e *NotAllowedError) Error() string {
	return fmt.Sprintf("step %d: capability %q is not allowed for this turn's caller", e.Step+1, e.Capability)
}

// validateAllowed checks a TurnRequest's allowed set: known capability names only.
func (a *Agent) validateAllowed(list []string) error {
	for i, name := range list {
		if strings.TrimSpace(name) == "" || strings.Contains(name, ",") {
			return fmt.Errorf("%w: allowed capability %d (%q) must be a capability name", ErrBadRequest, i, name)
		}
		if _, ok := a.cfg.Registry.Get(name); !ok && !alwaysAllowed(name) {
			return fmt.Errorf("%w: allowed capability %q is not registered (registered: %s)", ErrBadRequest, name, strings.Join(a.cfg.Registry.Names(), ", "))
		}
	}
	return nil
}

// withAllowed returns md with the allowed set of the turn recorded (or
// removed for nil: no restriction).
func withAllowed(md map[string]string, list []string) map[string]string {
	if list == nil {
		if _, ok := md[MetaAllowedCapabilities]; !ok {
			return md
		}
		md = mergeMeta(md, nil)
		delete(md, MetaAllowedCapabilities)
		return md
	}
	names := slices.Clone(list)
	slices.Sort(names)
	names = slices.Compact(names)
	md = mergeMeta(md, map[string]string{MetaAllowedCapabilities: strings.Join(names, ",")})
	return md
}

// allowedSet returns the capabilities the thread's current turn may use and
// whether there is a restriction at all.
func allowedSet(s state.State) (map[string]bool, bool) {
	v, ok := s.Metadata[MetaAllowedCapabilities]
	if !ok {
		return nil, false
	}
	set := map[string]bool{}
	for _, n := range strings.Split(v, ",") {
		if n = strings.TrimSpace(n); n != "" {
			set[n] = true
		}
	}
	return set, true
}

// allowedList is the allowed set of the thread's turn as a request names
// it: nil when there is no restriction.
func allowedList(s state.State) []string {
	set, restricted := allowedSet(s)
	if !restricted {
		return nil
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func alwaysAllowed(name string) bool {
	return name == state.NodeRespond || name == state.NodeClarify
}

// allowed reports whether the turn of s may run capability name.
func allowed(s state.State, name string) bool {
	set, restricted := allowedSet(s)
	return !restricted || alwaysAllowed(name) || set[name]
}

// narrowedKey is the context key of WithAllowedCapabilities' set.
type narrowedKey struct{}

// WithAllowedCapabilities narrows the capabilities a step run under ctx
// may execute to names (respond and clarify always), beside the set the
// thread's turn was started with; nil narrows nothing. A server passes
// its caller's current set to every run, so a key's capabilities narrowed
// in the configuration after a turn began hold when the turn goes on (an
// approval's answer, a recovery, a replay). It is enforced where the
// turn's own set is: the selection, the plan and the step wrapper.
func WithAllowedCapabilities(ctx context.Context, names []string) context.Context {
	if names == nil {
		return ctx
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return context.WithValue(ctx, narrowedKey{}, set)
}

// allowedIn reports whether a run under ctx may run capability name in
// the turn of s: the turn's set and the set ctx narrows to both allow it.
func allowedIn(ctx context.Context, s state.State, name string) bool {
	set, narrowed := ctx.Value(narrowedKey{}).(map[string]bool)
	return allowed(s, name) && (!narrowed || alwaysAllowed(name) || set[name])
}

// restrictedIn reports whether a run under ctx is held to some set.
func restrictedIn(ctx context.Context, s state.State) bool {
	_, restricted := allowedSet(s)
	_, narrowed := ctx.Value(narrowedKey{}).(map[string]bool)
	return restricted || narrowed
}

// notAllowedInfo is the CRITICAL failure of a turn that needs a capability
// the caller may not use.
func notAllowedInfo(node, capability string, step int, msg string, now time.Time) *state.ErrorInfo {
	return &state.ErrorInfo{Node: node, Capability: capability, StepIndex: step, At: now, Message: msg,
		Classification: notAllowed(capability, msg)}
}

// notAllowed classifies a refusal; its suggestion reaches the error report.
func notAllowed(capability, msg string) capabilities.Classification {
	return capabilities.Classification{Severity: capabilities.Critical, Kind: KindNotAllowed, UserMessage: msg,
		Metadata: map[string]any{capabilities.MetaSuggestions: "ask an administrator for access to " + capability + " if you need it"}}
}

// enforceAllowed applies the allowed set to a successful classifier or
// orchestrator update (the other nodes select nothing).
func (a *Agent) enforceAllowed(ctx context.Context, s state.State, node string, u state.Update) state.Update {
	if !restrictedIn(ctx, s) || u.Turn == nil {
		return u
	}
	switch node {
	case state.NodeClassifier:
		return a.enforceSelection(ctx, s, u)
	case state.NodeOrchestrator:
		return a.enforcePlan(ctx, s, u)
	}
	return u
}

// enforceSelection removes capabilities the caller may not use from the
// selection. A removed capability that an allowed one depends on (it is
// the only active provider of a required type the context store lacks), or
// a selection left with nothing but respond and clarify, ends the turn with
// an error report naming the capability: answering without it would
// pretend the request was served.
func (a *Agent) enforceSelection(ctx context.Context, s state.State, u state.Update) state.Update {
	t := *u.Turn
	var kept, denied []string
	for _, name := range t.ActiveCapabilities {
		if allowedIn(ctx, s, name) {
			kept = append(kept, name)
		} else {
			denied = append(denied, name)
		}
	}
	if len(denied) == 0 {
		return u
	}
	t.ActiveCapabilities = kept
	now := a.cfg.Now()
	for _, d := range denied {
		emit(ctx, Event{Type: EventDenied, Node: state.NodeClassifier, Capability: d, Step: -1, Text: d + " was selected but this caller may not use it"})
	}
	// A denied capability an allowed one needs.
	for _, name := range kept {
		c, ok := a.cfg.Registry.Get(name)
		if !ok {
			continue
		}
		for _, req := range c.Requires() {
			if s.Context.Has(req.Type) || providedByAny(a.cfg.Registry, kept, req.Type) {
				continue
			}
			for _, d := range denied {
				if providedByAny(a.cfg.Registry, []string{d}, req.Type) {
					msg := fmt.Sprintf("%s needs %s (for %s), which this caller is not allowed to use", name, d, req.Type)
					t.Control.Error = notAllowedInfo(state.NodeClassifier, d, -1, msg, now)
					u.Turn = &t
					return u
				}
			}
		}
	}
	useful := slices.ContainsFunc(kept, func(n string) bool { return !alwaysAllowed(n) })
	if !useful {
		msg := fmt.Sprintf("the request needs %s, which this caller is not allowed to use", strings.Join(denied, ", "))
		t.Control.Error = notAllowedInfo(state.NodeClassifier, denied[0], -1, msg, now)
		u.Turn = &t
		return u
	}
	emit(ctx, Event{Type: EventStatus, Node: state.NodeClassifier,
		Text: fmt.Sprintf("Left out %s: this caller is not allowed to use it", strings.Join(denied, ", "))})
	emit(ctx, Event{Type: EventCapabilities, Node: state.NodeClassifier, Capabilities: slices.Clone(kept)})
	u.Turn = &t
	return u
}

// enforcePlan refuses a plan naming a capability the caller may not use,
// before any of its steps runs.
func (a *Agent) enforcePlan(ctx context.Context, s state.State, u state.Update) state.Update {
	t := *u.Turn
	t.ActiveCapabilities = slices.DeleteFunc(slices.Clone(t.ActiveCapabilities), func(n string) bool { return !allowedIn(ctx, s, n) })
	u.Turn = &t
	if t.Plan == nil {
		return u
	}
	for i, st := range t.Plan.Steps {
		if !allowedIn(ctx, s, st.Capability) {
			msg := fmt.Sprintf("the plan's step %d uses %s, which this caller is not allowed to use", i+1, st.Capability)
			emit(ctx, Event{Type: EventDenied, Node: state.NodeOrchestrator, Capability: st.Capability, Step: i, Text: msg})
			t.Control.Error = notAllowedInfo(state.NodeOrchestrator, st.Capability, -1, msg, a.cfg.Now())
			return u
		}
	}
	return u
}

// refuseStep is the step wrapper's defence: a step whose capability is not
// allowed fails CRITICAL without running (and without fallbacks).
func (a *Agent) refuseStep(ctx context.Context, at attempt) state.Update {
	name := at.c.Name()
	msg := fmt.Sprintf("step %d uses %s, which this caller is not allowed to use; it was not run", at.idx+1, name)
	emit(ctx, Event{Type: EventDenied, Node: name, Step: at.idx, Capability: name, Text: msg})
	f := a.stepFailure(at)
	f.Classification, f.Message = notAllowed(name, msg), msg
	u, _ := a.fail(ctx, at.s, f, nil) // no recovery: nothing but an update
	return u
}

func providedByAny(reg *capabilities.Registry, names []string, typ string) bool {
	for _, n := range names {
		if c, ok := reg.Get(n); ok && slices.Contains(c.Provides(), typ) {
			return true
		}
	}
	return false
}
