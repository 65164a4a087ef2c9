package server

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/capgraph/capgraph/agent"
)

// RunClaimer claims the runs cut between two steps (a crash, a shutdown)
// under the thread's lease, one at a time. *agent.Agent implements it.
type RunClaimer interface {
	ClaimUnfinished(ctx context.Context) iter.Seq2[*agent.ClaimedRun, error]
}

// ErrNoRecovery: the Runner cannot claim unfinished runs.
var ErrNoRecovery = errors.New("server: the runner does not claim unfinished runs (no ClaimUnfinished method)")

// recoveryPrincipal owns recovered runs of threads the server did not
// create (no owner in their metadata), so their audit records say so.
const recoveryPrincipal = "(recovery)"

// RecoveryLimiter is a RunClaimer that says how many recovered runs may
// go on at once. *agent.Agent implements it (its MaxConcurrency).
type RecoveryLimiter interface {
	RecoveryLimit() int
}

// defaultRecoveryLimit bounds recovery when neither Config.MaxTotalRuns nor
// the runner gives a bound.
const defaultRecoveryLimit = 8

// recoveryLimit is the number of runs (of any kind) this server may be
// running for RecoverRuns to claim another: Config.MaxTotalRuns when set,
// else the runner's RecoveryLimit, else defaultRecoveryLimit.
func (s *Server) recoveryLimit() int {
	if s.cfg.MaxTotalRuns > 0 {
		return s.cfg.MaxTotalRuns
	}
	if rl, ok := s.cfg.Runner.(RecoveryLimiter); ok && rl.RecoveryLimit() > 0 {
		return rl.RecoveryLimit()
	}
	return defaultRecoveryLimit
}

// running counts the runs in progress on this server.
func (m *runManager) running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byThread)
}

// RecoverRuns claims the unfinished runs nobody else holds
// (agent.ClaimUnfinished), one at a time while the server has room
// (Config.MaxTotalRuns, else the runner's RecoveryLimit, else 8), and starts
// each as a server run of its owner: audited, followable, waited for by
// Shutdown. It returns their threads once started. Replicas sharing a store
// may all call it, at start-up and periodically; how it shares the work:
// docs/frontends.md, "srv.RecoverRuns".
func (s *Server) RecoverRuns(ctx context.Context) ([]string, error) {
	rc, ok := s.cfg.Runner.(RunClaimer)
	if !ok {
		return nil, ErrNoRecovery
	}
	limit := s.recoveryLimit()
	var started []string
	var errs []error
	// Pulled one claim at a time: a claim not asked for is never made.
	next, stop := iter.Pull2(rc.ClaimUnfinished(ctx))
	defer stop()
	for s.runs.running() < limit {
		cr, err, more := next()
		if err != nil {
			errs = append(errs, err)
			break
		}
		if !more {
			break
		}
		c, clientThread := s.ownerOf(ctx, cr.Thread)
		fn := func(ctx context.Context) iter.Seq2[agent.Event, error] { return cr.Resume(ctx) }
		if _, err := s.runs.startRun(c, clientThread, cr.Thread, fn, false); err != nil {
			cr.Release()
			var re *RequestError
			if errors.As(err, &re) && errors.Is(re.Kind, ErrRunInProgress) {
				continue // a client's run of this server got there first
			}
			errs = append(errs, fmt.Errorf("server: recover thread %q: %w", cr.Thread, err))
			break // shutting down
		}
		started = append(started, cr.Thread)
	}
	return started, errors.Join(errs...)
}

// recoverLoop calls RecoverRuns every Config.RecoverEvery until ctx is
// done, logging what it resumed and what failed.
func (s *Server) recoverLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.RecoverEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		threads, err := s.RecoverRuns(ctx)
		if len(threads) > 0 {
			s.cfg.Logger.Info("took over cut runs", "threads", threads)
		}
		if err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("recovering cut runs", "error", err)
		}
	}
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
