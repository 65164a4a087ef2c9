package server

import (
	"context"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/approvaltoken"
	"github.com/capgraph/capgraph/server/internal/transcripts"
)

// A chat request without a chat id names its conversation only by its
// messages, so their digest finds the thread (docs/frontends.md, "Which thread?").

// metaTranscript is the metadata key of a Chat Completions thread's
// transcript digest.
const metaTranscript = "transcript"

// transcriptDigest is the digest of msgs scoped to c (transcripts.Digest).
func transcriptDigest(c caller, msgs []transcripts.Msg) string {
	return transcripts.Digest(ownerKey(c), msgs)
}

// continuedThread returns the client id of c's thread that msgs (a chat
// request, its last message the new user message) continues.
func (s *Server) continuedThread(ctx context.Context, c caller, msgs []transcripts.Msg) (string, bool, error) {
	hist := msgs[:len(msgs)-1]
	if !transcripts.HasAssistant(hist) {
		return "", false, nil
	}
	if ct, ok := s.transcripts.Get(transcriptDigest(c, hist)); ok {
		return ct, true, nil
	}
	prefix := transcriptDigest(c, transcripts.WithoutTrailingReply(hist))
	if ct, ok := s.transcripts.Get(prefix); ok {
		return ct, true, nil
	}
	if s.features.threads == nil {
		return "", false, nil
	}
	f := ownerFilter(c)
	f[metaTranscript] = prefix
	infos, err := s.features.threads.Threads(ctx, agent.ThreadFilter{Metadata: f})
	if err != nil {
		return "", false, err
	}
	var best *apiThread
	for _, info := range infos {
		if th, ok := threadFromInfo(c, info); ok && (best == nil || th.Updated.After(best.Updated)) {
			best = &th
		}
	}
	if best != nil {
		return best.ID, true, nil
	}
	// After a turn that stopped for an approval, the digest of the
	// conversation through the approved run is in memory only; the
	// approval token in the history names the thread in any process.
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].Role != "assistant" {
			continue
		}
		if tok, ok := approvaltoken.Find(hist[i].Text); ok {
			if ct, ok, err := s.threadOfToken(ctx, c, tok); err != nil || ok {
				return ct, ok, err
			}
			break
		}
	}
	return "", false, nil
}
