package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/state"
)

// The execution gate: a step of a side-effecting capability runs only if,
// at the moment it executes (on every path), the caller may use it, this
// process's write switch is on, the user asked for that change and a human
// approved exactly that action. The rules and their reasons: docs/safety.md.

// KindRefused is the classification kind of a side-effecting step the gate
// refused for a reason other than the write switch (kind writes_disabled)
// or the caller's allowed capabilities (kind not_allowed); the reason is
// in the metadata under capabilities.MetaSafetyAbortReason.
const KindRefused = "refused"

// Refusal reasons: why the gate refused a side-effecting step (the audit
// record's Reason and the classification's safety_abort_reason).
const (
	RefusedWritesDisabled   = "writes_disabled"
	RefusedNotAllowed       = "not_allowed"
	RefusedNoChangeIntent   = "no_change_intent"
	RefusedIntentMismatch   = "intent_mismatch"
	RefusedActionChanged    = "action_changed"
	RefusedApprovalExpired  = "approval_expired"
	RefusedAuditUnavailable = "audit_unavailable"
	// RefusedByApplication: the capability refuses the action whatever a
	// human says (capabilities.ActionRefusedError without a reason).
	RefusedByApplication = "refused_by_application"
)

// gateResult is what the gate decided for one attempt.
type gateResult struct {
	// update ends the attempt without running it (refused, or failed to
	// describe the action); err ends it with an interrupt (an approval,
	// an escalation) or a FATAL error instead.
	update *state.Update
	err    error
	// ps is the step to execute (with its grant), action what it does,
	// before the machine state it starts from (nil: the capability cannot
	// read back).
	ps     state.PlanStep
	action capabilities.Action
	before []capabilities.Reading
}

// writesEnabled is the effective write switch of a turn in this process.
func (a *Agent) writesEnabled(s state.State) bool {
	return a.cfg.Options.WritesEnabled && s.Turn.Options.WritesEnabled && a.targetWrites(s)
}

// ownAnswer reports whether approval id answers the step whose first
// question was apID: that question, or one asked again after the machine
// moved (reaskID).
func ownAnswer(id, apID string) bool {
	return id == apID || strings.HasPrefix(id, apID+"/")
}

// reaskID is the id of a step's question asked again (the machine moved
// since the answer to prev): new for every machine state, the same when a
// crash makes the node ask again from the same state.
func reaskID(apID, prev string, now []capabilities.Reading) string {
	b, _ := json.Marshal(now)
	sum := sha256.Sum256(append([]byte(prev+"\x00"), b...))
	return apID + "/" + hex.EncodeToString(sum[:4])
}

// gate runs checks 2–4 (the step wrapper made check 1) for the attempt of
// a step of a side-effecting capability whose inputs resolved; step is
// what the capability would receive, log what the audit log holds of the
// attempt. at.ans is the human's answer when the node was re-entered with
// one.
func (a *Agent) gate(ctx context.Context, at attempt, step capabilities.Step, log attemptLog) gateResult {
	c, idx := at.c, at.idx
	action, err := capabilities.DescribeAction(c, step)
	action.Target = at.s.Turn.Options.Target
	refusal, refused := errors.AsType[*capabilities.ActionRefusedError](err)
	if (err == nil || refused) && action.Summary == "" {
		action.Summary = actionSummary(action)
	}
	if err == nil && len(action.Changes) == 0 {
		// The capability found nothing to change (the target does not
		// exist, say): no switch, intent or approval guards a step that
		// changes nothing. A capability that describes no change must make none.
		return gateResult{ps: at.ps, action: action}
	}
	g := &gating{a: a, ctx: ctx, at: at, step: step, log: log, action: action, rec: at.record(ctx)}
	g.rec.setAction(action)
	if !a.writesEnabled(at.s) {
		where := "the configuration (control_system.writes_enabled is false)"
		switch t := at.s.Turn.Options.Target; {
		case !a.cfg.Options.WritesEnabled:
		case !a.targetWrites(at.s):
			where = fmt.Sprintf("the configuration of the %s target (targets.%s.writes_enabled is false)", t, t)
		default:
			where = "this turn's options"
		}
		return g.refuse(RefusedWritesDisabled, fmt.Sprintf("Writes are disabled by %s, so step %d (%s) was not carried out and nothing was changed.",
			where, idx+1, describe(action, at.ps)))
	}
	if reason, msg := a.targetRefusal(ctx, at, action); reason != "" {
		return g.refuse(reason, msg)
	}
	if err != nil && !refused {
		return g.undescribed(err)
	}
	if refused && refusal.Reason == capabilities.ReasonNotFinite {
		// Not a number: it cannot even be compared with what the user asked.
		return g.refuse(refusal.Reason, fmt.Sprintf("Step %d was refused and not carried out: %s", idx+1, strings.TrimSpace(refusal.Message)))
	}
	if at.s.Turn.Task != nil {
		g.asked = at.s.Turn.Task.Intent
	}
	var current []capabilities.Reading // a relative or directed change is judged against the value now
	if g.asked.Relative() || g.asked.Directed() {
		current = readBefore(ctx, c, action)
	}
	if g.asked.Restores() {
		// A dated restore against the value its history gives for that time.
		g.history = readHistory(ctx, c, action, g.asked)
		current = append(current, g.history...)
	}
	if err := g.asked.Permits(action, current); err != nil {
		reason := RefusedNoChangeIntent
		if errors.Is(err, intent.ErrMismatch) {
			reason = RefusedIntentMismatch
		}
		return g.refuse(reason, fmt.Sprintf("Step %d (%s) was refused and not carried out: %v.", idx+1, action.Summary, err))
	}
	if refused {
		// The application refuses this action whatever a human says (a
		// limit, a read-only target): nobody is asked.
		return g.refuse(nonEmpty(refusal.Reason, RefusedByApplication), fmt.Sprintf("Step %d was refused and not carried out: %s",
			idx+1, strings.TrimSpace(refusal.Message)))
	}
	g.digest = action.Digest()
	switch {
	case at.mine() && at.ans.Approved:
		return g.approvedNow()
	case at.ps.Grant != nil:
		return g.approvedBefore()
	}
	// Side effects always need a human's approval, whatever the approval
	// mode says, and the question names the exact action — except on a
	// simulated target whose configuration says none (target.go).
	before, stop := g.read()
	if stop != nil {
		return *stop
	}
	if !a.targetAsks(at.s) {
		return gateResult{ps: at.ps, action: action, before: before}
	}
	return g.ask(at.apID, before, "")
}

// gating is one pass of an attempt through the gate, once the action it
// would carry out is known: what its refusals, questions and approvals
// record.
type gating struct {
	a    *Agent
	ctx  context.Context
	at   attempt
	step capabilities.Step
	log  attemptLog
	// action is what the attempt would do, digest its digest (set once
	// the checks before the approval have passed), asked what the user
	// asked for.
	action capabilities.Action
	digest string
	asked  intent.Intent
	// history is the targets' values at the times a dated restore names.
	history []capabilities.Reading
	// rec is the attempt's audit record with its action, for each event.
	rec AuditRecord
}

// refuse ends the attempt without running it, on the record.
func (g *gating) refuse(reason, msg string) gateResult {
	at, rec := g.at, g.rec
	u := g.a.refuse(g.ctx, at, reason, msg)
	rec.Event, rec.Outcome, rec.Reason, rec.Message = AuditRefused, capabilities.OutcomeRefused, reason, msg
	if at.mine() {
		rec.ApprovalID, rec.ApprovedBy, rec.Rule, rec.Answer = at.ans.ID, at.ans.By, at.ans.Rule, at.ans.Answer
	}
	g.a.auditBestEffort(g.ctx, rec)
	return gateResult{update: &u}
}

// undescribed ends an attempt whose capability cannot say what it would do
// (an ambiguous value, say): nothing ran, and err's classification decides
// the recovery.
func (g *gating) undescribed(err error) gateResult {
	at, rec := g.at, g.rec
	cl := capabilities.Classify(at.c, err, capabilities.ErrorContext{Capability: at.c.Name(), StepIndex: at.idx, Attempt: at.n, Task: taskText(at.s)})
	msg := "the action could not be determined: " + err.Error()
	rec.Event, rec.Outcome, rec.Reason, rec.Message = AuditEnded, capabilities.OutcomeFailed, cl.Kind, msg
	g.a.auditBestEffort(g.ctx, rec)
	f := g.a.stepFailure(at)
	f.Classification, f.Message, f.Recover = cl, msg, true
	u, err := g.a.fail(g.ctx, at.s, f, err)
	if err != nil {
		return gateResult{err: err}
	}
	return gateResult{update: &u}
}

// ask puts the action to a human as question id, showing the machine state
// before it; why says why it is asked again, if it is.
func (g *gating) ask(id string, before []capabilities.Reading, why string) gateResult {
	a, at, action := g.a, g.at, g.action
	ap := a.stepApproval(id, at.c, g.step, onTarget(action.Target, action.Summary), at.now)
	ap.Action, ap.ActionDigest, ap.Before = &action, g.digest, before
	if d := g.asked.Derivation(action, append(slices.Clone(before), g.history...)); len(d) > 0 {
		// A relative change or a dated restore: the value comes from a
		// reading, and the human sees how ("BTS:MAG:Q1:CURRENT: 92 A + 5 A
		// = 97 A", "…: its value of yesterday (…) was 92 A").
		ap.Summary += " (" + strings.Join(d, "; ") + ")"
	}
	if why != "" {
		ap.Summary = "Asked again: " + why + " since the approval. " + ap.Summary
	}
	if first, ok := g.log.asked[id]; ok {
		// The same question again (a sibling's answer re-entered this
		// step, or a crash did): it keeps the time it was first asked,
		// so its expiry and a chat's token stay, and is on record once.
		ap.Created, ap.Expires = first, a.expires(first)
		return gateResult{err: graph.Interrupt(ap)}
	}
	q := g.rec
	q.Event, q.ApprovalID, q.Before, q.Message = AuditAsked, id, before, why
	a.auditBestEffort(g.ctx, q)
	return gateResult{err: graph.Interrupt(ap)}
}

// read is the machine state now; a reading that is not a finite number
// cannot be judged (nor ever matched again), so nobody is asked: stop is
// the refusal then.
func (g *gating) read() (now []capabilities.Reading, stop *gateResult) {
	now = readBefore(g.ctx, g.at.c, g.action)
	if refusal, ok := errors.AsType[*capabilities.ActionRefusedError](validateReadings(now)); ok {
		r := g.refuse(refusal.Reason, fmt.Sprintf("Step %d (%s) was refused and not carried out: %s", g.at.idx+1, g.action.Summary, refusal.Message))
		return nil, &r
	}
	return now, nil
}

// approvedNow is the answer to this step's question: it approves the
// action that was asked, which must be the one the step describes now,
// against the machine state it was shown. The approval is on record
// before the action runs: without it, the step does not run.
func (g *gating) approvedNow() gateResult {
	a, at, action, ans := g.a, g.at, g.action, g.at.ans
	if ans.ActionDigest != g.digest {
		return g.refuse(RefusedActionChanged, fmt.Sprintf("Step %d was approved for another action than it would now carry out (%s); it was refused and nothing was changed.",
			at.idx+1, action.Summary))
	}
	grant := &state.Grant{ApprovalID: ans.ID, Digest: g.digest, By: ans.By, At: ans.At}
	if a.cfg.ApprovalExpiry > 0 {
		grant.Expires = ans.At.Add(a.cfg.ApprovalExpiry)
	}
	if !grant.Expires.IsZero() && !at.now.Before(grant.Expires) {
		return g.refuse(RefusedApprovalExpired, fmt.Sprintf("The approval of step %d (%s) expired at %s before the step could run; nothing was changed.",
			at.idx+1, action.Summary, grant.Expires.UTC().Format(time.RFC3339)))
	}
	before, stop := g.read()
	if stop != nil {
		return *stop
	}
	if why := drifted(action, ans.Before, before); why != "" {
		return g.ask(reaskID(at.apID, ans.ID, before), before, why)
	}
	if !slices.Contains(g.log.approved, ans.ID) {
		// A refusal below keeps the approval's fields in its record.
		g.rec.Event, g.rec.ApprovalID, g.rec.ApprovedBy, g.rec.ApprovedAt = AuditApproved, grant.ApprovalID, grant.By, grant.At
		g.rec.Rule, g.rec.Answer, g.rec.Before = ans.Rule, ans.Answer, ans.Before
		if err := a.auditRecord(g.ctx, g.rec); err != nil {
			return g.refuse(RefusedAuditUnavailable, fmt.Sprintf("Step %d (%s) was approved but its audit record could not be written (%v), so it was not carried out.",
				at.idx+1, action.Summary, err))
		}
	}
	grant.Before = before
	ps := at.ps
	ps.Approved, ps.Grant = true, grant
	return gateResult{ps: ps, action: action, before: before}
}

// approvedBefore is a retry of a step approved before, known not to have
// taken effect: the grant holds while the action and the machine state it
// was given for do.
func (g *gating) approvedBefore() gateResult {
	at, action, grant := g.at, g.action, g.at.ps.Grant
	if grant.Digest != g.digest {
		return g.refuse(RefusedActionChanged, fmt.Sprintf("Step %d was approved for another action than it would now carry out (%s); it was refused and nothing was changed.",
			at.idx+1, action.Summary))
	}
	if !grant.Expires.IsZero() && !at.now.Before(grant.Expires) {
		return g.refuse(RefusedApprovalExpired, fmt.Sprintf("The approval of step %d (%s) expired at %s before this attempt; nothing more was changed.",
			at.idx+1, action.Summary, grant.Expires.UTC().Format(time.RFC3339)))
	}
	before, stop := g.read()
	if stop != nil {
		return *stop
	}
	if why := drifted(action, grant.Before, before); why != "" {
		return g.ask(reaskID(at.apID, grant.ApprovalID+"/"+strconv.Itoa(at.n), before), before, why)
	}
	ps := at.ps
	ps.Approved = true
	return gateResult{ps: ps, action: action, before: before}
}

// refuse is a CRITICAL failure of a side-effecting step that did not run:
// no retry, no fallback; the error node explains it.
func (a *Agent) refuse(ctx context.Context, at attempt, reason, msg string) state.Update {
	c := at.c
	kind := KindRefused
	switch reason {
	case RefusedWritesDisabled:
		kind = capabilities.KindWritesDisabled
	case RefusedNotAllowed:
		kind = KindNotAllowed
	}
	emit(ctx, Event{Type: EventDenied, Node: c.Name(), Step: at.idx, Capability: c.Name(), Text: msg})
	cl := capabilities.Classification{Severity: capabilities.Critical, Kind: kind, UserMessage: msg,
		Metadata: map[string]any{capabilities.MetaSafetyAbortReason: reason}}
	if reason == RefusedWritesDisabled {
		cl.Metadata[capabilities.MetaSuggestions] = []string{"an operator can enable writes by setting control_system.writes_enabled: true in the configuration file"}
	}
	f := a.stepFailure(at)
	f.Classification, f.Message = cl, msg
	u, _ := a.fail(ctx, at.s, f, nil) // no recovery: nothing but an update
	return u
}

// actionSummary describes an action that has no summary of its own.
func actionSummary(a capabilities.Action) string {
	if len(a.Changes) == 0 {
		return "run " + a.Capability
	}
	parts := make([]string, len(a.Changes))
	for i, ch := range a.Changes {
		v := fmt.Sprint(ch.Value)
		if _, isMap := ch.Value.(map[string]any); isMap || v == "" {
			if b, err := jsonString(ch.Value); err == nil {
				v = b
			}
		}
		parts[i] = fmt.Sprintf("set %s to %s", ch.Target, v)
		if ch.Unit != "" {
			parts[i] += " " + ch.Unit
		}
	}
	return a.Capability + ": " + strings.Join(parts, "; ")
}

// describe names a step for a refusal message.
func describe(a capabilities.Action, ps state.PlanStep) string {
	if a.Summary != "" {
		return a.Summary
	}
	if a.Capability != "" && len(a.Changes) > 0 {
		return actionSummary(a)
	}
	return ps.Effective() + ": " + ps.TaskObjective
}

func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
