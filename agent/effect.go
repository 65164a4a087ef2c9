package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/state"
)

// A side effect runs at most once. Before a side-effecting capability is
// called, the step wrapper records durably that this attempt starts (the
// started record, under the attempt's idempotency key); after it returns,
// the outcome (the ended record, with the readback and the result). A node
// re-entered with the same key — a resume, a run recovered after a crash,
// another replica taking the run over — reads those records first:
//
//   - an ended attempt is replayed from its record, never run again;
//   - a started attempt without an end is in doubt: the capability is asked
//     to reconcile it (Reconciler, else Readbacker against the values before
//     and the values asked); without a way to reconcile, the outcome is
//     unconfirmed and the turn ends in the error report, which says that the
//     change may or may not have happened. Only an idempotent capability
//     (Idempotenter) runs again with the same key.
//
// docs/safety.md, "At most once", states the promise; docs/persistence.md
// what it costs.

// reasonIdempotentRerun marks the ended record of an idempotent attempt
// cut in doubt: it runs again with its key.
const reasonIdempotentRerun = "reconciled_idempotent"

// reconcileTimeout bounds one readback or reconciliation.
const reconcileTimeout = 30 * time.Second

// attemptLog is what the audit log holds of one attempt (one idempotency key).
type attemptLog struct {
	// last is the latest started or ended record (nil: none).
	last *AuditRecord
	// approved lists the approval ids already recorded as approved; asked
	// maps each approval id asked to when it was first asked.
	approved []string
	asked    map[string]time.Time
}

// attemptRecords reads the audit records of the attempt with key.
func (a *Agent) attemptRecords(ctx context.Context, thread, key string) (attemptLog, error) {
	var l attemptLog
	if a.cfg.AuditLog == nil {
		return l, fmt.Errorf("agent: no audit log (the store keeps no records and Config.AuditLog is nil)")
	}
	recs, err := ListAudit(ctx, a.cfg.AuditLog, AuditFilter{Thread: thread, IdempotencyKey: key, Forward: true})
	if err != nil {
		return l, err
	}
	for i := range recs {
		r := recs[i].AuditRecord
		switch r.Event {
		case AuditStarted, AuditEnded:
			l.last = &r
		case AuditApproved:
			l.approved = append(l.approved, r.ApprovalID)
		case AuditAsked:
			if _, ok := l.asked[r.ApprovalID]; !ok {
				if l.asked == nil {
					l.asked = map[string]time.Time{}
				}
				l.asked[r.ApprovalID] = r.Time
			}
		}
	}
	return l, nil
}

// effectResult is how the at-most-once execution of one attempt ended.
type effectResult struct {
	// out and err are the attempt's output or its error, for the step
	// wrapper to store or classify as for any capability.
	out capabilities.Output
	err error
	// critical, when set, ends the step as it is (no retry, no fallback):
	// a mismatch or an unconfirmed outcome, or a record that cannot be written.
	critical *capabilities.Classification
	// open: the run was canceled during the call; the attempt stays in
	// doubt and is reconciled when the run resumes.
	open bool
}

// startEffect writes the started record of a fresh attempt; it must be
// durable before the capability is called. Every checkpoint of the run so
// far is made durable first (graph.Flush; a no-op unless the graph writes
// them asynchronously): after a crash the run resumes at this step, with
// this attempt's key, never at an earlier one that could plan anew.
func (a *Agent) startEffect(ctx context.Context, rec AuditRecord) error {
	if err := graph.Flush(ctx); err != nil {
		return err
	}
	rec.Event, rec.Outcome, rec.Reason, rec.Message = AuditStarted, "", "", "the capability is called now; its outcome follows in an ended record"
	return a.auditRecord(ctx, rec)
}

// execEffect calls the capability once for a started attempt and records
// its outcome. rec is the started record.
func (a *Agent) execEffect(ctx context.Context, deadline time.Time, c capabilities.Capability, step capabilities.Step, action capabilities.Action, rec AuditRecord) effectResult {
	start := a.cfg.Now()
	b := a.executeBounded(ctx, deadline, c, step)
	out, err := b.out, b.err
	end := a.cfg.Now()
	rec.Time, rec.Duration = end, end.Sub(start)
	if b.abandoned {
		return a.abandonedEffect(ctx, c, step, action, rec, b)
	}
	if err != nil {
		if _, ok := graph.IsInterrupt(err); ok {
			// The capability asks a human before it acts: nothing happened.
			rec.Event, rec.Message = AuditEnded, "the capability asked a human before acting; nothing was changed"
			a.auditBestEffort(ctx, rec)
			return effectResult{err: err}
		}
		if ctx.Err() != nil {
			emit(ctx, Event{Type: EventStatus, Node: c.Name(), Step: step.Index, Capability: c.Name(),
				Text: "the run was canceled while " + c.Name() + " ran; whether it took effect is reconciled when the run resumes"})
			return effectResult{open: true}
		}
	}
	var outcome capabilities.Outcome
	var readings []capabilities.Reading
	switch {
	case err == nil:
		outcome, readings = a.confirm(ctx, c, action)
	case errors.Is(err, capabilities.ErrNotApplied), errors.Is(err, capabilities.ErrWritesDisabled):
		outcome = capabilities.OutcomeFailed
	case isIdempotent(c):
		outcome = capabilities.OutcomeFailed // running it again is harmless
	default:
		// The call failed part-way, perhaps after the change: find out.
		outcome, readings = a.reconcile(ctx, c, step, action, rec.Before)
	}
	rec.Event, rec.Outcome, rec.Readback = AuditEnded, outcome, readings
	switch outcome {
	case capabilities.OutcomeConfirmed:
		if err != nil {
			rec.Message = "the capability failed (" + err.Error() + ") but the readback shows the change was made"
			out, err = reconciledOutput(c, action, readings), nil
		}
		rec.setResult(out)
	case capabilities.OutcomeFailed:
		cl := capabilities.Classify(c, err, capabilities.ErrorContext{Capability: c.Name(), StepIndex: step.Index, Attempt: step.Attempt})
		rec.Reason, rec.Severity, rec.Message = cl.Kind, cl.Severity.String(), err.Error()
	default:
		if err != nil {
			rec.Reason, rec.Message = capabilities.DefaultClassify(err).Kind, err.Error()
		} else {
			rec.Message = "the capability reported success"
		}
	}
	if werr := a.auditRecord(ctx, rec); werr != nil {
		emit(ctx, Event{Type: EventStatus, Node: c.Name(), Step: step.Index, Capability: c.Name(),
			Text: "the outcome (" + string(outcome) + ") could not be recorded: " + werr.Error()})
	}
	return a.effectEnd(c, step, action, rec, out, err)
}

// effectEnd turns an attempt's recorded outcome into the step's result.
func (a *Agent) effectEnd(c capabilities.Capability, step capabilities.Step, action capabilities.Action, rec AuditRecord,
	out capabilities.Output, err error) effectResult {
	switch rec.Outcome {
	case capabilities.OutcomeConfirmed:
		return effectResult{out: out}
	case capabilities.OutcomeFailed:
		return effectResult{err: err}
	}
	cl := outcomeClassification(c.Name(), step.Index, action, rec)
	return effectResult{critical: &cl}
}

// confirm establishes the outcome of a call that reported success: a
// readback when the capability can read back, else its own report.
func (a *Agent) confirm(ctx context.Context, c capabilities.Capability, action capabilities.Action) (capabilities.Outcome, []capabilities.Reading) {
	rb, ok := c.(capabilities.Readbacker)
	if !ok {
		return capabilities.OutcomeConfirmed, nil
	}
	readings, err := readback(ctx, rb, action)
	switch {
	case errors.Is(err, capabilities.ErrNoReadback):
		return capabilities.OutcomeConfirmed, nil
	case err != nil:
		return capabilities.OutcomeUnconfirmed, nil
	}
	if agrees(action, readings, func(ch capabilities.Change) any { return ch.Value }) {
		return capabilities.OutcomeConfirmed, readings
	}
	return capabilities.OutcomeMismatch, readings
}

// reconcile finds out whether an attempt whose end was not seen took
// effect: the capability's Reconciler, else a readback compared with the
// values asked (confirmed) and the values before (failed: not applied).
func (a *Agent) reconcile(ctx context.Context, c capabilities.Capability, step capabilities.Step, action capabilities.Action,
	before []capabilities.Reading) (capabilities.Outcome, []capabilities.Reading) {
	if r, ok := c.(capabilities.Reconciler); ok {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reconcileTimeout)
		defer cancel()
		o, err := isolated(func() (capabilities.Outcome, error) { return r.Reconcile(rctx, step, action) })
		if err == nil && (o == capabilities.OutcomeConfirmed || o == capabilities.OutcomeFailed || o == capabilities.OutcomeMismatch) {
			return o, nil
		}
	}
	rb, ok := c.(capabilities.Readbacker)
	if !ok {
		return capabilities.OutcomeUnconfirmed, nil
	}
	readings, err := readback(ctx, rb, action)
	if err != nil {
		return capabilities.OutcomeUnconfirmed, nil
	}
	if agrees(action, readings, func(ch capabilities.Change) any { return ch.Value }) {
		return capabilities.OutcomeConfirmed, readings
	}
	if len(before) > 0 && agrees(action, readings, func(ch capabilities.Change) any { return valueOf(before, ch.Target) }) {
		return capabilities.OutcomeFailed, readings
	}
	return capabilities.OutcomeMismatch, readings
}

// readback reads the action's targets, bounded and isolated.
func readback(ctx context.Context, rb capabilities.Readbacker, action capabilities.Action) ([]capabilities.Reading, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reconcileTimeout)
	defer cancel()
	return isolated(func() ([]capabilities.Reading, error) { return rb.Readback(rctx, action) })
}

// readBefore is the machine state an approval is given against: the
// targets' values now, or nil when the capability cannot read them back.
func readBefore(ctx context.Context, c capabilities.Capability, action capabilities.Action) []capabilities.Reading {
	rb, ok := c.(capabilities.Readbacker)
	if !ok {
		return nil
	}
	readings, err := readback(ctx, rb, action)
	if err != nil {
		return nil
	}
	return readings
}

// readHistory is what the targets of action read at each time a dated
// restore of in points to (capabilities.HistoryReader), each reading with
// its time; nil when the capability cannot read its history (the restore
// is then refused by intent.Intent.Permits).
func readHistory(ctx context.Context, c capabilities.Capability, action capabilities.Action, in intent.Intent) []capabilities.Reading {
	hr, ok := c.(capabilities.HistoryReader)
	if !ok {
		return nil
	}
	var out []capabilities.Reading
	for _, rc := range in.Changes {
		if rc.Ago <= 0 || rc.At.IsZero() {
			continue
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reconcileTimeout)
		readings, err := isolated(func() ([]capabilities.Reading, error) { return hr.ReadAt(rctx, action, rc.At) })
		cancel()
		if err != nil || validateReadings(readings) != nil {
			continue
		}
		for _, r := range readings {
			r.At = rc.At // the time asked for, whatever precision the archive has
			out = append(out, r)
		}
	}
	return out
}

// agrees reports whether every change's target reads want(change) within
// the change's tolerance.
func agrees(action capabilities.Action, readings []capabilities.Reading, want func(capabilities.Change) any) bool {
	if len(action.Changes) == 0 {
		return false
	}
	for _, ch := range action.Changes {
		w := want(ch)
		if w == nil {
			return false
		}
		got := valueOf(readings, ch.Target)
		if got == nil || !same(got, w, ch.Tolerance) {
			return false
		}
	}
	return true
}

func valueOf(readings []capabilities.Reading, target string) any {
	for _, r := range readings {
		if r.Target == target {
			return r.Value
		}
	}
	return nil
}

// drifted names the first target that moved beyond its tolerance from the
// values an approval was given against ("" when none did, or when either
// side is unknown).
func drifted(action capabilities.Action, before, now []capabilities.Reading) string {
	if len(before) == 0 || len(now) == 0 {
		return ""
	}
	for _, ch := range action.Changes {
		b, n := valueOf(before, ch.Target), valueOf(now, ch.Target)
		if b == nil || n == nil {
			continue
		}
		if !same(n, b, ch.Tolerance) {
			return fmt.Sprintf("%s moved from %s to %s", ch.Target, formatReading(b, ch.Unit), formatReading(n, ch.Unit))
		}
	}
	return ""
}

func formatReading(v any, unit string) string {
	s := fmt.Sprint(v)
	if f, ok := v.(float64); ok {
		s = fmt.Sprintf("%.4g", f)
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}

// resolveEffect settles an attempt the audit log already holds (a node
// re-entered after a crash, a resume or a takeover): an ended attempt is
// replayed from its record; a started one is reconciled. again reports that
// nothing of it took effect, so the attempt may run (again) under the gate.
func (a *Agent) resolveEffect(ctx context.Context, c capabilities.Capability, step capabilities.Step, last AuditRecord) (res effectResult, again bool) {
	action := capabilities.Action{Capability: last.Capability, Target: last.Target, Changes: last.Changes, Summary: last.Summary}
	if last.Event == AuditEnded {
		switch {
		case last.Outcome == "":
			return effectResult{}, true // asked a human before acting
		case last.Outcome == capabilities.OutcomeFailed && last.Reconciled, last.Reason == reasonIdempotentRerun:
			return effectResult{}, true // cut, and found not applied (or harmless to run again)
		case last.Outcome == capabilities.OutcomeConfirmed:
			out, err := storedOutput(last.Result)
			if err != nil {
				out = reconciledOutput(c, action, last.Readback)
			}
			emit(ctx, Event{Type: EventStatus, Node: c.Name(), Step: step.Index, Capability: c.Name(),
				Text: "this attempt of " + c.Name() + " already ran (" + string(last.Outcome) + "); its recorded result is used, nothing runs again"})
			return effectResult{out: out}, false
		case last.Outcome == capabilities.OutcomeFailed:
			// Failed before the crash: the same failure, routed as it was.
			sev, err := capabilities.ParseSeverity(last.Severity)
			if err != nil {
				sev = capabilities.Critical
			}
			return effectResult{err: capabilities.NewError(sev, nonEmpty(last.Reason, capabilities.KindUnknown), last.Message, nil)}, false
		}
		return a.effectEnd(c, step, action, last, capabilities.Output{}, errors.New(last.Message)), false
	}
	// Started, never ended: in doubt.
	outcome, readings := a.reconcile(ctx, c, step, action, last.Before)
	rerun := outcome == capabilities.OutcomeUnconfirmed && isIdempotent(c)
	rec := last
	rec.Time, rec.Event, rec.Outcome, rec.Readback, rec.Reconciled, rec.Duration = a.cfg.Now(), AuditEnded, outcome, readings, true, 0
	rec.Reason = "reconciled"
	switch {
	case outcome == capabilities.OutcomeConfirmed:
		rec.Message = "the run stopped during this attempt; the readback shows the change was made"
	case outcome == capabilities.OutcomeFailed:
		rec.Message = "the run stopped during this attempt; the readback shows nothing was changed"
	case outcome == capabilities.OutcomeMismatch:
		rec.Message = "the run stopped during this attempt; the readback matches neither the value asked nor the value before"
	case rerun:
		rec.Reason = reasonIdempotentRerun
		rec.Message = "the run stopped during this attempt and " + c.Name() + " cannot tell whether it took effect; it is idempotent, so it runs again with the same key"
	default:
		rec.Message = "the run stopped during this attempt and " + c.Name() + " cannot tell whether it took effect"
	}
	if err := a.auditRecord(ctx, rec); err != nil {
		cl := capabilities.Classification{Severity: capabilities.Critical, Kind: KindRefused, UserMessage: fmt.Sprintf(
			"Step %d (%s) was interrupted and its outcome could not be recorded (%v); nothing more was done.", step.Index+1, action.Summary, err),
			Metadata: map[string]any{capabilities.MetaSafetyAbortReason: RefusedAuditUnavailable}}
		return effectResult{critical: &cl}, false
	}
	emit(ctx, Event{Type: EventStatus, Node: c.Name(), Step: step.Index, Capability: c.Name(), Text: rec.Message + " (" + string(outcome) + ")"})
	if outcome == capabilities.OutcomeFailed || rerun {
		return effectResult{}, true
	}
	out := capabilities.Output{}
	if outcome == capabilities.OutcomeConfirmed {
		out = reconciledOutput(c, action, readings)
	}
	return a.effectEnd(c, step, action, rec, out, errors.New(rec.Message)), false
}

// outcomeClassification is the failure of an attempt whose outcome is
// mismatch or unconfirmed: CRITICAL, never retried or replanned, with the
// outcome in the metadata so the error report says what to check.
func outcomeClassification(capability string, _ int, action capabilities.Action, rec AuditRecord) capabilities.Classification {
	what := action.Summary
	if what == "" {
		what = actionSummary(action)
	}
	targets := make([]string, len(action.Changes))
	for i, ch := range action.Changes {
		targets[i] = ch.Target
	}
	check := strings.Join(targets, ", ")
	var msg string
	switch rec.Outcome {
	case capabilities.OutcomeMismatch:
		msg = fmt.Sprintf("%s was carried out, but the readback does not match what was asked", upperFirst(what))
		if len(rec.Readback) > 0 {
			var got []string
			for _, r := range rec.Readback {
				got = append(got, r.Target+" reads "+formatReading(r.Value, r.Unit))
			}
			msg += " (" + strings.Join(got, "; ") + ")"
		}
		msg += ". It was not retried."
	default:
		msg = fmt.Sprintf("%s may or may not have been carried out: %s, and %s cannot confirm the result. It was not retried.",
			upperFirst(what), strings.TrimSuffix(nonEmpty(rec.Message, "its outcome is unknown"), "."), capability)
	}
	cl := capabilities.Classification{Severity: capabilities.Critical, Kind: string(rec.Outcome), UserMessage: msg,
		Metadata: map[string]any{
			capabilities.MetaOutcome:     string(rec.Outcome),
			capabilities.MetaSuggestions: []string{"check " + nonEmpty(check, "the target") + " before asking for the change again"},
		}}
	return cl
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func nonEmpty(s, alt string) string {
	if strings.TrimSpace(s) == "" {
		return alt
	}
	return s
}

// setResult keeps an output in the record, so a repeat of the attempt
// returns it instead of acting.
func (r *AuditRecord) setResult(out capabilities.Output) {
	type value struct {
		Type    string `json:"type"`
		Key     string `json:"key,omitempty"`
		Value   any    `json:"value"`
		Summary string `json:"summary,omitempty"`
	}
	stored := struct {
		Values    []value                 `json:"values"`
		Artifacts []capabilities.Artifact `json:"artifacts,omitempty"`
	}{Values: make([]value, len(out.Values)), Artifacts: out.Artifacts}
	sums := make([]string, 0, len(out.Values))
	for i, v := range out.Values {
		stored.Values[i] = value{v.Type, v.Key, v.Value, v.Summary}
		if v.Summary != "" {
			sums = append(sums, v.Summary)
		}
	}
	if b, err := json.Marshal(stored); err == nil {
		r.Result = b
	}
	r.ResultSummary = strings.Join(sums, "; ")
}

// storedOutput reads an output setResult kept.
func storedOutput(raw json.RawMessage) (capabilities.Output, error) {
	var stored struct {
		Values []struct {
			Type    string          `json:"type"`
			Key     string          `json:"key"`
			Value   json.RawMessage `json:"value"`
			Summary string          `json:"summary"`
		} `json:"values"`
		Artifacts []capabilities.Artifact `json:"artifacts"`
	}
	if len(raw) == 0 {
		return capabilities.Output{}, errors.New("no stored result")
	}
	if err := json.Unmarshal(raw, &stored); err != nil {
		return capabilities.Output{}, err
	}
	out := capabilities.Output{Artifacts: stored.Artifacts}
	for _, v := range stored.Values {
		out.Values = append(out.Values, capabilities.ContextValue{Type: v.Type, Key: v.Key, Value: v.Value, Summary: v.Summary})
	}
	return out, nil
}

// reconciledOutput is the output of an attempt found applied by
// reconciliation, whose own output was lost: the readback, under the
// capability's first provided context type.
func reconciledOutput(c capabilities.Capability, action capabilities.Action, readings []capabilities.Reading) capabilities.Output {
	provides := c.Provides()
	if len(provides) == 0 {
		return capabilities.Output{}
	}
	var parts []string
	for _, r := range readings {
		parts = append(parts, r.Target+" reads "+formatReading(r.Value, r.Unit))
	}
	summary := "confirmed by readback after an interruption: " + nonEmpty(strings.Join(parts, "; "), action.Summary)
	return capabilities.Output{Values: []capabilities.ContextValue{{Type: provides[0], Summary: summary,
		Value: map[string]any{"outcome": string(capabilities.OutcomeConfirmed), "reconciled": true, "changes": action.Changes, "readback": readings}}}}
}

// sideEffectResult is how the step wrapper continues after sideEffect.
type sideEffectResult struct {
	effectResult
	// stop ends the attempt as the gate decided: a refusal (update) or an
	// interrupt asking a human (err).
	stop *gateStop
}

type gateStop struct {
	update state.Update
	err    error
}

// sideEffect runs one attempt of a step of side-effecting capability c at
// most once: it settles what the audit log already holds of the attempt,
// then — for a fresh attempt, or one known not to have taken effect — runs
// the gate, writes the started record and calls the capability. It returns
// the plan step as it ran (with its grant).
func (a *Agent) sideEffect(ctx context.Context, at attempt, step capabilities.Step) (sideEffectResult, state.PlanStep) {
	c, name := at.c, at.c.Name()
	log, err := a.attemptRecords(ctx, threadOf(ctx), step.IdempotencyKey)
	if err != nil {
		msg := fmt.Sprintf("Step %d (%s) was not carried out: the audit log cannot be read (%v), so whether it already ran cannot be known.",
			at.idx+1, at.ps.Effective(), err)
		u := a.refuse(ctx, at, RefusedAuditUnavailable, msg)
		return sideEffectResult{stop: &gateStop{update: u}}, at.ps
	}
	if log.last != nil {
		if res, again := a.resolveEffect(ctx, c, step, *log.last); !again {
			return sideEffectResult{effectResult: res}, at.ps
		}
	}
	g := a.gate(ctx, at, step, log)
	switch {
	case g.err != nil:
		return sideEffectResult{stop: &gateStop{err: g.err}}, at.ps // asked before the step starts: nothing of it has run
	case g.update != nil:
		return sideEffectResult{stop: &gateStop{update: *g.update}}, at.ps
	}
	at.ps = g.ps
	step.Approved = at.ps.Approved
	plan := at.s.Turn.Plan
	emit(ctx, Event{Type: EventStepStart, Node: name, Step: at.idx, Total: len(plan.Steps), Capability: name, Text: at.ps.TaskObjective, Attempt: step.Attempt})
	if len(g.action.Changes) == 0 {
		// Nothing to change, nothing to guard: the capability says so.
		b := a.executeBounded(ctx, a.deadline(at.s), c, step)
		return sideEffectResult{effectResult: effectResult{out: b.out, err: b.err}}, at.ps
	}
	rec := at.record(ctx)
	rec.setAction(g.action)
	rec.Before = g.before
	if reason, msg, err := a.startOnTarget(ctx, at, g.action, rec); reason != "" {
		u := a.refuse(ctx, at, reason, msg)
		refused := rec
		refused.Event, refused.Outcome, refused.Reason, refused.Message = AuditRefused, capabilities.OutcomeRefused, reason, msg
		a.auditBestEffort(ctx, refused)
		return sideEffectResult{stop: &gateStop{update: u}}, at.ps
	} else if err != nil {
		msg := fmt.Sprintf("Step %d (%s) was not carried out: its start could not be recorded (%v), and a change is only made once its start is on record.",
			at.idx+1, g.action.Summary, err)
		u := a.refuse(ctx, at, RefusedAuditUnavailable, msg)
		return sideEffectResult{stop: &gateStop{update: u}}, at.ps
	}
	return sideEffectResult{effectResult: a.execEffect(ctx, a.deadline(at.s), c, step, g.action, rec)}, at.ps
}
