package server

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/jsonreply"
	"github.com/capgraph/capgraph/server/internal/reqbody"
	"github.com/capgraph/capgraph/server/internal/responses"
)

// PATCH /api/threads/{thread} changes a thread's metadata between turns:
// the page renames a thread by setting its "title". The body is
// {"metadata": {"key": "value", …}}; a key set to "" (or null) is removed,
// keys not named keep their values. One request sets at most 16 keys of at
// most 64 bytes, values of at most 512 bytes; the thread's metadata after
// it meets the limits of POST /api/threads (checkMetadataChange).

type updateThreadRequest struct {
	Metadata json.RawMessage `json:"metadata"`
}

func (s *Server) handleUpdateThread(w http.ResponseWriter, r *http.Request) {
	_, th, ok := s.thread(w, r)
	if !ok {
		return
	}
	var req updateThreadRequest
	if err := reqbody.Decode(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	if responses.IsNull(req.Metadata) {
		s.writeError(w, badRequest("metadata", "required: an object of the keys to change"))
		return
	}
	set, err := responses.DecodeMetadata(req.Metadata)
	if err != nil {
		s.writeError(w, badRequest("metadata", "%v", err))
		return
	}
	for k, v := range set {
		if strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0) {
			s.writeError(w, badRequest("metadata", "key %q: keys and values must not contain NUL", k))
			return
		}
	}
	if err := s.checkMetadataChange(th.Metadata, set); err != nil {
		s.writeError(w, err)
		return
	}
	if _, busy := s.runs.ActiveOn(th.internal); busy {
		s.writeError(w, &apierror.RequestError{Kind: apierror.ErrRunInProgress, Message: "a run is in progress on this thread; change it when the run has ended"})
		return
	}
	stored := make(map[string]string, len(set))
	for k, v := range set {
		stored[metaClientPrefix+k] = v
	}
	if ms := s.features.threads; ms != nil {
		// A thread the store does not have yet (created here, never run)
		// is changed in the index alone.
		if err := ms.SetThreadMetadata(r.Context(), th.internal, stored); err != nil && !errors.Is(err, agent.ErrUnknownThread) {
			s.writeError(w, err)
			return
		}
	}
	// The index carries the client's metadata into the thread's next turn
	// (turnMetadata): it must not bring the old values back.
	th = s.threads.setMetadata(th, set)
	s.fillStatus(r.Context(), &th)
	jsonreply.JSON(w, http.StatusOK, th)
}

// setMetadata applies a metadata change to the index's copy of th, when
// the index has the thread (one created here and not yet in the store, or
// one it remembers), and returns th changed likewise.
func (t *threadIndex) setMetadata(th apiThread, set map[string]string) apiThread {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cur, ok := t.m[th.internal]; ok {
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
