package memory

import (
	"math"
	"slices"
	"time"

	"github.com/google/uuid"

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
	entries []entry
	bytes   []byte
	names   []string
	// recent are the last next-node lists copied: a run's checkpoints name
	// the same few nodes again and again, and a copy already kept (never
	// written again) serves every checkpoint naming the same nodes.
	recent [8][]string
	turn   int
	// meta is the last metadata kept: a run's checkpoints mostly carry
	// the same.
	meta packedMeta
}

// entry is how the store keeps a checkpoint: without the thread id (the
// thread's key), with times as Unix microseconds, the precision every
// store keeps, and the metadata packed; 136 bytes where a Checkpoint
// takes 176.
type entry struct {
	id, parent, run    uuid.UUID
	step               int
	state              []byte
	next               []string
	metadata           packedMeta
	notBefore, created int64 // Unix µs; noTime for the zero time
}

// noTime stands for the zero time.Time in an entry.
const noTime = math.MinInt64

func micros(t time.Time) int64 {
	if t.IsZero() {
		return noTime
	}
	return t.UnixMicro()
}

// fromMicros is the time an entry keeps as us, as the store gives it back:
// UTC, whole microseconds, no monotonic reading; the zero time stays zero.
func fromMicros(us int64) time.Time {
	if us == noTime {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// storedTime is t as the durable stores give it back (see fromMicros).
func storedTime(t time.Time) time.Time { return fromMicros(micros(t)) }

// set makes e the store's copy of cp, with its slices and map in ms blocks.
func (e *entry) set(cp *checkpoint.Checkpoint, mem *arena) {
	*e = entry{id: cp.ID, parent: cp.ParentID, run: cp.RunID, step: cp.Step,
		notBefore: micros(cp.NotBefore), created: micros(cp.Created)}
	e.state = mem.copyBytes(cp.State)
	e.next = mem.copyNames(cp.Next)
	e.metadata = mem.copyMeta(cp.Metadata)
}

func (a *arena) copyMeta(m map[string]string) packedMeta {
	if !a.meta.equals(m) {
		a.meta = packMeta(m)
	}
	return a.meta
}

// checkpoint returns a copy of e as a Checkpoint of thread, which the
// caller owns: empty slices and metadata are nil.
func (e *entry) checkpoint(thread string) checkpoint.Checkpoint {
	return checkpoint.Checkpoint{ThreadID: thread, ID: e.id, ParentID: e.parent, RunID: e.run, Step: e.step,
		State: nilIfEmpty(slices.Clone(e.state)), Next: nilIfEmpty(slices.Clone(e.next)), Metadata: e.metadata.unpack(),
		NotBefore: fromMicros(e.notBefore), Created: fromMicros(e.created)}
}

const (
	minEntries, maxEntries = 4, 64
	minBytes, maxBytes     = 256, 4 << 10
	// A state above sharedBytes gets an allocation of its own: copying it
	// costs more than allocating it, and a block would be zeroed first.
	sharedBytes        = 512
	minNames, maxNames = 8, 256
)

// keep returns the store's own copy of cp (its slices and map copied, empty
// ones nil) in a new entry.
func (a *arena) keep(cp *checkpoint.Checkpoint) *entry {
	if len(a.entries) == cap(a.entries) {
		a.entries = make([]entry, 0, grown(cap(a.entries), 1, minEntries, maxEntries))
	}
	a.entries = a.entries[:len(a.entries)+1]
	e := &a.entries[len(a.entries)-1]
	e.set(cp, a)
	return e
}

func (a *arena) copyBytes(b []byte) []byte {
	switch {
	case len(b) == 0:
		return nil
	case len(b) > sharedBytes:
		return slices.Clone(b)
	case cap(a.bytes)-len(a.bytes) < len(b):
		a.bytes = make([]byte, 0, grown(cap(a.bytes), len(b), minBytes, maxBytes))
	}
	n := len(a.bytes)
	a.bytes = append(a.bytes, b...)
	return a.bytes[n:len(a.bytes):len(a.bytes)]
}

func (a *arena) copyNames(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	for _, r := range a.recent {
		if slices.Equal(r, s) {
			return r
		}
	}
	var c []string
	switch {
	case len(s) > maxNames/4:
		c = slices.Clone(s)
	case cap(a.names)-len(a.names) < len(s):
		a.names = make([]string, 0, grown(cap(a.names), len(s), minNames, maxNames))
		fallthrough
	default:
		n := len(a.names)
		a.names = append(a.names, s...)
		c = a.names[n:len(a.names):len(a.names)]
	}
	a.recent[a.turn%len(a.recent)] = c
	a.turn++
	return c
}

// grown is the size of the next block: double the last, between lo and hi,
// and at least need.
func grown(last, need, lo, hi int) int {
	return max(need, min(max(2*last, lo), hi))
}
