package server

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"net/http"
	"slices"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/turns"
)

// Runs that start without a client's request (a webhook trigger's) are
// the server's runs all the same: they belong to an Owner, whose key lists
// their thread, streams the run at
// /api/threads/{thread}/runs/{run}/events and answers its approvals; the
// run manager runs them, so a cancel stops them and Shutdown joins them.

// Owner is the principal a run started without a client's request
// belongs to: the API key named Principal in Tenant ("" is "default").
// An empty Principal is the keyless caller on a server without API keys;
// on one with keys, a principal of its own named by the request's By,
// which no key holds (its runs are not listed to anyone).
type Owner struct {
	Tenant    string
	Principal string
}

// StartFunc starts a turn for owner on the owner's thread req.Thread
// (created when new), as the owner's POST /api/threads/{thread}/runs
// would: the same checks, a run record, the owner's run limits. The
// turn's capabilities are those both req.AllowedCapabilities and the
// owner's key allow. It returns the run's id once the run is recorded
// and started; the run goes on without the caller.
type StartFunc func(ctx context.Context, owner Owner, req agent.TurnRequest) (runID string, err error)

// The sources (thread metadata, run label) of runs started without a
// client's request: through a StartFunc (a trigger's), and by RunFor (a
// schedule's).
const (
	sourceStarted   = "trigger"
	sourceScheduled = "schedule"
)

// startError is a StartFunc's error with the HTTP status a request
// refused for the same reason gets (a trigger answers with it).
type startError struct{ err error }

func (e startError) Error() string { return e.err.Error() }
func (e startError) Unwrap() error { return e.err }

// StatusCode is the status of the reason when a client's request would
// get a 4xx for it (403 for the owner's thread quota, 429 for its run
// limit, …); anything else, the server's own trouble or its
// configuration's (an owner no key names), is a 503.
func (e startError) StatusCode() int {
	if status, _, _, _ := apierror.Status(e.err); status >= 400 && status < 500 {
		return status
	}
	return http.StatusServiceUnavailable
}

// startFor is the server's StartFunc; its errors have a StatusCode.
func (s *Server) startFor(ctx context.Context, o Owner, req agent.TurnRequest) (string, error) {
	r, err := s.startOwned(ctx, o, req, sourceStarted)
	if err != nil {
		return "", startError{err}
	}
	return r.ID, nil
}

// RunFor runs a turn for owner as a StartFunc starts it (a run of the
// server, owner's: listed, streamed, its approvals answered with owner's
// key; the thread's client id is req.Thread) and streams its events until
// it ends, as agent.Runner's Run does: the last event is EventDone, paired
// with the run's error if it failed. The run is the server's: when ctx
// ends first, the stream ends with ctx's error and the run goes on.
// Package schedule runs a schedule's turns so under capgraph serve.
func (s *Server) RunFor(ctx context.Context, owner Owner, req agent.TurnRequest) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		r, err := s.startOwned(ctx, owner, req, sourceScheduled)
		if err != nil {
			yield(agent.Event{}, err)
			return
		}
		s.runEvents(ctx, r, false)(yield)
	}
}

// runEvents streams r's events as agent.Runner's Run does: the last is
// EventDone, paired with the run's error if it failed. When ctx ends
// first the stream ends with ctx's error; a joined stream (join) then
// cancels the run, as a client leaving its request does, else the run
// goes on. A consumer that stops reading stops only the stream.
func (s *Server) runEvents(ctx context.Context, r *run, join bool) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		if join {
			r.Join()
		}
		var (
			done    *agent.Event
			stopped bool
		)
		fctx, stop := context.WithCancel(ctx)
		defer stop()
		followed := r.Follow(fctx, 0, s.cfg.Heartbeat, nil, func(ev agent.Event) {
			switch {
			case stopped:
			case ev.Type == agent.EventDone:
				done = &ev // paired with the run's error below
			default:
				if stopped = !yield(ev, nil); stopped {
					stop() // the consumer is done
				}
			}
		}, nil)
		if join && !followed {
			r.Leave(false)
		}
		switch {
		case stopped:
		case !followed:
			yield(agent.Event{}, ctx.Err())
		case done != nil:
			_, runErr, _ := r.Result()
			yield(*done, runErr)
		default:
			_, runErr, _ := r.Result()
			yield(agent.Event{}, cmp.Or(runErr, errors.New("the run ended without an end")))
		}
	}
}

// startRun records and starts sp's run (without a key, so it is always a
// new one).
func (s *Server) startRun(ctx context.Context, sp runSpec) (*run, error) {
	ru, _, err := s.submit(ctx, sp)
	if err == nil && ru == nil {
		err = errors.New("no run was started") // only a key finds another's run, and there is none
	}
	return ru, err
}

func (s *Server) startOwned(ctx context.Context, o Owner, req agent.TurnRequest, source string) (*run, error) {
	c, err := s.ownerCaller(o, req.By)
	if err != nil {
		return nil, err
	}
	th, _, err := s.openThread(ctx, c, req.Thread, source, nil)
	if err != nil {
		return nil, err
	}
	extra := map[string]string{}
	for k, v := range req.Metadata {
		if !slices.Contains(reservedTurnMeta, k) {
			extra[k] = v
		}
	}
	treq, err := s.openTurn(c, turns.TurnOpening{Field: "input", Input: req.Input, Options: req.Options, Source: source,
		ClientThread: th.ID, Thread: th.Internal, ClientMeta: th.Metadata, ExtraMeta: extra,
		Allowed: req.AllowedCapabilities, By: req.By})
	if err != nil {
		return nil, err
	}
	return s.startRun(ctx, runSpec{c: c, source: source, clientThread: th.ID, thread: th.Internal, kind: kindTurn, turn: &treq})
}

// reservedTurnMeta are the metadata keys the server writes itself.
var reservedTurnMeta = []string{metaOwner, metaTenant, metaUser, metaSource, metaThread}

// errNoSuchOwner: an Owner names no configured principal.
var errNoSuchOwner = errors.New("no API key of that name")

// ownerCaller is the caller o names.
func (s *Server) ownerCaller(o Owner, by string) (caller, error) {
	tenant := cmp.Or(o.Tenant, "default")
	if o.Principal == "" {
		if len(s.keys.principals) == 0 {
			return caller{Principal: anonymous}, nil
		}
		return caller{Principal: Principal{Name: cmp.Or(by, sourceStarted), Tenant: tenant}}, nil
	}
	for _, p := range s.keys.principals {
		if p.Name == o.Principal && p.Tenant == tenant {
			return caller{Principal: p}, nil
		}
	}
	if len(s.keys.principals) == 0 && o.Principal == anonymous.Name && tenant == anonymous.Tenant {
		return caller{Principal: anonymous}, nil
	}
	return caller{}, &ConfigError{Field: "Owner", Reason: "principal " + tenant + "/" + o.Principal + ": " + errNoSuchOwner.Error()}
}

// narrowAllowed is the capabilities both lists allow (nil allows all).
func narrowAllowed(a, b []string) []string {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	out := []string{}
	for _, n := range a {
		if slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	return out
}
