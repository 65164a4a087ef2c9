package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/state"
)

// A fork is a new thread started from a kept checkpoint of another
// (History lists them): the conversation up to that moment, owned by the
// caller, recording where it came from. The original is not changed. Its
// writes go to the rehearsal target (the simulator) unless a human names
// another: a fork is a rehearsal first (target.go, docs/time-travel.md).

// Metadata keys a fork records (reserved: only Fork writes them).
const (
	// MetaForkedFrom and MetaForkedAt name the thread and checkpoint a
	// fork started from.
	MetaForkedFrom = "forked_from"
	MetaForkedAt   = "forked_at"
	// MetaForkInput is the edited user message a fork waits to run
	// (Replay runs it); empty once it ran.
	MetaForkInput = "fork_input"
	// MetaRehearsal marks a fork: its value is the target its turns write
	// to unless a turn's options name one (the rehearsal target, or the
	// one a human chose), or RehearsalWritesOff.
	MetaRehearsal = "rehearsal"
	// RehearsalWritesOff: the fork's turns run with writes off (no target
	// to rehearse on is configured, and no human chose one).
	RehearsalWritesOff = "writes_off"
)

// ForkRequest asks for a fork.
type ForkRequest struct {
	// Thread and Checkpoint are where to fork from: a checkpoint History
	// lists ("": the latest).
	Thread     string
	Checkpoint string
	// NewThread is the fork's id ("": a new one).
	NewThread string
	// Input, when set, replaces the user message of the checkpoint's turn:
	// the fork starts where that turn started (the end of the turn before)
	// and waits to run Input as its turn (Replay).
	Input string
	// Plan, when set, replaces the plan of the checkpoint's turn, which
	// must not have ended; it is checked as a human's edited plan is at a
	// plan approval, and the turn goes on from its first step.
	Plan *state.Plan
	// Target is the target system the fork's writes act on; "" is the
	// rehearsal target (RehearsalTarget), or writes off when there is none.
	// Only a human names another (a frontend sets it from the human's
	// explicit choice).
	Target string
	// Metadata is the caller's (owner, tenant, user): the fork is theirs.
	Metadata map[string]string
	// AllowedCapabilities are the caller's, as for TurnRequest.
	AllowedCapabilities []string
}

// Forked is a fork made.
type Forked struct {
	Thread     string `json:"thread"`
	From       string `json:"from"`
	Checkpoint string `json:"checkpoint"`
	// Input is the user message the fork waits to run (an edited one);
	// Resumable says its turn is unfinished and goes on with Replay.
	Input     string `json:"input,omitempty"`
	Resumable bool   `json:"resumable,omitempty"`
	// Target is where its writes go ("" with Writes false: nowhere).
	Target string `json:"target,omitempty"`
	Writes bool   `json:"writes"`
}

// ErrForkPlan is the error of a plan edit Fork cannot apply.
var ErrForkPlan = errors.New("agent: the plan cannot be edited at this checkpoint")

// Fork makes a new thread from a kept checkpoint. The source thread must
// be this application's (*ForeignThreadError); a frontend checks that the
// caller owns it. Bad requests (an unknown checkpoint, a plan edit at a
// finished turn, an invalid plan, an unknown target, an existing new
// thread) match ErrBadRequest; an unknown thread is ErrUnknownThread.
func (a *Agent) Fork(ctx context.Context, req ForkRequest) (Forked, error) {
	if strings.TrimSpace(req.Thread) == "" {
		return Forked{}, fmt.Errorf("%w: thread must not be empty", ErrBadRequest)
	}
	if err := a.checkTarget(req.Target); err != nil {
		return Forked{}, err
	}
	if err := a.validateAllowed(req.AllowedCapabilities); err != nil {
		return Forked{}, err
	}
	cpID := uuid.Nil
	if req.Checkpoint != "" {
		id, err := uuid.Parse(req.Checkpoint)
		if err != nil {
			return Forked{}, fmt.Errorf("%w: checkpoint %q is not a checkpoint id", ErrBadRequest, req.Checkpoint)
		}
		cpID = id
	}
	src, err := a.cfg.Store.Get(ctx, req.Thread, cpID)
	switch {
	case errors.Is(err, checkpoint.ErrNotFound) && cpID != uuid.Nil:
		if _, terr := a.cfg.Store.Get(ctx, req.Thread, uuid.Nil); terr == nil {
			return Forked{}, fmt.Errorf("%w: thread %q keeps no checkpoint %s (History lists the kept ones)", ErrBadRequest, req.Thread, req.Checkpoint)
		}
		return Forked{}, a.threadErr(req.Thread, err)
	case err != nil:
		return Forked{}, a.threadErr(req.Thread, err)
	}
	if err := a.checkOwner(req.Thread, src.Checkpoint.Metadata, false); err != nil {
		return Forked{}, err
	}
	from := src.Checkpoint
	if req.Input != "" {
		// The turn is asked again: start where it started.
		s, err := a.g.Decode(from)
		if err != nil {
			return Forked{}, err
		}
		if from, err = a.turnStart(ctx, req.Thread, s.Turn.Number); err != nil {
			return Forked{}, err
		}
		if req.Plan != nil {
			return Forked{}, fmt.Errorf("%w: %w: edit the input or the plan, not both", ErrBadRequest, ErrForkPlan)
		}
	}
	to := req.NewThread
	if to == "" {
		to = newID()
	}
	ctx, release, err := a.ownThread(ctx, to)
	if err != nil {
		return Forked{}, err
	}
	defer release()
	f := Forked{Thread: to, From: req.Thread, Checkpoint: src.Checkpoint.ID.String(), Input: req.Input}
	f.Target = req.Target
	if f.Target == "" {
		f.Target = a.RehearsalTarget()
	}
	fork := func(s state.State) (state.State, []string, error) {
		var next []string
		if req.Plan != nil {
			if s.Turn.Plan == nil || s.Turn.Done {
				return s, nil, fmt.Errorf("%w: %w: the turn has no plan here or has ended; fork at a checkpoint of the turn with a plan (keep intermediate checkpoints: checkpoints.keep_intermediate)",
					ErrBadRequest, ErrForkPlan)
			}
			steps, err := a.validateEdited(s, req.Plan)
			if err != nil {
				return s, nil, fmt.Errorf("%w: %w: %w", ErrBadRequest, ErrForkPlan, err)
			}
			p := *s.Turn.Plan
			p.Steps = steps
			for i := range p.Steps {
				p.Steps[i].Status, p.Steps[i].Attempts, p.Steps[i].Grant, p.Steps[i].Approved = state.StepPending, 0, nil, false
			}
			s.Turn.Plan = &p
			s.Turn.Results, s.Turn.Control.Error, s.Turn.PendingApproval = nil, nil, nil
			for _, st := range steps {
				if c := st.Capability; !slices.Contains(s.Turn.ActiveCapabilities, c) && c != state.NodeRespond && c != state.NodeClarify {
					s.Turn.ActiveCapabilities = append(slices.Clip(s.Turn.ActiveCapabilities), c)
				}
			}
			next = router.Decide(s, a.rc).Next
		}
		if s.Turn.Plan != nil && req.Plan == nil {
			// A grant is a human's approval of the original's action on its
			// target: a step still to run in the fork asks its own human.
			p := *s.Turn.Plan
			p.Steps = slices.Clone(p.Steps)
			for i := range p.Steps {
				if p.Steps[i].Status != state.StepDone {
					p.Steps[i].Grant, p.Steps[i].Approved = nil, false
				}
			}
			s.Turn.Plan = &p
		}
		// The fork's writes: the chosen target, else the rehearsal one,
		// else none.
		s.Turn.Options.Target = f.Target
		rehearsal := f.Target
		if f.Target == "" {
			s.Turn.Options.WritesEnabled, rehearsal = false, RehearsalWritesOff
		}
		f.Writes = f.Target != "" && a.cfg.Options.WritesEnabled && a.cfg.Targets[f.Target].WritesEnabled
		md := mergeMeta(s.Metadata, nil)
		for _, k := range []string{MetaOwner, MetaTenant, MetaUser, MetaAllowedCapabilities, MetaForkInput} {
			delete(md, k)
		}
		md = mergeMeta(md, req.Metadata)
		md = mergeMeta(md, map[string]string{MetaForkedFrom: req.Thread, MetaForkedAt: src.Checkpoint.ID.String(), MetaRehearsal: rehearsal})
		if req.Input != "" {
			md[MetaForkInput] = req.Input
		}
		md = withAllowed(md, req.AllowedCapabilities)
		s.Metadata = a.withOwner(md)
		return s, next, nil
	}
	// Pending answers and questions stay with the original: a fork asks
	// its own (for its own target), on its own record. The results of
	// sibling steps that finished are kept, so nothing runs twice.
	keep := func(w checkpoint.Write) bool { return w.Kind == checkpoint.WriteUpdate }
	var cp checkpoint.Checkpoint
	if from.ID == uuid.Nil {
		// Nothing is kept from before the thread's first turn: the fork
		// starts empty, with the fork's metadata.
		s, _, _ := fork(state.State{})
		created, err := a.g.Init(ctx, to, s)
		if err != nil {
			return Forked{}, err
		}
		if !created {
			return Forked{}, fmt.Errorf("%w: %w: %q", ErrBadRequest, graph.ErrThreadExists, to)
		}
		f.Writes = f.Target != "" && a.cfg.Options.WritesEnabled && a.cfg.Targets[f.Target].WritesEnabled
		return f, nil
	}
	cp, err = a.g.Fork(ctx, req.Thread, from.ID, to, fork, keep)
	if errors.Is(err, graph.ErrThreadExists) {
		return Forked{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if err != nil {
		return Forked{}, err
	}
	f.Resumable = len(cp.Next) > 0
	return f, nil
}

// turnStart is the checkpoint turn n started from: the last kept one of an
// earlier turn that ended, or a zero checkpoint when there is none (the
// thread's first turn: the fork starts empty).
func (a *Agent) turnStart(ctx context.Context, thread string, n int) (checkpoint.Checkpoint, error) {
	cps, err := a.cfg.Store.List(ctx, thread, checkpoint.ListOptions{})
	if err != nil {
		return checkpoint.Checkpoint{}, err
	}
	for _, cp := range cps { // newest first
		s, err := a.g.Decode(cp)
		if err != nil {
			return checkpoint.Checkpoint{}, err
		}
		if s.Turn.Number < n && len(cp.Next) == 0 {
			return cp, nil
		}
	}
	return checkpoint.Checkpoint{}, nil
}

// rehearsalOptions are the options of a new turn of a fork (metadata md
// with MetaRehearsal): its writes go to the fork's target unless the
// turn's request names one, and nowhere when the fork has none.
func rehearsalOptions(md map[string]string, req *TurnOptions, o state.Options) state.Options {
	r, ok := md[MetaRehearsal]
	if !ok || (req != nil && req.Target != "") {
		return o
	}
	if r == RehearsalWritesOff {
		o.WritesEnabled, o.Target = false, ""
		return o
	}
	o.Target = r
	return o
}
