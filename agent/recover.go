package agent

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
)

// Unfinished lists the threads whose last run stopped between two steps
// without ending: the process crashed or was stopped, or the caller
// canceled. Runs waiting for an approval, finished runs and runs that failed
// (a FATAL failure) are not listed. A run in progress (here or on another
// replica) looks the same in the store and is listed too; RecoverRuns
// tells them apart by the thread's lease. Only this agent's runs are
// listed: threads of another application, and runs another version of the
// graph started, are not (ownership.go).
func (a *Agent) Unfinished(ctx context.Context) ([]string, error) {
	infos, err := a.cfg.Store.Threads(ctx, checkpoint.ThreadFilter{Metadata: a.ownedFilter()})
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
		if graph.StatusOf(t) == graph.StatusCanceled && a.checkOwner(info.ThreadID, t.Checkpoint.Metadata, true) == nil {
			out = append(out, info.ThreadID)
		}
	}
	return out, nil
}

// RecoverRuns resumes every unfinished run of this agent (see Unfinished),
// up to MaxConcurrency at once, each under its thread's lease, and returns
// the threads it resumed once they have all stopped. Call it when a process
// starts, before serving, or periodically on every replica of a shared
// store. A run ending in a FATAL failure is not an error of RecoverRuns;
// other failures are joined. What it resumes, skips and repeats:
// docs/persistence.md, "Agent runs after a crash".
func (a *Agent) RecoverRuns(ctx context.Context) ([]string, error) {
	limit := a.RecoveryLimit()
	var (
		mu      sync.Mutex
		errs    []error
		resumed []string
		wg      sync.WaitGroup
		sem     = make(chan struct{}, limit)
	)
	// A slot is taken before each claim, so no claimed lease waits for a
	// free worker.
	next, stop := iter.Pull2(a.ClaimUnfinished(ctx))
	defer stop()
	for {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return resumed, errors.Join(append(errs, ctx.Err())...)
		}
		cr, err, ok := next()
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
			ran, runErr := false, error(nil)
			for _, err := range cr.Resume(ctx) {
				ran = true
				if err != nil {
					runErr = err
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if ran {
				resumed = append(resumed, cr.Thread)
			}
			var fe *FatalError
			if runErr != nil && !errors.As(runErr, &fe) {
				errs = append(errs, fmt.Errorf("agent: recover thread %q: %w", cr.Thread, runErr))
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(resumed)
	return resumed, errors.Join(errs...)
}

// RecoveryLimit is how many recovered runs RecoverRuns resumes at once:
// Config.MaxConcurrency, default 8. A server recovering through this agent
// uses it as its bound when it has none of its own.
func (a *Agent) RecoveryLimit() int {
	if a.cfg.MaxConcurrency > 0 {
		return a.cfg.MaxConcurrency
	}
	return 8
}
