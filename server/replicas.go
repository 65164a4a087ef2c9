package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/capgraph/capgraph/server/internal/runs"
	"sync"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/apierror"
	lifecycle "github.com/capgraph/capgraph/server/internal/run"
)

// Replicas: when the store is a runs queue shared by processes
// (runstore.Queue, RunEvents and RunSignals — the PostgreSQL store),
// every replica is a worker of one queue:
//
//   - a request's run is recorded running under this replica and a lease,
//     and starts here; the lease is renewed every TTL/3 while it runs, and
//     a renewal refused (another replica took the run) or a cancel
//     request stops it;
//   - each replica claims ready runs — a run whose owner died (its lease
//     expired), a run given back at a shutdown or waiting for a not-before
//     time — when it has room, woken by a signal or every TTL/3, and
//     resumes them from their last checkpoint;
//   - a run's events go to the store as it makes them, so a replica that
//     does not run it streams it (a mirror run fed from the store, woken
//     by signals), with the same event numbers across the attempts: a
//     client reconnects to any replica with Last-Event-ID;
//   - a cancel reaches the run's owner through the store and a signal.
//
// With a store for one process (SQLite, memory) none of this runs: the
// runs start in this process, and RecoverRuns finishes what a crash cut.
// docs/deployment.md says how to run replicas.
type cluster struct {
	q   runstore.Queue
	ev  runstore.Events
	sig runstore.Signals
	ttl time.Duration
	// wake is signaled when a run is queued.
	wake chan struct{}

	mu      sync.Mutex
	watches map[string]map[chan struct{}]struct{} // run id → mirrors waiting for its events
}

func newCluster(s *Server) *cluster {
	q, ok1 := s.records.(runstore.Queue)
	ev, ok2 := s.records.(runstore.Events)
	sig, ok3 := s.records.(runstore.Signals)
	if !ok1 || !ok2 || !ok3 {
		return nil
	}
	ttl := agent.DefaultLeaseTTL
	if lt := s.features.recovery; lt != nil && lt.LeaseTTL() > 0 {
		ttl = lt.LeaseTTL()
	}
	return &cluster{q: q, ev: ev, sig: sig, ttl: ttl, wake: make(chan struct{}, 1), watches: map[string]map[chan struct{}]struct{}{}}
}

// watch returns a channel signaled when the run has news, and its end.
func (cl *cluster) watch(id string) (chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	cl.mu.Lock()
	if cl.watches[id] == nil {
		cl.watches[id] = map[chan struct{}]struct{}{}
	}
	cl.watches[id][ch] = struct{}{}
	cl.mu.Unlock()
	return ch, func() {
		cl.mu.Lock()
		delete(cl.watches[id], ch)
		if len(cl.watches[id]) == 0 {
			delete(cl.watches, id)
		}
		cl.mu.Unlock()
	}
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// signal sends a wake-up, logging a failure (a lost signal delays only).
func (s *Server) signal(kind runstore.SignalKind, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), recordWriteTimeout)
	defer cancel()
	if err := s.cluster.sig.Signal(ctx, runstore.Signal{Kind: kind, Run: id}); err != nil {
		s.cfg.Logger.Warn("signal to replicas", "kind", kind, "run", id, "error", err)
	}
}

// listenLoop dispatches the signals of every replica until ctx ends,
// listening again when the connection is lost.
func (s *Server) listenLoop(ctx context.Context) {
	cl := s.cluster
	for ctx.Err() == nil {
		sigs, err := cl.sig.ListenRuns(ctx)
		if err != nil {
			s.cfg.Logger.Warn("listening to replicas", "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		// Whatever was said while nobody listened: look again.
		poke(cl.wake)
		cl.mu.Lock()
		for _, ws := range cl.watches {
			for ch := range ws {
				poke(ch)
			}
		}
		cl.mu.Unlock()
		for sig := range sigs {
			switch sig.Kind {
			case runstore.SignalQueued:
				poke(cl.wake)
			case runstore.SignalCancel:
				if r, ok := s.runs.ByID(sig.Run); ok && !r.Following() {
					r.Cancel()
				}
				// A queued (parked) run is canceled in the store: its
				// followers read its end.
				cl.mu.Lock()
				for ch := range cl.watches[sig.Run] {
					poke(ch)
				}
				cl.mu.Unlock()
			case runstore.SignalFollowed:
				if r, ok := s.runs.ByID(sig.Run); ok && !r.Following() {
					r.KeepForRemote()
				}
			case runstore.SignalEvents:
				cl.mu.Lock()
				for ch := range cl.watches[sig.Run] {
					poke(ch)
				}
				cl.mu.Unlock()
			}
		}
	}
}

// claimLoop claims ready runs while this replica has room: when woken,
// and every TTL/3 (a dead replica's leases expire without a signal).
func (s *Server) claimLoop(ctx context.Context) {
	cl := s.cluster
	t := time.NewTicker(max(cl.ttl/3, 10*time.Millisecond))
	defer t.Stop()
	for {
		threads, err := s.RecoverRuns(ctx)
		if len(threads) > 0 {
			s.cfg.Logger.Info("took over cut runs", "threads", threads)
		}
		if err != nil && ctx.Err() == nil && !errors.Is(err, ErrNoRecovery) {
			s.cfg.Logger.Warn("claiming runs", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-cl.wake:
		case <-s.runs.RoomSignal():
		}
	}
}

// claimReady claims and starts ready runs while room() allows.
func (s *Server) claimReady(ctx context.Context, room func() bool) ([]string, error) {
	var (
		started []string
		errs    []error
	)
	for room() {
		rec, ok, err := s.cluster.q.ClaimRun(ctx, s.cfg.Instance, "", s.cluster.ttl)
		if err != nil {
			return started, errors.Join(append(errs, err)...)
		}
		if !ok {
			break
		}
		ok, err = s.takeOver(ctx, rec)
		if err != nil {
			errs = append(errs, err)
			var re *apierror.RequestError
			if errors.As(err, &re) && errors.Is(re.Kind, apierror.ErrShuttingDown) {
				break
			}
			continue
		}
		if ok {
			started = append(started, rec.Thread)
		}
	}
	return started, errors.Join(errs...)
}

// holdLease renews the lease of r, a run this replica owns in the queue,
// every TTL/3 until it ends; a refused renewal (the run was taken over) or
// a cancel request stops it.
func (s *Server) holdLease(r *run) {
	cl := s.cluster
	t := time.NewTicker(max(cl.ttl/3, 10*time.Millisecond))
	defer t.Stop()
	renew := func() bool {
		ctx, cancel := context.WithTimeout(r.Context(), cl.ttl/3)
		defer cancel()
		canceled, err := cl.q.RenewRun(ctx, r.ID, s.cfg.Instance, cl.ttl)
		select {
		case <-r.Consumed():
			return false // ended meanwhile: its record is not running any more
		default:
		}
		switch {
		case errors.Is(err, runstore.ErrConflict):
			s.cfg.Logger.Warn("run lease lost: another replica took the run; stopping it here", "run", r.ID)
			_ = s.runs.Fire(r.Run, lifecycle.LoseLease) // unless it ended meanwhile
			r.Cancel()
			return false
		case err != nil:
			if r.Context().Err() == nil {
				s.cfg.Logger.Warn("renewing a run lease", "run", r.ID, "error", err)
			}
		case canceled:
			r.Cancel()
		}
		return true
	}
	if !renew() {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-r.Consumed():
			return
		case <-t.C:
			if !renew() {
				return
			}
		}
	}
}

// publisher writes a run's events to the store in batches, one writer at
// a time, and signals the replicas that follow it.
type publisher struct {
	s    *Server
	r    *run
	mu   sync.Mutex
	buf  []runstore.Event
	kick chan struct{}
	done chan struct{}
}

func (s *Server) newPublisher(r *run) *publisher {
	p := &publisher{s: s, r: r, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go p.loop()
	return p
}

func (p *publisher) add(ev agent.Event) {
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.buf = append(p.buf, runstore.Event{Seq: ev.Seq, Data: b})
	p.mu.Unlock()
	poke(p.kick)
}

func (p *publisher) loop() {
	defer close(p.done)
	for {
		_, more := <-p.kick
		p.flush()
		if !more {
			return
		}
	}
}

func (p *publisher) flush() {
	p.mu.Lock()
	batch := p.buf
	p.buf = nil
	p.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), recordWriteTimeout)
	defer cancel()
	if err := p.s.cluster.ev.AppendRunEvents(ctx, p.r.ID, batch); err != nil {
		p.s.cfg.Logger.Warn("storing run events", "run", p.r.ID, "error", err)
		return
	}
	p.s.signal(runstore.SignalEvents, p.r.ID)
}

// close writes what is left and returns when it is stored.
func (p *publisher) close() {
	close(p.kick)
	<-p.done
	p.flush()
}

// lastEventSeq is the number of the last stored event of a run (0 none):
// a run resumed here goes on numbering after it.
func (s *Server) lastEventSeq(ctx context.Context, id string) int {
	evs, err := s.cluster.ev.ListRunEvents(ctx, id, 0)
	if err != nil || len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].Seq
}

// mirror returns a run of this process that follows a run another
// replica runs (or ran), fed from the store; nil when there is nothing to
// follow (no cluster, or an ended run without stored events).
func (s *Server) mirror(ctx context.Context, c caller, rec runstore.Record) *run {
	if s.cluster == nil {
		return nil
	}
	if rec.Status.Terminal() {
		if evs, err := s.cluster.ev.ListRunEvents(ctx, rec.ID, 0); err != nil || len(evs) == 0 {
			return nil
		}
	}
	sp := runs.Spec{ID: rec.ID, Thread: rec.Thread, ClientThread: rec.Labels[labelThread], Started: rec.Created, OwnerKey: ownerKey(c),
		Log: []any{"principal", c.Principal.Name, "tenant", c.Principal.Tenant}}
	r, fresh := s.runs.Mirror(sp, func(core *runs.Run[*run]) *run { return &run{Run: core, Owner: c} })
	if fresh {
		s.startTail(r)
	}
	return r
}

// joinable returns the run a repeated request joins: this process's
// run, else, while it goes on at another replica, a mirror of it — whose
// owner is told it has a follower here, so that it does not stop it when
// its own client has gone (an SDK's retry through the load balancer). nil
// when the run has ended.
func (s *Server) joinable(ctx context.Context, c caller, rec runstore.Record) *run {
	if ru, ok := s.runs.ByID(rec.ID); ok && !ru.Info().Finished {
		if ru.Following() {
			s.signal(runstore.SignalFollowed, rec.ID)
		}
		return ru
	}
	if rec.Status.Terminal() {
		return nil
	}
	ru := s.mirror(ctx, c, rec)
	if ru == nil {
		return nil
	}
	s.signal(runstore.SignalFollowed, rec.ID)
	return ru
}

// startTail follows r, a run of another replica (or one this process
// gave back to the queue), in the store until it ends, in the background.
func (s *Server) startTail(r *run) {
	if !s.background.Go(func(context.Context) { s.tail(r) }) {
		s.runs.FinishMirror(r.Run, "", &apierror.RequestError{Kind: apierror.ErrShuttingDown, Message: "the server is shutting down"}, runs.EndedFollowing)
		r.Cancel()
	}
}

// tail feeds a mirror from the store until the run ends.
func (s *Server) tail(r *run) {
	cl := s.cluster
	ch, unwatch := cl.watch(r.ID)
	defer unwatch()
	defer r.Cancel()
	defer s.runs.EvictAfterEnd() // each way out finishes the mirror first
	poll := time.NewTicker(max(cl.ttl/3, 10*time.Millisecond))
	defer poll.Stop()
	for {
		// The record first: when it has ended, every event is stored.
		rec, err := s.records.GetRun(r.Context(), r.ID)
		if err != nil {
			s.runs.FinishMirror(r.Run, "", errors.New("the run is no longer recorded"), runs.EndedFollowing)
			return
		}
		after := r.LastSeq()
		if evs, err := cl.ev.ListRunEvents(r.Context(), r.ID, after); err == nil {
			for _, e := range evs {
				var ev agent.Event
				if json.Unmarshal(e.Data, &ev) == nil {
					ev.Seq = e.Seq
					r.AppendAt(ev)
				}
			}
		} else if r.Context().Err() != nil {
			s.runs.FinishMirror(r.Run, "", r.Context().Err(), runs.EndedFollowing)
			return
		}
		if rec.Status.Terminal() {
			var runErr error
			if rec.Status == runstore.Failed {
				runErr = errors.New(rec.Error)
			}
			s.runs.FinishMirror(r.Run, recordStatus(rec.Status), runErr, runs.EndedInStore)
			return
		}
		select {
		case <-ch:
		case <-poll.C:
		case <-r.Context().Done():
			s.runs.FinishMirror(r.Run, "", r.Context().Err(), runs.EndedFollowing)
			return
		}
	}
}

// cancelAnywhere stops a run wherever it runs: here at once, elsewhere
// through the store.
func (s *Server) cancelAnywhere(ctx context.Context, r *run) error {
	if !r.Following() {
		r.Cancel()
		return nil
	}
	return s.cluster.q.RequestCancel(ctx, r.ID)
}

// clusterLimit refuses a client's run when its principal runs as many as
// it may across the replicas (the running records with live leases); the
// per-process count (runs.Manager.Reserve) stays for the runs not yet
// recorded. Two replicas counting at the same moment may each admit one.
func (s *Server) clusterLimit(ctx context.Context, sp runSpec) error {
	if s.cluster == nil || sp.origin.Recovered() {
		return nil
	}
	limit := sp.c.Principal.MaxConcurrentRuns
	if limit == 0 {
		limit = s.cfg.MaxConcurrentRuns
	}
	if limit <= 0 {
		return nil
	}
	n, err := s.cluster.q.CountRunning(ctx, map[string]string{labelOwner: sp.c.Principal.Name, labelTenant: sp.c.Principal.Tenant})
	if err != nil {
		return fmt.Errorf("count the running runs: %w", err)
	}
	if n >= limit {
		return &apierror.RequestError{Kind: apierror.ErrTooManyRuns, Message: "too many concurrent runs for this API key; try again later"}
	}
	return nil
}
