package agent

import (
	"context"
	"fmt"
	"slices"

	"github.com/capgraph/capgraph/state"
)

// reservedMeta are the metadata keys that say whose a thread is and what
// it may do; SetThreadMetadata leaves them to the turns that write them.
var reservedMeta = []string{MetaOwner, MetaTenant, MetaUser, MetaApplication, MetaGraphVersion, MetaAllowedCapabilities,
	MetaForkedFrom, MetaForkedAt, MetaForkInput, MetaRehearsal}

// SetThreadMetadata changes a thread's metadata between turns (a frontend
// renames a thread): each key of set is stored, a key set to "" is removed,
// and later turns keep them like the metadata of their requests. Nothing
// else changes: the conversation, a pending approval and an interrupted or
// canceled run stay as they were (graph.UpdateState). The keys that say
// whose the thread is and what it may do (owner, tenant, user, application,
// graph_version, allowed_capabilities) cannot be set: ErrBadRequest. The
// thread is owned for the write like a run's (graph.ErrThreadBusy while a
// run holds it, here or on another replica); an unknown thread is
// ErrUnknownThread.
func (a *Agent) SetThreadMetadata(ctx context.Context, thread string, set map[string]string) error {
	for k := range set {
		if slices.Contains(reservedMeta, k) {
			return fmt.Errorf("%w: metadata key %q is the agent's and cannot be set", ErrBadRequest, k)
		}
	}
	if len(set) == 0 {
		return nil
	}
	rctx, release, err := a.ownThread(ctx, thread)
	if err != nil {
		return err
	}
	defer release()
	err = a.g.UpdateState(rctx, thread, func(s state.State) (state.State, error) {
		if err := a.checkOwner(thread, s.Metadata, false); err != nil {
			return s, err
		}
		md := mergeMeta(s.Metadata, nil)
		if md == nil {
			md = map[string]string{}
		}
		for k, v := range set {
			if v == "" {
				delete(md, k)
			} else {
				md[k] = v
			}
		}
		s.Metadata = md
		return s, nil
	})
	return a.threadErr(thread, err)
}
