package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/state"
)

// Resume continues a thread: with a zero Answer after a crash or a
// cancellation; otherwise with the answer to its pending approval, which
// the interrupted node receives as a state.ApprovalDecision through
// graph.ResumeValue. An answer that cannot be used fails with an
// *ApprovalError (its kind: ErrApprovalNotPending, ErrApprovalAnswered,
// ErrApprovalExpired or ErrInvalidPlan) and changes nothing: the approval
// stays pending.
func (a *Agent) Resume(ctx context.Context, thread string, ans Answer) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		p := &pump{a: a, thread: thread, yield: yield}
		if strings.TrimSpace(thread) == "" {
			p.fail(fmt.Errorf("%w: thread must not be empty", ErrBadRequest))
			return
		}
		ctx, release, err := a.ownThread(ctx, thread)
		if err != nil {
			p.fail(err)
			return
		}
		defer release()
		p.yield = leaseYield(ctx, p.yield)
		if err := a.ownRun(ctx, thread); err != nil {
			p.fail(err)
			return
		}
		a.resume(ctx, p, thread, ans)
	}
}

// resume is Resume with the thread owned (see ownThread).
func (a *Agent) resume(ctx context.Context, p *pump, thread string, ans Answer) {
	var value any
	if !ans.zero() {
		d, err := a.checkAnswer(ctx, thread, ans)
		if err != nil {
			p.fail(err)
			return
		}
		value = d
	}
	if a.cfg.Observer != nil {
		d, _ := value.(state.ApprovalDecision)
		var ans *state.ApprovalDecision
		if value != nil {
			ans = &d
		}
		a.startObserving(ctx, p, thread, true, a.storedTrace(ctx, thread), ans)
	}
	p.run(ctx, a.g.ResumeStream(a.graphCtx(ctx, thread), thread, value))
	a.afterTurn()
}

// checkAnswer turns an answer into the decision the interrupted node
// receives, after checking that it answers a pending, unexpired approval
// and, for an edited plan, that the plan is valid.
func (a *Agent) checkAnswer(ctx context.Context, thread string, ans Answer) (state.ApprovalDecision, error) {
	s, t, err := a.g.State(ctx, thread)
	if err != nil {
		return state.ApprovalDecision{}, a.threadErr(thread, err)
	}
	aerr := func(kind error, id, problem string) *ApprovalError {
		return &ApprovalError{Kind: kind, Thread: thread, ID: id, Problem: problem}
	}
	var pending []state.Approval
	if graph.StatusOf(t) == graph.StatusInterrupted {
		pending = approvalsOf(graph.Interrupts(t))
	}
	if len(pending) == 0 {
		if ans.ApprovalID != "" && answered(s, t.Writes, ans.ApprovalID) {
			return state.ApprovalDecision{}, aerr(ErrApprovalAnswered, ans.ApprovalID, "it was already answered; the answer is carried out once")
		}
		return state.ApprovalDecision{}, aerr(ErrApprovalNotPending, ans.ApprovalID, "the thread has no pending approval")
	}
	id := ans.ApprovalID
	if id == "" {
		id = pending[0].ID
	}
	ap, ok := findApproval(pending, id)
	if !ok {
		if answered(s, t.Writes, id) {
			return state.ApprovalDecision{}, aerr(ErrApprovalAnswered, id, "it was already answered; the answer is carried out once")
		}
		ids := make([]string, len(pending))
		for i, p := range pending {
			ids[i] = p.ID
		}
		return state.ApprovalDecision{}, aerr(ErrApprovalNotPending, id, "pending: "+strings.Join(ids, ", "))
	}
	if a.expired(ap) {
		e := aerr(ErrApprovalExpired, id, "it expired at "+ap.Expires.UTC().Format(time.RFC3339))
		e.Expires = ap.Expires
		return state.ApprovalDecision{}, e
	}
	now := a.cfg.Now()
	d := state.ApprovalDecision{ID: id, Kind: ap.Kind, Answer: ans.Text, At: now, Asked: ap.Created, By: ans.By,
		Summary: ap.Summary, ActionDigest: ap.ActionDigest, Before: ap.Before}
	switch {
	case ans.Approved != nil:
		d.Approved, d.Rule = *ans.Approved, state.AnswerExplicit
	case ans.Plan != nil && strings.TrimSpace(ans.Text) == "":
		d.Approved, d.Rule = true, state.AnswerPlan // sending an edited plan is approving it
	default:
		d.Approved, d.Rule, d.Tokens = a.interpret(ctx, ap, ans.Text)
	}
	if ans.Plan != nil && d.Approved {
		if ap.Kind != state.ApprovalPlan {
			return state.ApprovalDecision{}, aerr(ErrInvalidPlan, id, "an edited plan answers only a plan approval, this is a "+string(ap.Kind)+" approval")
		}
		if _, err := a.validateEdited(s, ans.Plan); err != nil {
			e := aerr(ErrInvalidPlan, id, err.Error())
			e.Err = err
			return state.ApprovalDecision{}, e
		}
		plan := *ans.Plan
		d.Plan = &plan
	}
	return d, nil
}

// answered reports whether approval id was answered in the thread's current
// turn: recorded in the state, or given and not yet carried out (the resume
// value waiting in the latest checkpoint after a crash).
func answered(s state.State, writes []checkpoint.Write, id string) bool {
	if slices.ContainsFunc(s.Turn.Approvals, func(d state.ApprovalDecision) bool { return d.ID == id }) {
		return true
	}
	for _, w := range writes {
		if w.Kind != checkpoint.WriteResume {
			continue
		}
		var d state.ApprovalDecision
		if json.Unmarshal(w.Value, &d) == nil && d.ID == id {
			return true
		}
	}
	return false
}

func (a *Agent) expired(ap state.Approval) bool {
	return !ap.Expires.IsZero() && !a.cfg.Now().Before(ap.Expires)
}

// Sentinel kinds of *ApprovalError. Each also matches ErrBadRequest.
var (
	// ErrApprovalNotPending: the thread waits for no approval of that id.
	ErrApprovalNotPending = errors.New("agent: approval is not pending")
	// ErrApprovalAnswered: the approval was answered already; its answer is
	// carried out once.
	ErrApprovalAnswered = errors.New("agent: approval was already answered")
	// ErrApprovalExpired: the approval's time to answer is over.
	ErrApprovalExpired = errors.New("agent: approval expired")
	// ErrInvalidPlan: an edited plan breaks the plan rules.
	ErrInvalidPlan = errors.New("agent: edited plan is invalid")
)

// ApprovalError is an answer that cannot be used. The run is unchanged.
type ApprovalError struct {
	// Kind is one of the ErrApproval* sentinels or ErrInvalidPlan.
	Kind   error
	Thread string
	ID     string
	// Problem says what is wrong, for the human.
	Problem string
	// Expires is set for an expired approval.
	Expires time.Time
	// Err is the plan validation error, for ErrInvalidPlan.
	Err error
}

func (e *ApprovalError) Error() string {
	return fmt.Sprintf("%v: %q on thread %q: %s", e.Kind, e.ID, e.Thread, e.Problem)
}

// Unwrap exposes the kind, ErrBadRequest and the validation error.
func (e *ApprovalError) Unwrap() []error {
	out := []error{e.Kind, ErrBadRequest}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}
