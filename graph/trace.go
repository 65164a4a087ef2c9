package graph

import (
	"iter"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Trace holds every event of one call of Run or Resume, in order. It is
// recorded compactly and materialised on demand: a long run emits four
// events a step, and most of them fit in a 40-byte record without pointers
// (kind, step, node, attempt, duration, time), which the garbage collector
// never scans, where an Event is 200 bytes with nine pointers. Events a
// record cannot hold (an error, a payload, a wait) are kept whole. What
// Len, At, All and Events return is exactly the events a Stream of the
// same run would have yielded. The zero Trace is empty.
type Trace struct {
	thread string
	runID  uuid.UUID
	nodes  []string // the graph's node names by nodeDef.idx (Compiled.order, read-only)
	recs   []traceRec
	full   []Event     // events kept whole (traceRec.aux of a record with kind 0)
	tos    [][]string  // route destinations (traceRec.aux-1 of a route or run_start)
	cps    []uuid.UUID // checkpoint ids (traceRec.aux of a checkpoint event)
	times  []time.Time // anchors: an event's time is times[anchor].Add(off)
	lastAt time.Time   // the time of the last record
}

// traceRec is one event: kind 0 means the event is full[aux].
type traceRec struct {
	off     int64 // nanoseconds after times[anchor]
	dur     int64
	step    int32
	attempt int32
	anchor  uint32
	aux     uint32
	node    uint16 // nodes[node-1]; 0 for none
	kind    EventKind
}

// Len returns the number of events.
func (t Trace) Len() int { return len(t.recs) }

// At returns the i-th event; it panics when i is out of range, like an index.
func (t Trace) At(i int) Event {
	r := &t.recs[i]
	if r.kind == 0 {
		return t.full[r.aux]
	}
	e := Event{Kind: r.kind, Thread: t.thread, RunID: t.runID, Step: int(r.step), Attempt: int(r.attempt),
		Duration: time.Duration(r.dur), Time: t.times[r.anchor].Add(time.Duration(r.off))}
	if r.node > 0 {
		e.Node = t.nodes[r.node-1]
	}
	if r.kind == EventCheckpoint {
		e.Checkpoint = t.cps[r.aux]
	} else if r.aux > 0 {
		e.To = t.tos[r.aux-1]
	}
	return e
}

// All yields the events with their index, in order.
func (t Trace) All() iter.Seq2[int, Event] {
	return func(yield func(int, Event) bool) {
		for i := range t.recs {
			if !yield(i, t.At(i)) {
				return
			}
		}
	}
}

// Events returns the events as a new slice.
func (t Trace) Events() []Event {
	if len(t.recs) == 0 {
		return nil
	}
	out := make([]Event, len(t.recs))
	for i := range t.recs {
		out[i] = t.At(i)
	}
	return out
}

// add appends e, as a record when it fits one. node is e.Node's index in
// t.nodes when the caller knows it, else -1 (looked up by name).
func (t *Trace) add(e *Event, node int) {
	if len(t.recs) == 0 && len(t.full) == 0 {
		t.thread, t.runID = e.Thread, e.RunID
	}
	if !t.addRec(e, node) {
		t.recs = append(t.recs, traceRec{aux: uint32(len(t.full))})
		t.full = append(t.full, *e)
	}
}

// maxRecField bounds the step and attempt a record holds.
const maxRecField = 1<<31 - 1

func (t *Trace) addRec(e *Event, node int) bool {
	if e.Err != nil || e.Payload != nil || !e.NotBefore.IsZero() || e.Kind == 0 {
		return false
	}
	if e.Node != "" && (node < 0 || node >= len(t.nodes) || t.nodes[node] != e.Node) {
		if node = slices.Index(t.nodes, e.Node); node < 0 {
			return false
		}
	} else if e.Node == "" {
		node = -1
	}
	return t.rec(e.Thread, e.RunID, e.Kind, e.Step, node, e.Attempt, e.Duration, e.To, e.Checkpoint, e.Time)
}

// rec appends an event without an error, a payload or a NotBefore as a
// record, if it fits one: node is the index of its node in t.nodes, or -1.
func (t *Trace) rec(thread string, runID uuid.UUID, kind EventKind, step, node, attempt int, dur time.Duration, to []string, cp uuid.UUID, at time.Time) bool {
	if thread != t.thread || runID != t.runID || uint(step) > maxRecField || uint(attempt) > maxRecField || node >= 1<<16-1 ||
		kind == EventCheckpoint && to != nil || kind != EventCheckpoint && cp != uuid.Nil {
		return false
	}
	r := traceRec{kind: kind, step: int32(step), attempt: int32(attempt), dur: int64(dur), node: uint16(node + 1)}
	switch {
	case kind == EventCheckpoint:
		r.aux = uint32(len(t.cps))
		t.cps = append(t.cps, cp)
	case to != nil:
		r.aux = t.to(to) + 1
	}
	r.anchor, r.off = t.anchor(at)
	t.recs = append(t.recs, r)
	return true
}

// to returns the index of a destination list equal to to, adding it when
// the last few differ. Routes usually return one of a few slices (or equal
// new ones), so the list stays short.
func (t *Trace) to(to []string) uint32 {
	lo := max(0, len(t.tos)-8)
	if len(to) > 0 {
		for i := len(t.tos) - 1; i >= lo; i-- {
			if s := t.tos[i]; len(s) == len(to) && &s[0] == &to[0] {
				return uint32(i)
			}
		}
	}
	for i := len(t.tos) - 1; i >= lo; i-- {
		if slices.Equal(t.tos[i], to) && (t.tos[i] == nil) == (to == nil) {
			return uint32(i)
		}
	}
	if t.tos == nil {
		t.tos = make([][]string, 0, 16)
	}
	t.tos = append(t.tos, to)
	return uint32(len(t.tos) - 1)
}

// anchor expresses at as an offset from the latest anchor when that gives
// back exactly at (wall clock, monotonic reading and location), else makes
// at the new anchor. The engine's times are mostly one reading plus the
// monotonic time elapsed (see runner.now), so a new anchor is rare; and the
// events of a step share their times (a route and its checkpoint are
// stamped when the node returned), hence the one-entry cache.
func (t *Trace) anchor(at time.Time) (uint32, int64) {
	if n := len(t.recs); n > 0 && t.recs[n-1].kind != 0 && at == t.lastAt {
		r := &t.recs[n-1]
		return r.anchor, r.off
	}
	t.lastAt = at
	if n := len(t.times); n > 0 {
		a := t.times[n-1]
		off := at.Sub(a)
		// == rather than Equal: the event must come back as it was, monotonic
		// reading and location included.
		if a.Add(off) == at {
			return uint32(n - 1), int64(off)
		}
	}
	t.times = append(t.times, at)
	return uint32(len(t.times) - 1), 0
}
