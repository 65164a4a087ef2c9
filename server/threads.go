package server

import (
	"github.com/capgraph/capgraph/server/internal/native"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// threadNamespace is the UUIDv5 namespace of internal thread ids.
var threadNamespace = uuid.MustParse("5d0c6a53-8f0e-4f0b-9a77-2f1e3c1f6c4b")

// internalThreadID derives the agent's thread id from who asks and the id
// the client uses. Two principals using the same client id get different
// threads, so a client id can never reach another principal's thread.
func internalThreadID(c caller, clientID string) string {
	name := c.Principal.Tenant + "\x00" + c.Principal.Name + "\x00" + c.User + "\x00" + clientID
	return uuid.NewSHA1(threadNamespace, []byte(name)).String()
}

// apiThread is a conversation as the native API shows it, with who owns
// it and its latest checkpoint.
type apiThread struct {
	native.Thread
	owner  string // caller key + user
	latest uuid.UUID
}

// threadIndex keeps the threads created but never run, for an Agent that
// cannot create threads in its store (no ThreadStore: a test double, a
// custom runner). With the agent every thread lives in the checkpoint
// store and this index stays empty. It holds at most Config.MaxThreads per
// owner.
type threadIndex struct {
	mu sync.Mutex
	m  map[string]*apiThread
}

func newThreadIndex() *threadIndex { return &threadIndex{m: map[string]*apiThread{}} }

func ownerKey(c caller) string { return c.key() + "\x00" + c.User }

// add records a new thread and returns a copy; created is false when a
// concurrent request added it first.
func (t *threadIndex) add(c caller, clientID string, meta map[string]string, now time.Time) (apiThread, bool) {
	id := internalThreadID(c, clientID)
	t.mu.Lock()
	defer t.mu.Unlock()
	th, ok := t.m[id]
	if !ok {
		th = &apiThread{Thread: native.Thread{ID: clientID, Created: now, Updated: now, Metadata: meta, Internal: id}, owner: ownerKey(c)}
		t.m[id] = th
	}
	return *th, !ok
}

func (t *threadIndex) get(c caller, clientID string) (apiThread, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	th, ok := t.m[internalThreadID(c, clientID)]
	if !ok {
		return apiThread{}, false
	}
	return *th, true
}

// list returns c's threads, newest first.
func (t *threadIndex) list(c caller) []apiThread {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []apiThread
	for _, th := range t.m {
		if th.owner == ownerKey(c) {
			out = append(out, *th)
		}
	}
	slices.SortFunc(out, func(a, b apiThread) int {
		if d := b.Updated.Compare(a.Updated); d != 0 {
			return d
		}
		return strings.Compare(b.Internal, a.Internal)
	})
	return out
}

func (t *threadIndex) count(c caller) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, th := range t.m {
		if th.owner == ownerKey(c) {
			n++
		}
	}
	return n
}

func (t *threadIndex) delete(c caller, clientID string) bool {
	id := internalThreadID(c, clientID)
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.m[id]
	delete(t.m, id)
	return ok
}
