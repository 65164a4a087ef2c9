package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/state"
)

// A thread's history is its kept checkpoints, oldest first, each read as
// a moment of a turn: what made it, the plan and step results then, how
// the turn stood. What is kept is what pruning leaves (Config.
// KeepIntermediate): by default the checkpoint each turn ended with (and
// the one a turn waits at for a human); with intermediate checkpoints
// kept, every step's. Each kept checkpoint can be forked (fork.go).
// docs/time-travel.md.

// Moment kinds: what a checkpoint is in its turn (Moment.Kind).
const (
	// MomentCreated: the thread made before its first turn.
	MomentCreated = "created"
	// MomentInput: a turn's input, before any node ran.
	MomentInput = "input"
	// MomentTask: the task extracted.
	MomentTask = "task"
	// MomentClassified: the capabilities selected.
	MomentClassified = "classified"
	// MomentPlanned: a plan made, no step run yet.
	MomentPlanned = "planned"
	// MomentStep: within the plan, after a step ran.
	MomentStep = "step"
	// MomentApproval: the turn waits for a human's answer.
	MomentApproval = "approval"
	// MomentError: a failure is being recovered from (or reported next).
	MomentError = "error"
	// MomentEnded: the turn ended with its one message.
	MomentEnded = "ended"
)

// Moment is one kept checkpoint of a thread, as its history shows it.
type Moment struct {
	// Checkpoint is its id (what Fork takes), Parent its parent's.
	Checkpoint string    `json:"checkpoint"`
	Parent     string    `json:"parent,omitempty"`
	Time       time.Time `json:"time"`
	// Turn is the turn's number and id; Input the user's message.
	Turn   int    `json:"turn"`
	TurnID string `json:"turn_id,omitempty"`
	Input  string `json:"input,omitempty"`
	// Kind is what the moment is (Moment* constants); Event says what
	// made it, in words; Nodes are the nodes whose step wrote it, when
	// the checkpoint before it is kept too.
	Kind  string   `json:"kind"`
	Event string   `json:"event"`
	Nodes []string `json:"nodes,omitempty"`
	// Next are the nodes that run next ("" when the turn ended).
	Next []string `json:"next,omitempty"`
	// Task, Capabilities, Plan and Results are the turn as it stood.
	Task         string             `json:"task,omitempty"`
	Capabilities []string           `json:"capabilities,omitempty"`
	Plan         *state.Plan        `json:"plan,omitempty"`
	Results      []state.StepResult `json:"results,omitempty"`
	// Error is the failure being recovered from; Approval the question
	// waiting for a human.
	Error    *state.ErrorInfo `json:"error,omitempty"`
	Approval *state.Approval  `json:"approval,omitempty"`
	// Outcome is the kind of the turn's message once it ended (answer,
	// clarification, error_report, rejected), Message that message.
	Outcome string `json:"outcome,omitempty"`
	Message string `json:"message,omitempty"`
	// Target is the target system of the turn's writes; Tokens the
	// tokens used so far in the turn.
	Target string `json:"target,omitempty"`
	Tokens int    `json:"tokens,omitempty"`
}

// History lists the thread's kept checkpoints, oldest first. Another
// application's thread is refused (*ForeignThreadError); an unknown one is
// ErrUnknownThread. A frontend checks the caller's ownership first (as for
// State).
func (a *Agent) History(ctx context.Context, thread string) ([]Moment, error) {
	cps, err := a.cfg.Store.List(ctx, thread, checkpoint.ListOptions{})
	if err != nil {
		return nil, a.threadErr(thread, err)
	}
	if len(cps) == 0 {
		return nil, a.threadErr(thread, fmt.Errorf("%w: thread %q", checkpoint.ErrNotFound, thread))
	}
	if err := a.checkOwner(thread, cps[0].Metadata, false); err != nil {
		return nil, err
	}
	slices.Reverse(cps)
	out := make([]Moment, 0, len(cps))
	byID := map[string]checkpoint.Checkpoint{}
	for _, cp := range cps {
		byID[cp.ID.String()] = cp
		var pending []state.Approval
		if len(cp.Next) > 0 {
			// Only an unfinished checkpoint can wait for a human.
			t, err := a.cfg.Store.Get(ctx, thread, cp.ID)
			if err != nil {
				return nil, fmt.Errorf("agent: read checkpoint %s of thread %q: %w", cp.ID, thread, err)
			}
			pending = approvalsOf(graph.Interrupts(t))
		}
		m, err := a.moment(cp, pending)
		if err != nil {
			return nil, err
		}
		if p, ok := byID[m.Parent]; ok {
			m.Nodes = slices.Clone(p.Next)
		}
		out = append(out, m)
	}
	return out, nil
}

// moment reads one checkpoint.
func (a *Agent) moment(cp checkpoint.Checkpoint, pending []state.Approval) (Moment, error) {
	s, err := a.g.Decode(cp)
	if err != nil {
		return Moment{}, err
	}
	t := s.Turn
	m := Moment{Checkpoint: cp.ID.String(), Time: cp.Created, Turn: t.Number, TurnID: t.ID, Input: t.Input, Next: cp.Next,
		Capabilities: t.ActiveCapabilities, Plan: t.Plan, Results: t.Results, Error: t.Control.Error,
		Target: t.Options.Target, Tokens: t.Control.Tokens}
	if cp.ParentID != [16]byte{} {
		m.Parent = cp.ParentID.String()
	}
	if t.Task != nil {
		m.Task = t.Task.Text
	}
	switch {
	case len(cp.Next) == 0 && t.Number == 0:
		m.Kind, m.Event = MomentCreated, "the thread was made"
	case len(cp.Next) == 0:
		m.Kind, m.Event = MomentEnded, "the turn ended"
		if msg := turnMessage(s); msg != nil {
			m.Outcome, m.Message = string(msg.Kind), msg.Content
			if m.Outcome == "" {
				m.Outcome = string(state.KindAnswer)
			}
			m.Event = "the turn ended with its " + strings.ReplaceAll(m.Outcome, "_", " ")
		}
	case len(pending) > 0:
		ap := pending[0]
		m.Approval = &ap
		m.Kind, m.Event = MomentApproval, "a human was asked: "+ap.Summary
	case t.Control.Error != nil:
		e := t.Control.Error
		m.Kind, m.Event = MomentError, fmt.Sprintf("%s failed (%s, %s)", e.Node, e.Classification.Severity, nonEmpty(e.Classification.Kind, "error"))
	case cp.Step == 0 || slices.Contains(cp.Next, state.NodeTaskExtraction) && t.Task == nil:
		m.Kind, m.Event = MomentInput, "the user wrote: "+t.Input
	case t.Plan != nil && len(t.Results) > 0:
		r := t.Results[len(t.Results)-1]
		word := "succeeded"
		if !r.Success {
			word = "failed"
		}
		m.Kind, m.Event = MomentStep, fmt.Sprintf("step %d (%s) %s", r.StepIndex+1, r.Capability, word)
	case t.Plan != nil:
		m.Kind, m.Event = MomentPlanned, fmt.Sprintf("a plan of %d step(s) was made", len(t.Plan.Steps))
	case t.ActiveCapabilities != nil:
		m.Kind, m.Event = MomentClassified, "capabilities selected: "+strings.Join(t.ActiveCapabilities, ", ")
	case t.Task != nil:
		m.Kind, m.Event = MomentTask, "the task was extracted: "+t.Task.Text
	default:
		m.Kind, m.Event = MomentInput, "the user wrote: "+t.Input
	}
	return m, nil
}

// turnMessage is the assistant message the turn ended with, if any.
func turnMessage(s state.State) *state.Message {
	for i := len(s.Messages) - 1; i >= 0; i-- {
		msg := s.Messages[i]
		if msg.Role == state.RoleUser {
			return nil
		}
		if msg.Role == state.RoleAssistant {
			return &msg
		}
	}
	return nil
}
