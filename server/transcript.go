package server

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"github.com/capgraph/capgraph/server/internal/chatanswer"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/capgraph/capgraph/agent"
)

// A chat request without a chat id names its conversation only by its
// messages, so their digest finds the thread (docs/frontends.md, "Which thread?").

// metaTranscript is the metadata key of a Chat Completions thread's
// transcript digest.
const metaTranscript = "transcript"

// transcriptMsg is one message of a chat request, as text.
type transcriptMsg struct {
	Role string
	Text string
}

var (
	// Open WebUI folds reasoning into <details type="reasoning" …>…</details>;
	// reasoning models' <think> blocks may be kept in content.
	detailsRE = regexp.MustCompile(`(?is)<details\b.*?</details>`)
	thinkRE   = regexp.MustCompile(`(?is)<think>.*?</think>`)
)

// canonicalText is what a transcript digest covers of a message: without
// folded reasoning, approval token lines and shutdown and cancel notes (the server's
// own additions), and without any whitespace (clients trim, re-wrap and
// strip it).
func canonicalText(s string) string {
	if strings.Contains(s, "<") { // the regular expressions were a 30th of a served turn's CPU
		s = detailsRE.ReplaceAllString(s, "")
		s = thinkRE.ReplaceAllString(s, "")
	}
	s = strings.ReplaceAll(s, strings.TrimSpace(chatanswer.ShutdownNote), "")
	s = strings.ReplaceAll(s, strings.TrimSpace(chatanswer.CanceledNote), "")
	var b strings.Builder
	b.Grow(len(s))
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, "AP-") && approvalTokenRE.MatchString(line) {
			continue
		}
		for _, r := range line {
			if !unicode.IsSpace(r) {
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

// transcriptDigest is the principal-scoped SHA-256 of the user and
// assistant messages of msgs, canonicalised and length-prefixed.
func transcriptDigest(c caller, msgs []transcriptMsg) string {
	h := sha256.New()
	write := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	write(ownerKey(c))
	for _, m := range msgs {
		switch m.Role {
		case "user", "assistant":
			write(m.Role)
			write(canonicalText(m.Text))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// hasAssistant reports whether msgs hold an assistant message (a
// conversation to continue).
func hasAssistant(msgs []transcriptMsg) bool {
	return slices.ContainsFunc(msgs, func(m transcriptMsg) bool { return m.Role == "assistant" })
}

// withoutTrailingReply drops the assistant messages (and anything but
// user messages) at the end of msgs.
func withoutTrailingReply(msgs []transcriptMsg) []transcriptMsg {
	i := len(msgs)
	for i > 0 && msgs[i-1].Role != "user" {
		i--
	}
	return msgs[:i]
}

type transcriptEntry struct {
	clientThread string
	internal     string
	digests      []string // the thread's current digests
}

// transcriptIndex maps digests to threads in memory, keeping only each
// thread's latest digests and at most max threads (the oldest go first).
type transcriptIndex struct {
	mu       sync.Mutex
	byDigest map[string]*transcriptEntry
	byThread map[string]*transcriptEntry
	order    []string // internal ids, oldest first
	max      int
}

const transcriptIndexSize = 10000

func newTranscriptIndex(max int) *transcriptIndex {
	return &transcriptIndex{byDigest: map[string]*transcriptEntry{}, byThread: map[string]*transcriptEntry{}, max: max}
}

// set makes digests the thread's current ones.
func (x *transcriptIndex) set(clientThread, internal string, digests ...string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.byThread[internal]; ok {
		for _, d := range old.digests {
			if x.byDigest[d] == old {
				delete(x.byDigest, d)
			}
		}
		x.order = slices.DeleteFunc(x.order, func(id string) bool { return id == internal })
	}
	e := &transcriptEntry{clientThread: clientThread, internal: internal, digests: digests}
	x.byThread[internal] = e
	for _, d := range digests {
		x.byDigest[d] = e
	}
	x.order = append(x.order, internal)
	for len(x.order) > x.max {
		old := x.byThread[x.order[0]]
		for _, d := range old.digests {
			if x.byDigest[d] == old {
				delete(x.byDigest, d)
			}
		}
		delete(x.byThread, x.order[0])
		x.order = x.order[1:]
	}
}

// add adds a digest to the thread's current ones.
func (x *transcriptIndex) add(clientThread, internal, digest string) {
	x.mu.Lock()
	e, ok := x.byThread[internal]
	var ds []string
	if ok {
		ds = slices.Clone(e.digests)
	}
	x.mu.Unlock()
	x.set(clientThread, internal, append(ds, digest)...)
}

// holds reports whether digest is one of the internal thread's current
// digests (identical conversations share a digest; get names only the
// latest of them).
func (x *transcriptIndex) holds(internal, digest string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.byThread[internal]
	return ok && slices.Contains(e.digests, digest)
}

func (x *transcriptIndex) get(digest string) (clientThread string, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.byDigest[digest]
	if !ok {
		return "", false
	}
	return e.clientThread, true
}

// forget drops a deleted thread.
func (x *transcriptIndex) forget(internal string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.byThread[internal]
	if !ok {
		return
	}
	for _, d := range e.digests {
		if x.byDigest[d] == e {
			delete(x.byDigest, d)
		}
	}
	delete(x.byThread, internal)
	x.order = slices.DeleteFunc(x.order, func(id string) bool { return id == internal })
}

// continuedThread returns the client id of c's thread that msgs (a chat
// request, its last message the new user message) continues.
func (s *Server) continuedThread(ctx context.Context, c caller, msgs []transcriptMsg) (string, bool, error) {
	hist := msgs[:len(msgs)-1]
	if !hasAssistant(hist) {
		return "", false, nil
	}
	if ct, ok := s.transcripts.get(transcriptDigest(c, hist)); ok {
		return ct, true, nil
	}
	prefix := transcriptDigest(c, withoutTrailingReply(hist))
	if ct, ok := s.transcripts.get(prefix); ok {
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
		if tok, ok := findApprovalToken(hist[i].Text); ok {
			if ct, ok, err := s.threadOfToken(ctx, c, tok); err != nil || ok {
				return ct, ok, err
			}
			break
		}
	}
	return "", false, nil
}
