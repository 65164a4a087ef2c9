package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/state"
)

// CreateThread makes a thread exist in the store before its first turn:
// an initial checkpoint with an empty conversation and metadata, so the
// thread is listed (Threads) and found after a restart. The first Run on
// it keeps the metadata. created is false when the thread exists already
// (or a run holds it, here or on another replica); then nothing changes.
// State reports such a thread as answered with no turn (Turn.Number 0).
// Like every turn's, its metadata names the agent's application.
func (a *Agent) CreateThread(ctx context.Context, thread string, metadata map[string]string) (created bool, err error) {
	if strings.TrimSpace(thread) == "" {
		return false, fmt.Errorf("%w: thread must not be empty", ErrBadRequest)
	}
	ctx, release, err := a.ownThread(ctx, thread)
	if errors.Is(err, graph.ErrThreadBusy) {
		return false, nil // a run holds it: it exists
	}
	if err != nil {
		return false, err
	}
	defer release()
	return a.g.Init(ctx, thread, state.State{Metadata: a.withOwner(mergeMeta(nil, metadata))})
}

// RunStore returns the store's run records (checkpoint.RunStore), or nil
// when the store keeps none. A server records every run it acknowledges
// there before answering, so that a crash loses none.
func (a *Agent) RunStore() checkpoint.RunStore {
	rs, _ := a.cfg.Store.(checkpoint.RunStore)
	return rs
}
