package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

// EventAbandoned: a capability did not return within
// capabilities.AbandonGrace of its attempt's cancellation (its deadline
// passed, or the run stopped) and was abandoned (Capability, Step,
// Attempt; Text says why). Its late result is discarded; the metrics
// count it (capgraph_capability_abandoned_total).
const EventAbandoned EventType = "abandoned"

// stepDeadline is the deadline of one attempt of c.
func (a *Agent) stepDeadline(c capabilities.Capability) time.Duration {
	return resolveDeadline(c, a.cfg.CapabilityDeadlines, a.cfg.StepDeadline)
}

// bounded is how one bounded attempt ended.
type bounded struct {
	out capabilities.Output
	err error
	// abandoned: the capability did not return after its context ended;
	// what it was doing may still be going on.
	abandoned bool
	// ownDeadline: the attempt's own deadline ended it (not the turn's
	// wall clock, not the run's cancellation).
	ownDeadline bool
}

// executeBounded runs one attempt of c under its deadline and the turn's
// (turnDeadline), isolated (execute). An attempt past its own deadline
// fails with a *capabilities.DeadlineError; one that does not return
// within capabilities.AbandonGrace of its context's end is abandoned.
func (a *Agent) executeBounded(ctx context.Context, turnDeadline time.Time, c capabilities.Capability, step capabilities.Step) bounded {
	limit := a.stepDeadline(c)
	tctx, cancelTurn := context.WithDeadline(ctx, turnDeadline)
	defer cancelTurn()
	nctx, cancel := context.WithTimeout(tctx, limit)
	defer cancel()
	// Isolated on its own goroutine (a panic or runtime.Goexit in it is a
	// failure of the step), which an abandoned capability keeps: its late
	// result is dropped with the channel.
	ch := goIsolated(func() (capabilities.Output, error) { return c.Execute(nctx, step) })
	var (
		r         isolatedResult[capabilities.Output]
		abandoned bool
	)
	select {
	case r = <-ch:
	case <-nctx.Done():
		grace := time.NewTimer(capabilities.AbandonGrace)
		select {
		case r = <-ch:
		case <-grace.C:
			abandoned = true
		}
		grace.Stop()
	}
	b := bounded{out: r.v, err: r.err, abandoned: abandoned}
	b.ownDeadline = errors.Is(nctx.Err(), context.DeadlineExceeded) && tctx.Err() == nil
	switch {
	case b.ownDeadline && (abandoned || r.err != nil):
		b.out, b.err = capabilities.Output{}, &capabilities.DeadlineError{Capability: c.Name(), Deadline: limit, Abandoned: abandoned, Err: r.err}
	case abandoned:
		b.out, b.err = capabilities.Output{}, tctx.Err()
	}
	if abandoned {
		why := fmt.Sprintf("did not finish within its deadline of %s", limit)
		if !b.ownDeadline {
			why = "was still running when the " + map[bool]string{true: "run was stopped", false: "turn's time ran out"}[ctx.Err() != nil]
		}
		emit(ctx, Event{Type: EventAbandoned, Node: c.Name(), Step: step.Index, Capability: c.Name(), Attempt: step.Attempt,
			Text: c.Name() + " " + why + " and did not return when cancelled: it was abandoned, and a late result will be discarded"})
	}
	return b
}

// deadlineFailure reports whether err is an attempt's own deadline
// passing: it is classified by the framework (RETRIABLE, kind timeout),
// not by the capability, whose error it did not choose.
func deadlineFailure(err error) bool {
	var de *capabilities.DeadlineError
	return errors.As(err, &de)
}

// abandonedEffect settles a side-effecting attempt that was abandoned: the
// capability did not return, so it may still act. Its outcome is unknown
// and stays so — a readback that shows nothing changed proves nothing
// while the call may still land — unless the capability's reconciliation
// or readback already shows the change made (confirmed). Never retried:
// the ended record says unconfirmed and the turn ends in the error report
// (docs/safety.md, "At most once"). When the run was stopped, nothing is
// read back (a stop stops now) and the record is written all the same,
// so that a resume finds the attempt settled, never in doubt.
func (a *Agent) abandonedEffect(ctx context.Context, c capabilities.Capability, step capabilities.Step, action capabilities.Action, rec AuditRecord, b bounded) effectResult {
	stopped := ctx.Err() != nil
	wctx := context.WithoutCancel(ctx)
	outcome, readings := capabilities.OutcomeUnconfirmed, []capabilities.Reading(nil)
	if !stopped {
		if o, r := a.reconcile(wctx, c, step, action, rec.Before); o == capabilities.OutcomeConfirmed {
			outcome, readings = o, r
		}
	}
	rec.Event, rec.Outcome, rec.Readback, rec.Reason = AuditEnded, outcome, readings, "abandoned"
	switch {
	case outcome == capabilities.OutcomeConfirmed:
		rec.Message = c.Name() + " did not return within its deadline and was abandoned; the readback shows the change was made"
	case stopped:
		rec.Message = "the run was stopped while " + c.Name() + " ran and it did not return, so whether it took effect is unknown (it may still be running)"
	default:
		rec.Message = b.err.Error() + "; whether it took effect is unknown (it may still be running)"
	}
	if werr := a.auditRecord(wctx, rec); werr != nil {
		emit(ctx, Event{Type: EventStatus, Node: c.Name(), Step: step.Index, Capability: c.Name(),
			Text: "the outcome (" + string(outcome) + ") could not be recorded: " + werr.Error()})
	}
	if stopped {
		emit(ctx, Event{Type: EventStatus, Node: c.Name(), Step: step.Index, Capability: c.Name(), Text: rec.Message})
		return effectResult{open: true} // the resumed run reads the ended record: reported, never run again
	}
	out := capabilities.Output{}
	if outcome == capabilities.OutcomeConfirmed {
		out = reconciledOutput(c, action, readings)
	}
	return a.effectEnd(c, step, action, rec, out, b.err)
}
