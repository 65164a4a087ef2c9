package server

import (
	"context"
	"errors"
	"maps"
	"unicode/utf8"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/native"
)

// Time travel over the native API (docs/time-travel.md; the routes are
// package native's).

// TimeTraveler is an Agent that keeps its threads' history and can fork,
// replay and compare them, and acts on configured targets. Without it,
// these routes answer 404. *agent.Agent is one.
type TimeTraveler interface {
	History(ctx context.Context, thread string) ([]agent.Moment, error)
	Fork(ctx context.Context, req agent.ForkRequest) (agent.Forked, error)
	Replay(ctx context.Context, thread, by string) func(yield func(agent.Event, error) bool)
	Compare(ctx context.Context, left, right string) (agent.Comparison, error)
	Targets() []agent.TargetInfo
}

var _ TimeTraveler = timeTravelAgent{}

// timeTravelAgent adapts *agent.Agent (whose Replay returns an iter.Seq2).
type timeTravelAgent struct{ *agent.Agent }

func (a timeTravelAgent) Replay(ctx context.Context, thread, by string) func(yield func(agent.Event, error) bool) {
	return a.Agent.Replay(ctx, thread, by)
}

// timeTraveler is the Runner's time travel, or nil.
func (s *Server) timeTraveler() TimeTraveler {
	switch a := s.cfg.Runner.(type) {
	case *agent.Agent:
		return timeTravelAgent{a}
	case TimeTraveler:
		return a
	}
	return nil
}

// timeTravel is the Runner's time travel as the native API's routes use
// it, or nil (they answer 404).
func (s *Server) timeTravel() native.TimeTravel {
	if tt := s.timeTraveler(); tt != nil {
		return serverTimeTravel{s, tt}
	}
	return nil
}

// serverTimeTravel is the agent's time travel on the caller's threads
// (native.TimeTravel): the caller is the request's.
type serverTimeTravel struct {
	s  *Server
	tt TimeTraveler
}

func (t serverTimeTravel) History(ctx context.Context, th native.Thread) ([]agent.Moment, error) {
	return t.tt.History(ctx, th.Internal)
}

// Fork makes the fork as a new thread of the caller's, counted against
// its Config.MaxThreads. It keeps the original's metadata, its title
// marked as a fork's, unless the request gives its own.
func (t serverTimeTravel) Fork(ctx context.Context, th native.Thread, req native.ForkRequest) (native.Thread, agent.Forked, error) {
	s, c := t.s, callerFrom(ctx)
	if err := s.checkMetadata(req.Metadata); err != nil {
		return native.Thread{}, agent.Forked{}, err
	}
	if _, found, err := s.findThread(ctx, c, req.ID); err != nil || found {
		if err == nil {
			err = &apierror.RequestError{Kind: apierror.ErrConflict, Param: "id", Message: "a thread with this id exists already"}
		}
		return native.Thread{}, agent.Forked{}, err
	}
	owner := ownerKey(c)
	if err := s.counts.reserve(ctx, owner, func(ctx context.Context) (int, error) { return s.countThreads(ctx, c) }); err != nil {
		return native.Thread{}, agent.Forked{}, err
	}
	created := false
	defer func() { s.counts.commit(owner, created) }()
	meta := maps.Clone(th.Metadata)
	if req.Metadata != nil {
		meta = req.Metadata
	} else if title := meta["title"]; title != "" {
		meta["title"] = forkTitle(title)
	}
	tr := s.turnRequest(c, "", "", nil, nil)
	f, err := t.tt.Fork(ctx, agent.ForkRequest{Thread: th.Internal, Checkpoint: req.Checkpoint, NewThread: internalThreadID(c, req.ID),
		Input: req.Input, Plan: req.Plan, Target: req.Target, Metadata: s.turnMetadata(c, "native", req.ID, meta),
		AllowedCapabilities: tr.AllowedCapabilities})
	if oe := (*agent.OptionError)(nil); errors.As(err, &oe) {
		err = badRequest(oe.Option, "%s", oe.Reason)
	}
	if err != nil {
		return native.Thread{}, agent.Forked{}, err
	}
	created = true
	now := s.cfg.Now()
	return native.Thread{ID: req.ID, Created: now, Updated: now, Metadata: meta}, f, nil
}

// forkTitle is a fork's title: the original's, marked, within the 512
// bytes a metadata value may have.
func forkTitle(t string) string {
	t = "Fork: " + t
	for len(t) > 512 {
		_, size := utf8.DecodeLastRuneInString(t)
		t = t[:len(t)-size]
	}
	return t
}

// Replay replays a fork's turn as the caller: one of the server's runs,
// recorded before it starts (a restart resumes it), counted against the
// caller's run limits, refused while another run goes on on the thread,
// and canceled when the caller leaves before it ends. Its events are the
// run's.
func (t serverTimeTravel) Replay(ctx context.Context, th native.Thread) (func(yield func(agent.Event, error) bool), error) {
	r, err := t.s.startRun(ctx, runSpec{c: callerFrom(ctx), source: "native", clientThread: th.ID, thread: th.Internal, kind: kindReplay})
	if err != nil {
		return nil, err
	}
	return t.s.runEvents(ctx, r, true), nil
}

func (t serverTimeTravel) Compare(ctx context.Context, left, right native.Thread) (agent.Comparison, error) {
	return t.tt.Compare(ctx, left.Internal, right.Internal)
}

func (t serverTimeTravel) Targets() []agent.TargetInfo { return t.tt.Targets() }
