package memory

import (
	"maps"
	"slices"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// arena holds a thread's copies of its checkpoints. A long run Puts one small
// checkpoint per step; taking each one's entry, state bytes and next nodes
// from blocks shared by the thread, rather than from one allocation each and
// a slice of entries regrown by copying, makes a Put cost a copy and no
// allocation most of the time. Blocks double from small to a cap, so a
// thread with one checkpoint stays small. Nothing in a block is ever written
// twice, and Get and List hand out copies, so sharing blocks is safe.
type arena struct {
	entries []checkpoint.Checkpoint
	bytes   []byte
	names   []string
}

const (
	minEntries, maxEntries = 4, 64
	minBytes, maxBytes     = 256, 16 << 10
	minNames, maxNames     = 8, 256
)

// keep returns the store's own copy of cp (its slices and map copied, empty
// ones nil).
func (a *arena) keep(cp *checkpoint.Checkpoint) *checkpoint.Checkpoint {
	if len(a.entries) == cap(a.entries) {
		a.entries = make([]checkpoint.Checkpoint, 0, grown(cap(a.entries), 1, minEntries, maxEntries))
	}
	a.entries = append(a.entries, *cp)
	e := &a.entries[len(a.entries)-1]
	e.State = a.copyBytes(cp.State)
	e.Next = a.copyNames(cp.Next)
	e.Metadata = cloneMap(cp.Metadata)
	return e
}

func (a *arena) copyBytes(b []byte) []byte {
	switch {
	case len(b) == 0:
		return nil
	case len(b) > maxBytes/4:
		return slices.Clone(b) // a large state is a block of its own
	case cap(a.bytes)-len(a.bytes) < len(b):
		a.bytes = make([]byte, 0, grown(cap(a.bytes), len(b), minBytes, maxBytes))
	}
	n := len(a.bytes)
	a.bytes = append(a.bytes, b...)
	return a.bytes[n:len(a.bytes):len(a.bytes)]
}

func (a *arena) copyNames(s []string) []string {
	switch {
	case len(s) == 0:
		return nil
	case len(s) > maxNames/4:
		return slices.Clone(s)
	case cap(a.names)-len(a.names) < len(s):
		a.names = make([]string, 0, grown(cap(a.names), len(s), minNames, maxNames))
	}
	n := len(a.names)
	a.names = append(a.names, s...)
	return a.names[n:len(a.names):len(a.names)]
}

// grown is the size of the next block: double the last, between lo and hi,
// and at least need.
func grown(last, need, lo, hi int) int {
	return max(need, min(max(2*last, lo), hi))
}

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
