package server

import (
	"slices"
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

// Thread is a conversation as the native API shows it.
type Thread struct {
	ID       string            `json:"id"` // the client's id
	Created  time.Time         `json:"created_at"`
	Updated  time.Time         `json:"updated_at"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Status is the last run's status ("" before any run, "running").
	Status string `json:"status,omitempty"`

	internal string
	owner    string // caller key + user
}

// threadStore remembers the threads this process has seen, by internal id:
// threads not yet run, and run statuses. The checkpoint store is the
// durable list (threadlist.go); ownership follows from the derived id itself.
type threadStore struct {
	mu sync.Mutex
	m  map[string]*Thread
}

func newThreadStore() *threadStore { return &threadStore{m: map[string]*Thread{}} }

func ownerKey(c caller) string { return c.key() + "\x00" + c.User }

// touch records the thread, creating it when new, and returns a copy.
func (t *threadStore) touch(c caller, clientID string, meta map[string]string, now time.Time) (Thread, bool) {
	id := internalThreadID(c, clientID)
	t.mu.Lock()
	defer t.mu.Unlock()
	th, ok := t.m[id]
	if !ok {
		th = &Thread{ID: clientID, Created: now, Metadata: meta, internal: id, owner: ownerKey(c)}
		t.m[id] = th
	}
	th.Updated = now
	return *th, !ok
}

// remember adds a thread found in the checkpoint store to the index,
// unless it is there already, and returns the index's copy.
func (t *threadStore) remember(th Thread) Thread {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cur, ok := t.m[th.internal]; ok {
		return *cur
	}
	cp := th
	t.m[th.internal] = &cp
	return cp
}

func (t *threadStore) get(c caller, clientID string) (Thread, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	th, ok := t.m[internalThreadID(c, clientID)]
	if !ok {
		return Thread{}, false
	}
	return *th, true
}

func (t *threadStore) setStatus(internal, status string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if th, ok := t.m[internal]; ok {
		th.Status, th.Updated = status, now
	}
}

func (t *threadStore) list(c caller) []Thread {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Thread
	for _, th := range t.m {
		if th.owner == ownerKey(c) {
			out = append(out, *th)
		}
	}
	slices.SortFunc(out, func(a, b Thread) int { return b.Updated.Compare(a.Updated) })
	return out
}

func (t *threadStore) delete(c caller, clientID string) bool {
	id := internalThreadID(c, clientID)
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.m[id]
	delete(t.m, id)
	return ok
}
