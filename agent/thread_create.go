package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/state"
)

// CreateThread makes a thread exist in the store before its first turn:
// an initial checkpoint with an empty conversation and metadata, so the
// thread is listed (Threads) and found after a restart. The first Run on
// it keeps the metadata. created is false when the thread exists already
// (a run holding it, here or on another replica, has written its first
// checkpoint); then nothing changes. A thread a run holds before its
// first checkpoint does not exist yet: graph.ErrThreadBusy.
// State reports such a thread as answered with no turn (Turn.Number 0).
// Like every turn's, its metadata names the agent's application.
func (a *Agent) CreateThread(ctx context.Context, thread string, metadata map[string]string) (created bool, err error) {
	if strings.TrimSpace(thread) == "" {
		return false, fmt.Errorf("%w: thread must not be empty", ErrBadRequest)
	}
	ctx, release, err := a.ownThread(ctx, thread)
	if errors.Is(err, graph.ErrThreadBusy) {
		// A run (or a hold) has it: it exists once it has a checkpoint;
		// until then it does not, and saying it does would be a lie.
		if _, gerr := a.cfg.Store.Get(ctx, thread, uuid.Nil); gerr == nil {
			return false, nil
		} else if !errors.Is(gerr, checkpoint.ErrNotFound) {
			return false, fmt.Errorf("agent: read thread %q: %w", thread, gerr)
		}
		return false, err
	}
	if err != nil {
		return false, err
	}
	defer release()
	return a.g.Init(ctx, thread, state.State{Metadata: a.withOwner(mergeMeta(nil, metadata))})
}

// RunStore returns the store's run records (runstore.Store), or nil
// when the store keeps none. A server records every run it acknowledges
// there before answering, so that a crash loses none.
func (a *Agent) RunStore() runstore.Store {
	rs, _ := a.cfg.Store.(runstore.Store)
	return rs
}
