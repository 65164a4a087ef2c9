package agent

import (
	"context"
	"fmt"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// Threads lists the threads in the agent's checkpoint store whose latest
// checkpoint's metadata (the TurnRequest.Metadata of their turns) matches
// filter. A frontend lists a caller's threads with it (filtering by the
// owner it wrote into the metadata), so the list survives a restart.
func (a *Agent) Threads(ctx context.Context, filter checkpoint.ThreadFilter) ([]checkpoint.ThreadInfo, error) {
	infos, err := a.cfg.Store.Threads(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("agent: list threads: %w", err)
	}
	return infos, nil
}
