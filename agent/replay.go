package agent

import (
	"context"
	"fmt"
	"iter"

	"github.com/capgraph/capgraph/state"
)

// Replay runs a fork's turn (fork.go) — under this agent's configuration,
// which may be another than the original's (another model, prompts,
// policies): an agent built from it over the same store replays the fork.
// The fork's edited user message runs as its turn; an unfinished turn goes
// on from its checkpoint. Its writes act on the fork's target (the
// simulator, unless a human chose another). Nothing to replay (a fork of a
// finished turn without an edited message) is ErrBadRequest.
func (a *Agent) Replay(ctx context.Context, thread, by string) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		s, status, err := a.State(ctx, thread)
		if err != nil {
			yield(Event{}, err)
			return
		}
		if _, ok := s.Metadata[MetaRehearsal]; !ok {
			yield(Event{}, fmt.Errorf("%w: thread %q is not a fork; replay runs forks (Fork makes one)", ErrBadRequest, thread))
			return
		}
		var run iter.Seq2[Event, error]
		switch {
		case s.Metadata[MetaForkInput] != "":
			// The fork's allowed set, which a request without one would lift.
			run = a.Run(ctx, TurnRequest{Thread: thread, Input: s.Metadata[MetaForkInput], By: by, Metadata: ownerOf(s.Metadata),
				AllowedCapabilities: allowedList(s)})
		case status == RunCanceled || status == RunFailed:
			run = a.Resume(ctx, thread, Answer{By: by})
		default:
			yield(Event{}, fmt.Errorf("%w: the fork %q has nothing to replay (its turn ended and no edited message waits); send it a new message", ErrBadRequest, thread))
			return
		}
		for ev, err := range run {
			if !yield(ev, err) {
				return
			}
		}
	}
}

// ReplayConversation re-runs the user messages of thread's turns, in
// order, as the turns of a new fork (to, "" for a new id) made from its
// start, under this agent's configuration, with the fork's target (the
// rehearsal target unless target names another). A turn that waits for a
// human ends the replay there: only a human approves, and the events say
// what was asked. It returns the fork.
func (a *Agent) ReplayConversation(ctx context.Context, req ForkRequest, by string) (Forked, iter.Seq2[Event, error], error) {
	inputs, err := a.userInputs(ctx, req.Thread)
	if err != nil {
		return Forked{}, nil, err
	}
	if len(inputs) == 0 {
		return Forked{}, nil, fmt.Errorf("%w: thread %q has no user message to replay", ErrBadRequest, req.Thread)
	}
	req.Checkpoint, req.Plan, req.Input = "", nil, inputs[0]
	// The latest checkpoint's first turn is the conversation's start.
	f, err := a.forkAtStart(ctx, req)
	if err != nil {
		return Forked{}, nil, err
	}
	seq := func(yield func(Event, error) bool) {
		for i, in := range inputs {
			var last Event
			for ev, err := range a.Run(ctx, TurnRequest{Thread: f.Thread, Input: in, By: by, Metadata: req.Metadata, AllowedCapabilities: req.AllowedCapabilities}) {
				last = ev
				if !yield(ev, err) || err != nil {
					return
				}
			}
			if last.Type == EventDone && last.Status == RunInterrupted && i < len(inputs)-1 {
				return // waits for a human: the replay stops here
			}
		}
	}
	return f, seq, nil
}

// forkAtStart forks thread from before its first turn (req.Input is the
// first message; the turns are run by the caller).
func (a *Agent) forkAtStart(ctx context.Context, req ForkRequest) (Forked, error) {
	// An edited input forks from where its turn started; turn 1's start is
	// the empty thread (or the thread as CreateThread made it).
	first, err := a.firstTurnCheckpoint(ctx, req.Thread)
	if err != nil {
		return Forked{}, err
	}
	req.Checkpoint = first
	f, err := a.Fork(ctx, req)
	if err != nil {
		return Forked{}, err
	}
	// The caller runs every message itself, the first too (a turn that
	// runs clears MetaForkInput).
	f.Input = ""
	return f, nil
}

// firstTurnCheckpoint is a kept checkpoint of the thread's first kept turn.
func (a *Agent) firstTurnCheckpoint(ctx context.Context, thread string) (string, error) {
	h, err := a.History(ctx, thread)
	if err != nil {
		return "", err
	}
	for _, m := range h {
		if m.Turn > 0 {
			return m.Checkpoint, nil
		}
	}
	return "", fmt.Errorf("%w: thread %q has no turn to replay", ErrBadRequest, thread)
}

// userInputs are the user messages of the thread's turns, in order.
func (a *Agent) userInputs(ctx context.Context, thread string) ([]string, error) {
	s, _, err := a.State(ctx, thread)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range s.Messages {
		if m.Role == state.RoleUser {
			out = append(out, m.Content)
		}
	}
	return out, nil
}

// ownerOf is the owner metadata of a thread, for a turn its replay runs.
func ownerOf(md map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range []string{MetaOwner, MetaTenant, MetaUser} {
		if v, ok := md[k]; ok {
			out[k] = v
		}
	}
	return out
}
