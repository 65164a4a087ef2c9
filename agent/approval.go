package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/state"
)

// This file holds the approval policy and what every approval shares: ids,
// the human's answer as a re-entered node sees it, and the time a turn
// waited for it.

// DefaultApprovalExpiry is how long an approval can be answered.
const DefaultApprovalExpiry = time.Hour

// Approval ids are derived from where the approval is asked (turn, plan,
// step) and end in a secret of the turn (idSecret), never random: a node
// re-entered after a crash asks the same question under the same id, so an
// answer given meanwhile still fits, and nobody outside the run can guess
// the id of an approval they were not shown.
func stepApprovalID(turn state.Turn, plan, step int, capability string) string {
	return fmt.Sprintf("step:%d:%d:%d:%s:%s", turn.Number, plan, step, capability, idSecret(turn))
}

func planApprovalID(turn state.Turn, plan int) string {
	return fmt.Sprintf("plan:%d:%d:%s", turn.Number, plan, idSecret(turn))
}

// idSecret is 48 bits derived from the turn's random id: the same for every
// approval of the turn, unknown to anyone who has not seen one.
func idSecret(turn state.Turn) string {
	sum := sha256.Sum256([]byte("capgraph-approval:" + turn.ID))
	return hex.EncodeToString(sum[:6])
}

// answerOf returns the human's decision when ctx re-enters a node after its
// interrupt. Only nodes that interrupted are re-entered with a value, so the
// decision answers this node's approval or one pending beside it.
func answerOf(ctx context.Context) (state.ApprovalDecision, bool) {
	v, ok := graph.ResumeValue(ctx)
	if !ok || len(v) == 0 {
		return state.ApprovalDecision{}, false
	}
	var d state.ApprovalDecision
	if err := json.Unmarshal(v, &d); err != nil || d.ID == "" {
		return state.ApprovalDecision{}, false
	}
	return d, true
}

// withAnswer wraps every node that can be re-entered with an answer: the
// time the turn waited for the human does not count against its wall-clock
// limit, and the decision is recorded in the turn (Turn.Approvals), so the
// same approval cannot be answered twice.
func (a *Agent) withAnswer(fn graph.NodeFunc[state.State, state.Update]) graph.NodeFunc[state.State, state.Update] {
	return func(ctx context.Context, s state.State) (state.Update, error) {
		d, ok := answerOf(ctx)
		if !ok {
			return fn(ctx, s)
		}
		return answered(ctx, fn, s, d)
	}
}

// answered runs fn on a turn resumed by the answer d, counting the time
// the answer took as paused. A function of its own, so that withAnswer's
// frame — on the run's stack while a node's model answers — holds none of
// its locals (docs/performance.md, "Memory per live conversation").
//
//go:noinline
func answered(ctx context.Context, fn graph.NodeFunc[state.State, state.Update], s state.State, d state.ApprovalDecision) (state.Update, error) {
	var waited time.Duration
	if !d.Asked.IsZero() && d.At.After(d.Asked) {
		waited = d.At.Sub(d.Asked)
	}
	orig := s.Turn.Control.Paused
	s.Turn.Control.Paused += waited
	u, err := fn(ctx, s)
	if err != nil {
		return u, err
	}
	if u.Turn != nil {
		// A node replacing the turn copied the raised pause; Apply adds
		// u.Paused to the turn it replaced, so restore the original.
		t := *u.Turn
		t.Control.Paused = orig
		u.Turn = &t
	}
	u.Paused += waited
	u.Approvals = append(u.Approvals, d)
	return u, nil
}

// needsApproval applies the approval mode to one step: disabled never asks,
// all_capabilities always asks, selective asks when the capability says so.
func needsApproval(c capabilities.Capability, step capabilities.Step, opts state.Options) (bool, string) {
	var (
		required bool
		summary  string
	)
	ar, isAR := c.(capabilities.ApprovalRequirer)
	if isAR {
		required, summary = ar.RequiresApproval(step)
	}
	switch opts.Mode() {
	case state.ApprovalModeDisabled:
		return false, ""
	case state.ApprovalModeAll:
		required = true
	}
	if !required {
		return false, ""
	}
	if strings.TrimSpace(summary) == "" {
		summary = fmt.Sprintf("run %s: %s", c.Name(), step.TaskObjective)
		if len(step.Parameters) > 0 {
			if b, err := json.Marshal(step.Parameters); err == nil {
				summary += " with " + string(b)
			}
		}
	}
	return true, summary
}

// stepApproval is the interrupt payload of a step approval.
func (a *Agent) stepApproval(id string, c capabilities.Capability, step capabilities.Step, summary string, now time.Time) state.Approval {
	args := map[string]any{}
	for k, v := range step.Parameters {
		args[k] = v
	}
	if len(step.Resolved) > 0 {
		var in []string
		for _, e := range step.Resolved {
			in = append(in, e.Type+"."+e.Key)
		}
		args["inputs"] = in
	}
	if len(args) == 0 {
		args = nil
	}
	return state.Approval{ID: id, Kind: state.ApprovalStep, Capability: c.Name(), StepIndex: step.Index,
		Summary: summary, Arguments: args, Created: now, Expires: a.expires(now)}
}

func (a *Agent) expires(now time.Time) time.Time {
	if a.cfg.ApprovalExpiry < 0 {
		return time.Time{}
	}
	return now.Add(a.cfg.ApprovalExpiry)
}

// rejectedStep records that a human rejected the attempt's step (summary
// is what they were asked; the answer's rule says how): the step does not
// run. Alone, it ends the turn with the
// rejection; beside other steps of its layer — another write waiting for its
// own approval — it leaves them to be answered on their own, and the router
// sends the turn to respond once they are (rejectionNode says what was and
// was not done). Nothing after the layer starts.
func (a *Agent) rejectedStep(ctx context.Context, at attempt, summary string) state.Update {
	s, idx, ps, now := at.s, at.idx, at.ps, at.now
	plan := s.Turn.Plan
	ps2 := ps
	ps2.Status, ps2.Error, ps2.NotBefore = state.StepRejected, nil, time.Time{}
	res := state.StepResult{StepIndex: idx, Capability: at.c.Name(), TaskObjective: ps.TaskObjective, Success: false,
		Error: notApprovedPrefix(at.ans.Rule) + summary, At: now, Plan: plan.Number}
	u := state.Update{NodeSteps: 1, Step: &state.StepUpdate{Plan: plan.Number, Index: idx, Step: ps2, ClearError: true, Result: &res}}
	if len(router.Carried(ctx, s, a.rc).Steps) > 1 {
		return u // siblings: respond speaks once they are done
	}
	t := s.Turn
	p := *plan
	p.Steps = slices.Clone(p.Steps)
	p.Steps[idx] = ps2
	t.Plan, t.Results = &p, append(slices.Clip(t.Results), res)
	u.Done = true
	u.Messages = []state.Message{{Role: state.RoleAssistant, Kind: state.KindRejected, Turn: s.Turn.Number, Time: now, Content: a.rejectionText(t)}}
	return u
}

// The result of a step whose approval did not approve starts with how
// (a human's no, an expiry, a new message in its place); the summary of
// what the human was asked follows.
const (
	rejectedBy   = "rejected by a human: "
	expiredBy    = "expired unanswered: "
	supersededBy = "replaced by a new message: "
)

func notApprovedPrefix(rule string) string {
	switch rule {
	case state.AnswerExpired:
		return expiredBy
	case state.AnswerSuperseded:
		return supersededBy
	}
	return rejectedBy
}

// rejectionNode wraps the respond and clarify nodes: after a human rejected
// a step that ran beside others, the turn's one message says what was
// rejected and what had run, in words no model chose.
func (a *Agent) rejectionNode(fn graph.NodeFunc[state.State, state.Update]) graph.NodeFunc[state.State, state.Update] {
	return func(ctx context.Context, s state.State) (state.Update, error) {
		p := s.Turn.Plan
		if p == nil || !slices.ContainsFunc(p.Steps, func(st state.PlanStep) bool { return st.Status == state.StepRejected }) {
			return fn(ctx, s)
		}
		return a.rejected(s), nil
	}
}

// rejected ends the turn whose plan a human rejected a step of; a
// function of its own for the reason answered is.
//
//go:noinline
func (a *Agent) rejected(s state.State) state.Update {
	t := s.Turn
	t.Done = true
	msg := state.Message{Role: state.RoleAssistant, Kind: state.KindRejected, Turn: t.Number, Time: a.cfg.Now(), Content: a.rejectionText(t)}
	return state.Update{Turn: &t, Messages: []state.Message{msg}, NodeSteps: 1}
}

// rejectionText is the turn's message after a rejection. It names what was
// rejected and says plainly that it was not done; steps that finished (before
// the approval was asked, or beside it) are listed, so "not carried out" is
// never read as "nothing ran", and a change made beside the rejected one is
// never hidden behind "nothing was done".
func (a *Agent) rejectionText(t state.Turn) string {
	p := t.Plan
	var rejected, done, failed []string
	changed := false
	for i, st := range p.Steps {
		switch st.Status {
		case state.StepRejected:
			what, how := fmt.Sprintf("step %d", i+1), rejectedBy
			for j := len(t.Results) - 1; j >= 0; j-- {
				r := t.Results[j]
				if r.StepIndex != i || r.Plan != p.Number {
					continue
				}
				for _, prefix := range []string{rejectedBy, expiredBy, supersededBy} {
					if summary, ok := strings.CutPrefix(r.Error, prefix); ok {
						how = prefix
						if summary != "" {
							what += " (" + summary + ")"
						}
					}
				}
				break
			}
			switch how {
			case expiredBy:
				what = "nobody answered the approval of " + what + " in time: it expired"
			case supersededBy:
				what = "your new message replaced the approval of " + what
			default:
				what = "you rejected " + what
			}
			rejected = append(rejected, what)
		case state.StepDone:
			c := st.Effective()
			if c == state.NodeRespond || c == state.NodeClarify {
				continue
			}
			entry := fmt.Sprintf("%d (%s)", i+1, c)
			if a.sideEffects(c) {
				entry, changed = fmt.Sprintf("%d (%s, a change)", i+1, c), true
			}
			done = append(done, entry)
		case state.StepFailed:
			what := fmt.Sprintf("step %d (%s) failed", i+1, st.Effective())
			if st.Error != nil && st.Error.Classification.UserMessage != "" {
				what += ": " + strings.TrimSuffix(st.Error.Classification.UserMessage, ".")
			}
			failed = append(failed, what)
		}
	}
	it := "it was"
	if len(rejected) > 1 {
		it = "they were"
	}
	var b strings.Builder
	lead := upperFirst(strings.Join(rejected, "; "))
	if changed {
		fmt.Fprintf(&b, "%s: %s not carried out, and the rest of the plan was cancelled.", lead, it)
	} else {
		fmt.Fprintf(&b, "%s. Nothing was done: %s not carried out, and the rest of the plan was cancelled.", lead, it)
	}
	if len(done) > 0 {
		fmt.Fprintf(&b, " Steps that were carried out: %s.", strings.Join(done, ", "))
	}
	for _, f := range failed {
		fmt.Fprintf(&b, " Beside it, %s.", f)
	}
	return b.String()
}

// planNotApprovedText is the turn's message when decision d did not
// approve the plan: a human's no, an expiry or a new message in its place,
// each said as what it was.
func planNotApprovedText(d state.ApprovalDecision) string {
	lead := "You rejected the plan."
	switch d.Rule {
	case state.AnswerExpired:
		lead = "Nobody answered the approval of the plan in time: it expired."
	case state.AnswerSuperseded:
		lead = "Your new message replaced the approval of the plan."
	}
	return lead + " Nothing was done: no step of it was carried out."
}

// planSummary describes a plan for a human, one line per step.
func planSummary(p *state.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Approve this plan of %d steps before any of them runs?", len(p.Steps))
	for i, st := range p.Steps {
		fmt.Fprintf(&b, "\n%d. %s — %s", i+1, st.Capability, st.TaskObjective)
		if len(st.Parameters) > 0 {
			if js, err := json.Marshal(st.Parameters); err == nil {
				fmt.Fprintf(&b, " %s", js)
			}
		}
	}
	return b.String()
}

// approvalsOf decodes the approvals pending in a checkpoint tuple's
// interrupts, in order.
func approvalsOf(pending []*graph.InterruptError) []state.Approval {
	var out []state.Approval
	for _, ie := range pending {
		var ap state.Approval
		if json.Unmarshal(ie.Payload, &ap) == nil && ap.ID != "" {
			out = append(out, ap)
		}
	}
	return out
}

func findApproval(aps []state.Approval, id string) (state.Approval, bool) {
	i := slices.IndexFunc(aps, func(ap state.Approval) bool { return ap.ID == id })
	if i < 0 {
		return state.Approval{}, false
	}
	return aps[i], true
}
