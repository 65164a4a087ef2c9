package server

import (
	"context"
	"errors"
	"maps"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/native"
)

// SetMetadata changes a thread's metadata between turns (PATCH
// /api/threads/{thread}): the change within the limits of POST
// /api/threads (checkMetadataChange), in the store and in the index,
// which carries the client's metadata into the thread's next turn
// (turnMetadata) and must not bring the old values back.
func (n serverNative) SetMetadata(ctx context.Context, th native.Thread, set map[string]string) (native.Thread, error) {
	s := n.s
	if err := s.checkMetadataChange(th.Metadata, set); err != nil {
		return th, err
	}
	if _, busy := s.runs.ActiveOn(th.Internal); busy {
		return th, &apierror.RequestError{Kind: apierror.ErrRunInProgress, Message: "a run is in progress on this thread; change it when the run has ended"}
	}
	stored := make(map[string]string, len(set))
	for k, v := range set {
		stored[metaClientPrefix+k] = v
	}
	if ms := s.features.threads; ms != nil {
		// A thread the store does not have yet (created here, never run)
		// is changed in the index alone.
		if err := ms.SetThreadMetadata(ctx, th.Internal, stored); err != nil && !errors.Is(err, agent.ErrUnknownThread) {
			return th, err
		}
	}
	return s.threads.setMetadata(th, set), nil
}

// setMetadata applies a metadata change to the index's copy of th, when
// the index has the thread (one created here and not yet in the store, or
// one it remembers), and returns th changed likewise.
func (t *threadIndex) setMetadata(th native.Thread, set map[string]string) native.Thread {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cur, ok := t.m[th.Internal]; ok {
		cur.Metadata = changed(cur.Metadata, set)
	}
	th.Metadata = changed(th.Metadata, set)
	return th
}

// changed returns md with set applied: a key set to "" is removed.
func changed(md, set map[string]string) map[string]string {
	out := make(map[string]string, len(md)+len(set))
	for k, v := range md {
		out[k] = v
	}
	for k, v := range set {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// checkMetadataChange refuses a change that would leave a thread's
// metadata over the limits of checkMetadata, so that repeated PATCHes
// cannot grow it without bound. A change that leaves it no larger (a
// removal) is allowed even over the limits, so such a thread can be
// trimmed.
func (s *Server) checkMetadataChange(old, set map[string]string) error {
	merged := maps.Clone(old)
	if merged == nil {
		merged = map[string]string{}
	}
	added := map[string]string{}
	for k, v := range set {
		if v == "" {
			delete(merged, k)
			continue
		}
		merged[k], added[k] = v, v
	}
	if err := s.checkMetadata(added); err != nil {
		return err
	}
	if len(merged) <= len(old) && metadataSize(merged) <= metadataSize(old) {
		return nil
	}
	err := s.checkMetadata(merged)
	if re := (*apierror.RequestError)(nil); errors.As(err, &re) {
		re.Message = "the thread's metadata after this change: " + re.Message
	}
	return err
}

// metadataSize counts the bytes of m's keys and values, as the limit does.
func metadataSize(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}
