package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/state"
)

// DefaultMaxArtifactBytes is the largest artifact a step may keep, JSON
// encoded (Config.MaxArtifactBytes): 1 MiB, about 40,000 samples of a
// time series. A turn's artifacts are in each of its later checkpoints.
const DefaultMaxArtifactBytes = 1 << 20

// ArtifactID is the id the agent gives the n-th artifact (from 0) of a
// plan step: "t<turn>.p<plan>.s<step>.<n>". It is the same when the step
// runs again after a crash, so a frontend replaces what it showed.
func ArtifactID(turn, plan, step, n int) string {
	return fmt.Sprintf("t%d.p%d.s%d.%d", turn, plan, step, n)
}

// stepArtifacts checks a step's artifacts and prepares them for the state:
// ids and origin set, each one over the size limit replaced by a note
// saying so. An invalid artifact is the capability's bug and fails the
// step (CRITICAL, kind format), as a context value without a type does.
//
// Over the limit is not a failure: the step's context data is valid and
// the answer can be written; only the picture of it is too big. Failing
// the step would turn a good read into an error report because the user
// asked for a longer range. The note travels in place of the artifact, so
// every frontend shows that something was left out and why.
func (a *Agent) stepArtifacts(out capabilities.Output, capability string, turn, plan, step int) ([]capabilities.Artifact, error) {
	if len(out.Artifacts) == 0 {
		return nil, nil
	}
	arts := make([]capabilities.Artifact, 0, len(out.Artifacts))
	for i, art := range out.Artifacts {
		art.ID, art.Turn, art.Step, art.Capability, art.Omitted = ArtifactID(turn, plan, step, i), turn, step, capability, ""
		if err := art.Validate(); err != nil {
			return nil, capabilities.NewError(capabilities.Critical, capabilities.KindFormat,
				fmt.Sprintf("%s returned an invalid artifact (%d)", capability, i), err)
		}
		b, err := json.Marshal(art)
		if err != nil {
			return nil, capabilities.NewError(capabilities.Critical, capabilities.KindFormat,
				fmt.Sprintf("%s returned an artifact (%d) that cannot be stored", capability, i), err)
		}
		if limit := a.cfg.MaxArtifactBytes; len(b) > limit {
			art = capabilities.Artifact{ID: art.ID, Kind: art.Kind, Title: art.Title, Turn: turn, Step: step, Capability: capability,
				Omitted: fmt.Sprintf("This %s (%s) was left out: it is larger than the limit of %s per artifact (limits.max_artifact_bytes).",
					art.Kind, byteSize(len(b)), byteSize(limit))}
		}
		arts = append(arts, art)
	}
	return arts, nil
}

// byteSize writes n bytes for people.
func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// ErrUnknownTurn: the thread has no such turn, or its checkpoints were pruned.
var ErrUnknownTurn = errors.New("agent: no such turn")

// Artifacts returns the artifacts of one turn of the thread, in plan and
// step order, and the turn's number; turn 0 means the latest turn. An
// earlier turn is read from the newest checkpoint the store keeps of it
// (ErrUnknownTurn when there is none: a store that keeps only the latest
// checkpoint, or a pruned history).
func (a *Agent) Artifacts(ctx context.Context, thread string, turn int) ([]capabilities.Artifact, int, error) {
	s, t, err := a.g.State(ctx, thread)
	if err != nil {
		return nil, 0, a.threadErr(thread, err)
	}
	if err := a.checkOwner(thread, t.Checkpoint.Metadata, false); err != nil {
		return nil, 0, err
	}
	switch {
	case turn == 0 || turn == s.Turn.Number:
		return turnArtifacts(s.Turn.Results), s.Turn.Number, nil
	case turn < 0 || turn > s.Turn.Number:
		return nil, 0, fmt.Errorf("%w: thread %q has %d turns, not %d", ErrUnknownTurn, thread, s.Turn.Number, turn)
	}
	// Newest first: the first checkpoint of the turn met is its latest.
	before := uuid.Nil
	for {
		cps, err := a.cfg.Store.List(ctx, thread, checkpoint.ListOptions{Before: before, Limit: 32})
		if err != nil {
			return nil, 0, fmt.Errorf("agent: read thread %q: %w", thread, err)
		}
		for _, cp := range cps {
			var head struct {
				Turn struct {
					Number  int                `json:"number"`
					Results []state.StepResult `json:"results"`
				} `json:"turn"`
			}
			if err := json.Unmarshal(cp.State, &head); err != nil {
				return nil, 0, fmt.Errorf("agent: read checkpoint %s of thread %q: %w", cp.ID, thread, err)
			}
			switch {
			case head.Turn.Number == turn:
				return turnArtifacts(head.Turn.Results), turn, nil
			case head.Turn.Number < turn:
				return nil, 0, fmt.Errorf("%w: turn %d of thread %q is no longer stored", ErrUnknownTurn, turn, thread)
			}
		}
		if len(cps) < 32 {
			return nil, 0, fmt.Errorf("%w: turn %d of thread %q is no longer stored", ErrUnknownTurn, turn, thread)
		}
		before = cps[len(cps)-1].ID
	}
}

// turnArtifacts collects the artifacts of a turn's results, by plan, then
// step, each step's in the order returned.
func turnArtifacts(results []state.StepResult) []capabilities.Artifact {
	rs := slices.Clone(results)
	slices.SortStableFunc(rs, func(x, y state.StepResult) int {
		if x.Plan != y.Plan {
			return cmp.Compare(x.Plan, y.Plan)
		}
		return cmp.Compare(x.StepIndex, y.StepIndex)
	})
	var out []capabilities.Artifact
	for _, r := range rs {
		out = append(out, r.Artifacts...)
	}
	return out
}
