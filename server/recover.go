package server

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/capgraph/capgraph/agent"
)

// Unfinisher lists the threads whose last run was cut between two steps (a
// crash, a shutdown). *agent.Agent implements it.
type Unfinisher interface {
	Unfinished(ctx context.Context) ([]string, error)
}

// ErrNoRecovery: the Runner cannot list unfinished runs.
var ErrNoRecovery = errors.New("server: the runner does not list unfinished runs (no Unfinished method)")

// recoveryPrincipal owns recovered runs of threads the server did not
// create (no owner in their metadata), so their audit records say so.
const recoveryPrincipal = "(recovery)"

// RecoverRuns resumes, as server runs, every run the Runner lists as
// unfinished, and returns their threads once they have started; Shutdown
// waits for them like for any run. Unlike agent.RecoverRuns, the resumed
// runs go through the server: each capability execution is audited under
// the thread's owner (from the metadata the server stored with the turn),
// the runs are visible (a client can follow or cancel them) and a client
// cannot start a second run on such a thread meanwhile. They are not
// counted against concurrency limits. Call it once, at start-up of the one
// process owning the store, like agent.RecoverRuns.
func (s *Server) RecoverRuns(ctx context.Context) ([]string, error) {
	u, ok := s.cfg.Runner.(Unfinisher)
	if !ok {
		return nil, ErrNoRecovery
	}
	threads, err := u.Unfinished(ctx)
	if err != nil {
		return nil, err
	}
	var started []string
	var errs []error
	for _, thread := range threads {
		c, clientThread := s.ownerOf(ctx, thread)
		fn := func(ctx context.Context) iter.Seq2[agent.Event, error] {
			return s.cfg.Runner.Resume(ctx, thread, agent.Answer{})
		}
		if _, err := s.runs.startRun(c, clientThread, thread, fn, false); err != nil {
			errs = append(errs, fmt.Errorf("server: recover thread %q: %w", thread, err))
			continue
		}
		started = append(started, thread)
	}
	return started, errors.Join(errs...)
}

// ownerOf reads who owns an internal thread from its metadata; a thread
// whose id does not derive from that owner and client id (not created
// through this server) gets the recovery principal and its own id.
func (s *Server) ownerOf(ctx context.Context, thread string) (caller, string) {
	none := caller{Principal: Principal{Name: recoveryPrincipal, Tenant: "default"}}
	st, _, err := s.cfg.Runner.State(ctx, thread)
	if err != nil {
		return none, thread
	}
	md := st.Metadata
	c := caller{Principal: Principal{Name: md[MetaOwner], Tenant: md[MetaTenant]}, User: md[MetaUser]}
	for _, p := range s.keys.principals {
		if p.Name == c.Principal.Name && p.Tenant == c.Principal.Tenant {
			c.Principal = p
		}
	}
	if len(s.keys.principals) == 0 && c.Principal.Name == anonymous.Name && c.Principal.Tenant == anonymous.Tenant {
		c.Principal = anonymous
	}
	id := md[MetaThread]
	if c.Principal.Name == "" || id == "" || internalThreadID(c, id) != thread {
		return none, thread
	}
	return c, id
}
