package graph

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// EventKind says what happened.
type EventKind uint8

const (
	EventRunStart   EventKind = iota + 1 // a run started or resumed
	EventNodeStart                       // a node started
	EventNodeEnd                         // a node ended (Err set on failure)
	EventRoute                           // a routing decision: Node → To
	EventWait                            // the run waits until NotBefore before the next step
	EventCheckpoint                      // a checkpoint is durable (under DurabilityAsync, reported once written: after the next step's first events)
	EventInterrupt                       // a node interrupted the run (Payload)
	EventCustom                          // a node emitted Payload with Emit
	EventRunEnd                          // the run ended (Err set on failure)
)

var eventKindNames = [...]string{
	EventRunStart: "run_start", EventNodeStart: "node_start", EventNodeEnd: "node_end",
	EventRoute: "route", EventWait: "wait", EventCheckpoint: "checkpoint",
	EventInterrupt: "interrupt", EventCustom: "custom", EventRunEnd: "run_end",
}

func (k EventKind) String() string {
	if int(k) < len(eventKindNames) && eventKindNames[k] != "" {
		return eventKindNames[k]
	}
	return "unknown"
}

// Event is one observable fact of a run.
type Event struct {
	Kind   EventKind
	Thread string
	RunID  uuid.UUID
	Step   int
	Node   string
	// Attempt counts the starts of Node within this call of Run, Stream or
	// Resume, from 1; a Resume counts afresh (the count is not persisted).
	Attempt int
	// To holds the destinations of a route decision.
	To []string
	// Duration of a node, set on EventNodeEnd; on an EventCheckpoint after
	// a step, how long the store took to write it.
	Duration time.Duration
	// Err is set on a failed EventNodeEnd and on a failed EventRunEnd.
	Err error
	// NotBefore is set on EventWait, and on the EventRunEnd of a run that
	// parked (StatusWaiting, see WithParkAfter).
	NotBefore time.Time
	// Checkpoint is the id written, on EventCheckpoint.
	Checkpoint uuid.UUID
	// Payload is set on EventCustom and EventInterrupt, and on the
	// EventRunEnd of a run that finished (StatusDone), where it is the
	// run's final state (an S: the state of its last checkpoint, as
	// Result.State).
	Payload any
	Time    time.Time
}

type emitterKey struct{}

// emitter is how a node's Emit reaches the run: base carries the step and
// node of the task it belongs to, meta the Route.Meta that started it. One-node
// steps share the run's emitter; each concurrent branch has its own. (The
// route's metadata rides here because the node's context already carries the
// emitter: handing it over costs no allocation.)
type emitter struct {
	emit func(Event)
	base Event
	meta any
}

// Emit sends a custom event from inside a node to whoever observes the run.
// It does nothing outside a run. Emit is safe to call from concurrent branches.
func Emit(ctx context.Context, payload any) {
	em, _ := ctx.Value(emitterKey{}).(*emitter)
	if em == nil {
		return
	}
	ev := em.base
	ev.Kind = EventCustom
	ev.Payload = payload
	em.emit(ev) // the engine stamps Thread, RunID and Time (Config.Now)
}

// RouteMeta returns the Meta of the route that started the running node; ok
// is false when there is none: the node is the run's entry, was named by a
// route without Meta or a static edge, or was started by Resume (route
// metadata is not checkpointed, so a resumed node, maybe in another process,
// computes it again from the state). The value is the route's own, not a
// copy: read it, do not change it.
func RouteMeta(ctx context.Context) (meta any, ok bool) {
	em, _ := ctx.Value(emitterKey{}).(*emitter)
	if em == nil || em.meta == nil {
		return nil, false
	}
	return em.meta, true
}
