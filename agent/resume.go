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
// *ApprovalError and is never carried out: its kind says why
// (ErrApprovalUnclear, ErrApprovalNotPending, ErrApprovalAnswered,
// ErrApprovalExpired or ErrInvalidPlan). All of them but an expiry change
// nothing (the approval stays pending); an answer that came too late ends
// the approval as expired (rule state.AnswerExpired: the run ends with
// nothing done) before the error is returned.
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
			var ae *ApprovalError
			if errors.As(err, &ae) && ae.ends != nil {
				if _, endErr := a.endApproval(ctx, thread, *ae.ends); endErr != nil {
					err = endErr
				}
			}
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
// receives, after checking that it answers a pending, unexpired approval,
// that it decides something (an unclear answer does not: it is audited
// and the approval stays pending) and, for an edited plan, that the plan
// is valid.
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
	decidedErr := func(id string) error {
		d, ok := decided(s, t.Writes, id)
		if !ok {
			return nil
		}
		if d.Rule == state.AnswerExpired {
			return aerr(ErrApprovalExpired, id, "nobody answered it in time, so it ended with nothing done")
		}
		return aerr(ErrApprovalAnswered, id, "it was already answered; the answer is carried out once")
	}
	if len(pending) == 0 {
		if ans.ApprovalID != "" {
			if err := decidedErr(ans.ApprovalID); err != nil {
				return state.ApprovalDecision{}, err
			}
		}
		return state.ApprovalDecision{}, aerr(ErrApprovalNotPending, ans.ApprovalID, "the thread has no pending approval")
	}
	id := ans.ApprovalID
	if id == "" {
		id = pending[0].ID
	}
	ap, ok := findApproval(pending, id)
	if !ok {
		if err := decidedErr(id); err != nil {
			return state.ApprovalDecision{}, err
		}
		ids := make([]string, len(pending))
		for i, p := range pending {
			ids[i] = p.ID
		}
		return state.ApprovalDecision{}, aerr(ErrApprovalNotPending, id, "pending: "+strings.Join(ids, ", "))
	}
	now := a.cfg.Now()
	d := state.ApprovalDecision{ID: id, Kind: ap.Kind, Answer: ans.Text, At: now, Asked: ap.Created, By: ans.By,
		Summary: ap.Summary, ActionDigest: ap.ActionDigest, Before: ap.Before}
	if a.expired(ap) {
		// Too late, whatever it says: the approval ends as expired, and
		// the audit says so (never "a human rejected it").
		e := aerr(ErrApprovalExpired, id, "it expired at "+ap.Expires.UTC().Format(time.RFC3339)+" before this answer; it ended with nothing done")
		e.Expires, e.Approval = ap.Expires, &ap
		d.Approved, d.Rule = false, state.AnswerExpired
		e.ends = &d
		return state.ApprovalDecision{}, e
	}
	switch {
	case ans.Approved != nil:
		d.Approved, d.Rule = *ans.Approved, state.AnswerExplicit
	case ans.Plan != nil && strings.TrimSpace(ans.Text) == "":
		d.Approved, d.Rule = true, state.AnswerPlan // sending an edited plan is approving it
	default:
		var r reading
		r, d.Rule, d.Tokens = a.interpret(ctx, ap, ans.Text, ans.Token != "")
		if r == readUnclear {
			a.auditUnclear(ctx, thread, s, ap, d)
			e := aerr(ErrApprovalUnclear, id, fmt.Sprintf("the answer %q is neither a yes nor a no, so nothing was decided and the approval is still pending: reply yes or no", ans.Text))
			e.Approval, e.Answer = &ap, ans.Text
			return state.ApprovalDecision{}, e
		}
		d.Approved = r == readYes
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

// auditUnclear records an unclear answer to a side-effecting step's
// approval (the audit log's scope): who said what, read by which rule.
// It decides nothing, so a record that cannot be written stops nothing.
func (a *Agent) auditUnclear(ctx context.Context, thread string, s state.State, ap state.Approval, d state.ApprovalDecision) {
	if ap.Kind != state.ApprovalStep || ap.ActionDigest == "" {
		return
	}
	var ps state.PlanStep
	if s.Turn.Plan != nil && ap.StepIndex >= 0 && ap.StepIndex < len(s.Turn.Plan.Steps) {
		ps = s.Turn.Plan.Steps[ap.StepIndex]
	}
	rec := auditBase(withThread(ctx, thread), s, ap.Capability, ap.StepIndex, ps, ps.Attempts+1, d.At)
	if ap.Action != nil {
		rec.setAction(*ap.Action)
	}
	rec.Event, rec.Summary, rec.Digest = AuditUnclear, ap.Summary, ap.ActionDigest
	rec.ApprovalID, rec.ApprovedBy, rec.Rule, rec.Answer, rec.Before = ap.ID, d.By, d.Rule, d.Answer, ap.Before
	rec.Message = "the answer was neither a yes nor a no: nothing was decided, and the human is asked again"
	a.auditBestEffort(ctx, rec)
}

// ExpireApproval ends approval id of thread as expired now, as the
// agent's own expiry ends one answered too late: the waiting run resumes
// with a decision of rule state.AnswerExpired (nothing is carried out, the
// turn ends saying so, the audit records an expiry). A frontend calls it
// when its own deadline for the answer has passed (the server's approval
// tokens, server.Config.ApprovalTTL). An approval answered before is
// ErrApprovalAnswered (or ErrApprovalExpired), one the thread does not
// wait for ErrApprovalNotPending, both as an *ApprovalError.
func (a *Agent) ExpireApproval(ctx context.Context, thread, id string) error {
	if strings.TrimSpace(thread) == "" || strings.TrimSpace(id) == "" {
		return fmt.Errorf("%w: thread and approval id must not be empty", ErrBadRequest)
	}
	ctx, release, err := a.ownThread(ctx, thread)
	if err != nil {
		return err
	}
	defer release()
	if err := a.ownRun(ctx, thread); err != nil {
		return err
	}
	s, t, err := a.g.State(ctx, thread)
	if err != nil {
		return a.threadErr(thread, err)
	}
	var pending []state.Approval
	if graph.StatusOf(t) == graph.StatusInterrupted {
		pending = approvalsOf(graph.Interrupts(t))
	}
	ap, ok := findApproval(pending, id)
	if !ok {
		if d, ok := decided(s, t.Writes, id); ok {
			kind := ErrApprovalAnswered
			if d.Rule == state.AnswerExpired {
				kind = ErrApprovalExpired
			}
			return &ApprovalError{Kind: kind, Thread: thread, ID: id, Problem: "it was decided already"}
		}
		return &ApprovalError{Kind: ErrApprovalNotPending, Thread: thread, ID: id, Problem: "the thread does not wait for it"}
	}
	_, err = a.endApproval(ctx, thread, state.ApprovalDecision{ID: ap.ID, Kind: ap.Kind, Approved: false, At: a.cfg.Now(), Asked: ap.Created,
		Summary: ap.Summary, ActionDigest: ap.ActionDigest, Before: ap.Before, Rule: state.AnswerExpired})
	return err
}

// endApproval resumes the run waiting for approval d.ID with d, a
// decision that does not approve (an expiry, a superseded question), so
// that its turn ends with a message saying nothing was done, and returns
// the thread's state afterwards. The thread must be owned.
func (a *Agent) endApproval(ctx context.Context, thread string, d state.ApprovalDecision) (state.State, error) {
	var runErr error
	for _, err := range a.g.ResumeStream(a.graphCtx(ctx, thread), thread, d) {
		if err != nil {
			runErr = err
		}
	}
	var fe *FatalError
	if runErr != nil && !errors.As(runErr, &fe) {
		return state.State{}, fmt.Errorf("agent: end the run waiting for approval %q: %w", d.ID, runErr)
	}
	s, _, err := a.g.State(ctx, thread)
	return s, err
}

// decided returns the decision recorded for approval id in the thread's
// current turn: in the state, or given and not yet carried out (the
// resume value waiting in the latest checkpoint after a crash).
func decided(s state.State, writes []checkpoint.Write, id string) (state.ApprovalDecision, bool) {
	if i := slices.IndexFunc(s.Turn.Approvals, func(d state.ApprovalDecision) bool { return d.ID == id }); i >= 0 {
		return s.Turn.Approvals[i], true
	}
	for _, w := range writes {
		if w.Kind != checkpoint.WriteResume {
			continue
		}
		var d state.ApprovalDecision
		if json.Unmarshal(w.Value, &d) == nil && d.ID == id {
			return d, true
		}
	}
	return state.ApprovalDecision{}, false
}

func (a *Agent) expired(ap state.Approval) bool {
	return !ap.Expires.IsZero() && !a.cfg.Now().Before(ap.Expires)
}

// Sentinel kinds of *ApprovalError. Each also matches ErrBadRequest.
var (
	// ErrApprovalUnclear: the answer's text is neither a yes nor a no
	// (nor, with an approval model, a clear refusal): nothing was
	// decided, the approval stays pending, and the human is asked again.
	// ApprovalError.Approval is the question to show again.
	ErrApprovalUnclear = errors.New("agent: approval answer is unclear")
	// ErrApprovalNotPending: the thread waits for no approval of that id.
	ErrApprovalNotPending = errors.New("agent: approval is not pending")
	// ErrApprovalAnswered: the approval was answered already; its answer is
	// carried out once.
	ErrApprovalAnswered = errors.New("agent: approval was already answered")
	// ErrApprovalExpired: the approval's time to answer is over; it has
	// ended as expired, with nothing done.
	ErrApprovalExpired = errors.New("agent: approval expired")
	// ErrInvalidPlan: an edited plan breaks the plan rules.
	ErrInvalidPlan = errors.New("agent: edited plan is invalid")
)

// ApprovalError is an answer that cannot be used: it is not carried out,
// and the run is unchanged unless the approval had expired (Resume).
type ApprovalError struct {
	// Kind is one of the ErrApproval* sentinels or ErrInvalidPlan.
	Kind   error
	Thread string
	ID     string
	// Problem says what is wrong, for the human.
	Problem string
	// Expires is set for an expired approval.
	Expires time.Time
	// Approval is the approval answered, when it was pending: for an
	// unclear answer, the question to ask again.
	Approval *state.Approval
	// Answer is the answer's text, for an unclear answer.
	Answer string
	// Err is the plan validation error, for ErrInvalidPlan.
	Err error
	// ends is the decision that ends an expired approval (Resume
	// carries it out before it returns the error).
	ends *state.ApprovalDecision
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
