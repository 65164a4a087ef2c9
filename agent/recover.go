package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
)

// Unfinished lists the threads whose last run stopped between two steps
// without ending: the process crashed or was stopped, or the caller
// canceled. Runs waiting for an approval, finished runs and runs that failed
// (a FATAL failure) are not listed.
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
// threads it resumed. Call it when a process starts, before serving: a run
// in progress looks like a cut one in the store, so with several processes
// on one store it would also resume runs another process is executing. Each
// run continues
// from its last checkpoint: completed steps do not run again, a step that
// was in flight runs again (at least once; its idempotency key is the same),
// a retry waits only what is left of its delay, and the turn's wall-clock
// limit counts the time the process was down. A run ending in a FATAL
// failure is not an error of RecoverRuns; other failures are joined.
func (a *Agent) RecoverRuns(ctx context.Context) ([]string, error) {
	threads, err := a.Unfinished(ctx)
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
	for _, th := range threads {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return resumed, errors.Join(append(errs, ctx.Err())...)
		}
		mu.Lock()
		resumed = append(resumed, th)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var runErr error
			for _, err := range a.Resume(ctx, th, Answer{}) {
				if err != nil {
					runErr = err
				}
			}
			var fe *FatalError
			if runErr != nil && !errors.As(runErr, &fe) {
				mu.Lock()
				errs = append(errs, fmt.Errorf("agent: recover thread %q: %w", th, runErr))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return resumed, errors.Join(errs...)
}
