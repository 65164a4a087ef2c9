package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
)

// Unfinished lists the threads whose last run stopped between two steps
// without ending: the process crashed or was stopped, or the caller
// canceled. Runs waiting for an approval, finished runs and runs that failed
// (a FATAL failure) are not listed. A run in progress (here or on another
// replica) looks the same in the store and is listed too; RecoverRuns
// tells them apart by the thread's lease.
func (a *Agent) Unfinished(ctx context.Context) ([]string, error) {
	infos, err := a.cfg.Store.Threads(ctx, checkpoint.ThreadFilter{})
	if err != nil {
		return nil, fmt.Errorf("agent: list threads: %w", err)
	}
	var out []string
	for _, info := range infos {
		t, err := a.cfg.Store.Get(ctx, info.ThreadID, info.Latest)
		if errors.Is(err, checkpoint.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return out, fmt.Errorf("agent: read thread %q: %w", info.ThreadID, err)
		}
		if graph.StatusOf(t) == graph.StatusCanceled {
			out = append(out, info.ThreadID)
		}
	}
	return out, nil
}

// RecoverRuns resumes every unfinished run (see Unfinished), up to
// MaxConcurrency at once, and returns when they have all stopped, with the
// threads it resumed. Call it when a process starts, before serving, or
// periodically on every replica of a shared store: each run is resumed
// under the thread's lease (see LeaseConfig), so a thread whose lease
// another agent holds (a run in progress there, or a replica that died less
// than a lease TTL ago) is skipped, and a thread another replica finished
// between the listing and the lease is left alone. With a store that is no
// checkpoint.Leaser across processes (SQLite opened by several processes),
// leases exclude only agents of this process: there, call it only in the
// process owning the store. On a store that is a checkpoint.Claimer
// (PostgreSQL) the store itself picks the resumable threads nobody holds
// and leases them in one statement (FOR UPDATE SKIP LOCKED), one per free
// worker, instead of every replica reading every thread. Each run continues
// from its last checkpoint: completed steps do not run again, a step that
// was in flight runs again (at least once; its idempotency key is the same),
// a retry waits only what is left of its delay, and the turn's wall-clock
// limit counts the time the process was down. A run ending in a FATAL
// failure is not an error of RecoverRuns; other failures are joined.
func (a *Agent) RecoverRuns(ctx context.Context) ([]string, error) {
	next, err := a.recoverySource(ctx)
	if err != nil {
		return nil, err
	}
	limit := a.cfg.MaxConcurrency
	if limit <= 0 {
		limit = 8
	}
	var (
		mu      sync.Mutex
		errs    []error
		resumed []string
		wg      sync.WaitGroup
		sem     = make(chan struct{}, limit)
	)
	for {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return resumed, errors.Join(append(errs, ctx.Err())...)
		}
		job, ok, err := next()
		if err != nil || !ok {
			<-sem
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ran, runErr := job.run(ctx)
			mu.Lock()
			defer mu.Unlock()
			if ran {
				resumed = append(resumed, job.thread)
			}
			var fe *FatalError
			if runErr != nil && !errors.As(runErr, &fe) {
				errs = append(errs, fmt.Errorf("agent: recover thread %q: %w", job.thread, runErr))
			}
		}()
	}
	wg.Wait()
	slices.Sort(resumed)
	return resumed, errors.Join(errs...)
}

// recoveryJob is one thread RecoverRuns may resume.
type recoveryJob struct {
	thread string
	run    func(ctx context.Context) (bool, error)
}

// recoverySource returns the function handing out RecoverRuns' work. With a
// store that is a checkpoint.Claimer, the store picks resumable threads and
// leases them in one statement, one at a time as workers free up (so no
// lease waits unrenewed for a slot), never the same thread twice in one
// call. Otherwise the unfinished threads are listed once and each is
// claimed when its turn comes.
func (a *Agent) recoverySource(ctx context.Context) (func() (recoveryJob, bool, error), error) {
	c, isClaimer := a.cfg.Store.(checkpoint.Claimer)
	lr, isLeaser := a.cfg.Store.(checkpoint.Leaser)
	if isClaimer && isLeaser {
		var handled []string
		return func() (recoveryJob, bool, error) {
			ls, err := c.ClaimResumable(ctx, a.cfg.Leases.Owner, a.cfg.Leases.TTL, checkpoint.ClaimOptions{Limit: 1, Skip: handled})
			if err != nil || len(ls) == 0 {
				if err != nil {
					err = fmt.Errorf("agent: claim unfinished runs: %w", err)
				}
				return recoveryJob{}, false, err
			}
			l := ls[0]
			handled = append(handled, l.Thread)
			return recoveryJob{thread: l.Thread, run: func(ctx context.Context) (bool, error) {
				if !a.lock(l.Thread) {
					// A Run or Resume of this agent is starting on it; it
					// takes over the lease (same owner) and releases it.
					return false, nil
				}
				ctx, release := a.hold(ctx, lr, true, l)
				defer release()
				return a.recoverHeld(ctx, l.Thread)
			}}, true, nil
		}, nil
	}
	threads, err := a.Unfinished(ctx)
	if err != nil {
		return nil, err
	}
	return func() (recoveryJob, bool, error) {
		if len(threads) == 0 {
			return recoveryJob{}, false, nil
		}
		th := threads[0]
		threads = threads[1:]
		return recoveryJob{thread: th, run: func(ctx context.Context) (bool, error) { return a.recoverOne(ctx, th) }}, true, nil
	}, nil
}

// recoverOne resumes thread if it can claim it and its run is still
// unfinished once claimed; it reports whether it ran.
func (a *Agent) recoverOne(ctx context.Context, thread string) (bool, error) {
	ctx, release, err := a.claim(ctx, thread)
	if errors.Is(err, graph.ErrThreadBusy) {
		return false, nil // another agent runs it, or will once its lease expires
	}
	if err != nil {
		return false, err
	}
	defer release()
	return a.recoverHeld(ctx, thread)
}

// recoverHeld resumes a claimed thread whose run is still unfinished.
func (a *Agent) recoverHeld(ctx context.Context, thread string) (bool, error) {
	// Read again under the lease: listed unfinished is not proof; another
	// replica may have resumed and finished it since.
	t, err := a.cfg.Store.Get(ctx, thread, uuid.Nil)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read thread: %w", err)
	}
	if graph.StatusOf(t) != graph.StatusCanceled {
		return false, nil
	}
	var runErr error
	p := &pump{a: a, thread: thread, yield: func(_ Event, err error) bool {
		if err != nil {
			runErr = err
		}
		return true
	}}
	p.yield = leaseYield(ctx, p.yield)
	a.resume(ctx, p, thread, Answer{})
	return true, runErr
}
