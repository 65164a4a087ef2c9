package agent

import (
	"context"
	"fmt"
	"slices"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// Threads lists the threads in the agent's checkpoint store whose latest
// checkpoint's metadata (the TurnRequest.Metadata of their turns) matches
// filter. A frontend lists a caller's threads with it (filtering by the
// owner it wrote into the metadata), so the list survives a restart. Only
// the threads of this agent's application are listed (for an unnamed
// application: those recording none).
func (a *Agent) Threads(ctx context.Context, filter checkpoint.ThreadFilter) ([]checkpoint.ThreadInfo, error) {
	if a.cfg.Application != "" {
		filter.Metadata = mergeMeta(filter.Metadata, map[string]string{MetaApplication: a.cfg.Application})
	}
	infos, err := a.cfg.Store.Threads(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("agent: list threads: %w", err)
	}
	if a.cfg.Application == "" {
		infos = slices.DeleteFunc(infos, func(i checkpoint.ThreadInfo) bool { return i.Metadata[MetaApplication] != "" })
	}
	return infos, nil
}
