package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/state"
)

// Comparing two threads turn by turn — an original and its replay under
// another configuration (replay.go) — by what each turn did: the route
// through the capabilities, the severities of its failures, the approvals
// it asked, its answer, its calls, tokens and time, and the writes it made
// on which target. docs/time-travel.md.

// TurnReport is what one turn of a thread did, from the checkpoint it
// ended with (or waits at) and the audit log.
type TurnReport struct {
	Thread string `json:"thread"`
	Turn   int    `json:"turn"`
	Input  string `json:"input"`
	// Status is how the turn stands: answered (ended with its message),
	// interrupted (waits for a human), or canceled / failed.
	Status string `json:"status"`
	// Route is the plan steps that ran, in order ("name" or "name!" for a
	// failed attempt), ending with the node that wrote the turn's message.
	Route []string `json:"route"`
	// Plans and Reclassifications count the plans made and the
	// selections made again.
	Plans             int `json:"plans"`
	Reclassifications int `json:"reclassifications"`
	// Severities are the severities of the turn's failures, in order.
	Severities []string `json:"severities,omitempty"`
	// Approvals are the questions asked of a human (answered or pending).
	Approvals []string `json:"approvals,omitempty"`
	// Outcome is the kind of the turn's message; Answer the message.
	Outcome string `json:"outcome,omitempty"`
	Answer  string `json:"answer,omitempty"`
	// Calls counts the capability executions; NodeSteps the node
	// executions; Tokens the model tokens (TokensByRole by role).
	Calls        int            `json:"calls"`
	NodeSteps    int            `json:"node_steps"`
	Tokens       int            `json:"tokens"`
	TokensByRole map[string]int `json:"tokens_by_role,omitempty"`
	// Duration is from the turn's start to its last checkpoint, less the
	// time it waited for humans.
	Duration time.Duration `json:"duration"`
	// Target is where its writes went; Writes says each attempt's outcome
	// (DescribeOutcome).
	Target string   `json:"target,omitempty"`
	Writes []string `json:"writes,omitempty"`
}

// Comparison sets two threads' turns side by side, by turn number: Pairs
// has one row per turn of the right thread (a replay), with the left
// thread's turn of that number (nil when it has none).
type Comparison struct {
	Left  string     `json:"left"`
	Right string     `json:"right"`
	Pairs []TurnPair `json:"pairs"`
}

// TurnPair is one turn on each side and what differs.
type TurnPair struct {
	Turn  int         `json:"turn"`
	Left  *TurnReport `json:"left,omitempty"`
	Right *TurnReport `json:"right,omitempty"`
	// Differences names the fields that differ ("route", "answer", …).
	Differences []string `json:"differences,omitempty"`
}

// Compare reports two threads' turns side by side. Both must be this
// application's; a frontend checks that the caller owns both.
func (a *Agent) Compare(ctx context.Context, left, right string) (Comparison, error) {
	l, err := a.TurnReports(ctx, left)
	if err != nil {
		return Comparison{}, err
	}
	r, err := a.TurnReports(ctx, right)
	if err != nil {
		return Comparison{}, err
	}
	c := Comparison{Left: left, Right: right}
	for i := range r {
		p := TurnPair{Turn: r[i].Turn, Right: &r[i]}
		for j := range l {
			if l[j].Turn == r[i].Turn {
				p.Left = &l[j]
			}
		}
		p.Differences = differences(p.Left, p.Right)
		c.Pairs = append(c.Pairs, p)
	}
	return c, nil
}

// TurnReports reports each turn of the thread that a kept checkpoint
// shows, oldest first: a turn that ended, and the thread's latest turn
// however it stands.
func (a *Agent) TurnReports(ctx context.Context, thread string) ([]TurnReport, error) {
	h, err := a.History(ctx, thread)
	if err != nil {
		return nil, err
	}
	recs, err := a.Audit(ctx, AuditFilter{Thread: thread, Event: AuditEnded})
	if err != nil && a.cfg.AuditLog != nil {
		return nil, err
	}
	last := map[int]int{} // turn → index in h of its last moment
	var order []int
	for i, m := range h {
		if m.Turn == 0 {
			continue
		}
		if _, ok := last[m.Turn]; !ok {
			order = append(order, m.Turn)
		}
		last[m.Turn] = i
	}
	_, status, err := a.State(ctx, thread)
	if err != nil {
		return nil, err
	}
	var out []TurnReport
	for k, n := range order {
		m := h[last[n]]
		r, err := a.turnReport(ctx, thread, m)
		if err != nil {
			return nil, err
		}
		switch {
		case m.Kind == MomentEnded:
			r.Status = string(RunAnswered)
		case k == len(order)-1:
			r.Status = string(status)
		default:
			r.Status = string(RunCanceled)
		}
		for _, rec := range recs {
			if rec.Turn == n && rec.Outcome != "" {
				r.Writes = append(r.Writes, DescribeOutcome(rec.AuditRecord))
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// turnReport reads the turn of moment m from its checkpoint.
func (a *Agent) turnReport(ctx context.Context, thread string, m Moment) (TurnReport, error) {
	s, err := a.stateAt(ctx, thread, m.Checkpoint)
	if err != nil {
		return TurnReport{}, err
	}
	t := s.Turn
	r := TurnReport{Thread: thread, Turn: t.Number, Input: t.Input, Plans: t.Control.PlansCreated,
		Reclassifications: t.Control.Reclassifications, Outcome: m.Outcome, Answer: m.Message, Calls: len(t.Results),
		NodeSteps: t.Control.NodeSteps, Tokens: t.Control.Tokens, TokensByRole: t.Control.TokensByRole, Target: t.Options.Target}
	for _, res := range t.Results {
		step := res.Capability
		if !res.Success {
			step += "!"
			if res.Severity != "" {
				r.Severities = append(r.Severities, res.Severity)
			}
		}
		r.Route = append(r.Route, step)
	}
	if e := t.Control.Error; e != nil && e.StepIndex < 0 {
		r.Severities = append(r.Severities, e.Classification.Severity.String())
	}
	if end := endNode(m.Outcome); m.Kind == MomentEnded && (len(r.Route) == 0 || r.Route[len(r.Route)-1] != end) {
		r.Route = append(r.Route, end) // the node that wrote the message, when no plan step did
	}
	for _, d := range t.Approvals {
		r.Approvals = append(r.Approvals, fmt.Sprintf("%s (%s)", nonEmpty(d.Summary, d.ID), yesNo(d.Approved)))
	}
	if m.Approval != nil {
		r.Approvals = append(r.Approvals, m.Approval.Summary+" (pending)")
	}
	if !t.StartedAt.IsZero() {
		r.Duration = m.Time.Sub(t.StartedAt) - t.Control.Paused
	}
	return r, nil
}

func yesNo(approved bool) string {
	if approved {
		return "approved"
	}
	return "rejected"
}

// endNode is the node that writes a message of kind outcome.
func endNode(outcome string) string {
	switch state.MessageKind(outcome) {
	case state.KindClarification:
		return state.NodeClarify
	case state.KindErrorReport:
		return state.NodeError
	case state.KindRejected:
		return "rejected"
	}
	return state.NodeRespond
}

// stateAt is the state of checkpoint id of thread.
func (a *Agent) stateAt(ctx context.Context, thread, id string) (state.State, error) {
	cpID, err := uuid.Parse(id)
	if err != nil {
		return state.State{}, fmt.Errorf("%w: checkpoint %q is not a checkpoint id", ErrBadRequest, id)
	}
	t, err := a.cfg.Store.Get(ctx, thread, cpID)
	if err != nil {
		return state.State{}, fmt.Errorf("agent: read checkpoint %s of thread %q: %w", id, thread, err)
	}
	return a.g.Decode(t.Checkpoint)
}

// differences names the fields of two reports that differ.
func differences(l, r *TurnReport) []string {
	if l == nil || r == nil {
		return []string{"turn"}
	}
	var out []string
	add := func(name string, differ bool) {
		if differ {
			out = append(out, name)
		}
	}
	add("input", l.Input != r.Input)
	add("status", l.Status != r.Status)
	add("route", !slices.Equal(l.Route, r.Route))
	add("plans", l.Plans != r.Plans)
	add("severities", !slices.Equal(l.Severities, r.Severities))
	add("approvals", !slices.Equal(l.Approvals, r.Approvals))
	add("outcome", l.Outcome != r.Outcome)
	add("answer", strings.TrimSpace(l.Answer) != strings.TrimSpace(r.Answer))
	add("calls", l.Calls != r.Calls)
	add("tokens", l.Tokens != r.Tokens)
	add("target", l.Target != r.Target)
	add("writes", !slices.Equal(l.Writes, r.Writes))
	return out
}
