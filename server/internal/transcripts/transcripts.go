package transcripts

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/capgraph/capgraph/server/internal/approvaltoken"
	"github.com/capgraph/capgraph/server/internal/chatanswer"
)

// Msg is one message of a chat request, as text.
type Msg struct {
	Role string
	Text string
}

var (
	// Open WebUI folds reasoning into <details type="reasoning" …>…</details>;
	// reasoning models' <think> blocks may be kept in content.
	detailsRE = regexp.MustCompile(`(?is)<details\b.*?</details>`)
	thinkRE   = regexp.MustCompile(`(?is)<think>.*?</think>`)
)

// Canonical is what a transcript digest covers of a message: without
// folded reasoning, approval token lines and shutdown and cancel notes (the server's
// own additions), and without any whitespace (clients trim, re-wrap and
// strip it).
func Canonical(s string) string {
	if strings.Contains(s, "<") { // the regular expressions were a 30th of a served turn's CPU
		s = detailsRE.ReplaceAllString(s, "")
		s = thinkRE.ReplaceAllString(s, "")
	}
	s = strings.ReplaceAll(s, strings.TrimSpace(chatanswer.ShutdownNote), "")
	s = strings.ReplaceAll(s, strings.TrimSpace(chatanswer.CanceledNote), "")
	var b strings.Builder
	b.Grow(len(s))
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, "AP-") && approvaltoken.Contains(line) {
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

// Digest is the owner-scoped SHA-256 of the user and
// assistant messages of msgs, canonicalised and length-prefixed.
func Digest(owner string, msgs []Msg) string {
	h := sha256.New()
	write := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	write(owner)
	for _, m := range msgs {
		switch m.Role {
		case "user", "assistant":
			write(m.Role)
			write(Canonical(m.Text))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// HasAssistant reports whether msgs hold an assistant message (a
// conversation to continue).
func HasAssistant(msgs []Msg) bool {
	return slices.ContainsFunc(msgs, func(m Msg) bool { return m.Role == "assistant" })
}

// WithoutTrailingReply drops the assistant messages (and anything but
// user messages) at the end of msgs.
func WithoutTrailingReply(msgs []Msg) []Msg {
	i := len(msgs)
	for i > 0 && msgs[i-1].Role != "user" {
		i--
	}
	return msgs[:i]
}

type entry struct {
	clientThread string
	internal     string
	digests      []string // the thread's current digests
}

// Index maps digests to threads in memory, keeping only each
// thread's latest digests and at most max threads (the oldest go first).
type Index struct {
	mu       sync.Mutex
	byDigest map[string]*entry
	byThread map[string]*entry
	order    []string // internal ids, oldest first
	max      int
}

// IndexSize is how many threads the server's index keeps.
const IndexSize = 10000

// NewIndex returns an empty index of at most max threads.
func NewIndex(max int) *Index {
	return &Index{byDigest: map[string]*entry{}, byThread: map[string]*entry{}, max: max}
}

// Set makes digests the thread's current ones.
func (x *Index) Set(clientThread, internal string, digests ...string) {
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
	e := &entry{clientThread: clientThread, internal: internal, digests: digests}
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

// Add adds a digest to the thread's current ones.
func (x *Index) Add(clientThread, internal, digest string) {
	x.mu.Lock()
	e, ok := x.byThread[internal]
	var ds []string
	if ok {
		ds = slices.Clone(e.digests)
	}
	x.mu.Unlock()
	x.Set(clientThread, internal, append(ds, digest)...)
}

// Holds reports whether digest is one of the internal thread's current
// digests (identical conversations share a digest; get names only the
// latest of them).
func (x *Index) Holds(internal, digest string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.byThread[internal]
	return ok && slices.Contains(e.digests, digest)
}

// Get is the client id of the thread digest names.
func (x *Index) Get(digest string) (clientThread string, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.byDigest[digest]
	if !ok {
		return "", false
	}
	return e.clientThread, true
}

// Forget drops a deleted thread.
func (x *Index) Forget(internal string) {
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
