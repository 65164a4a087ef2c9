package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// ErrThreadBusy: another run holds the thread. The graph itself reports it
// for a run of the same Compiled graph in progress on the thread, or a
// ThreadHold on it; callers that lease threads in a shared store (the agent
// package) wrap it too when another process or replica holds the lease, with
// the holder in a *checkpoint.LeaseHeldError.
var ErrThreadBusy = errors.New("graph: a run is already in progress on this thread")

// Status is how a run ended.
type Status string

const (
	StatusDone        Status = "done"        // reached End or a terminal node
	StatusInterrupted Status = "interrupted" // a node asked a human; Resume continues
	StatusFailed      Status = "failed"      // an error ended the run; Resume retries the failed step
	StatusCanceled    Status = "canceled"    // ctx ended; Resume continues
	// StatusWaiting: the run parked before a wait longer than WithParkAfter
	// allows (Result.NotBefore); Resume continues it, at that time.
	StatusWaiting Status = "waiting"
)

// Result describes a run after it returned, whatever the outcome.
type Result[S any] struct {
	Thread string
	RunID  uuid.UUID
	Status Status
	// State is the state of the last checkpoint.
	State S
	// Checkpoint is the id of the last checkpoint.
	Checkpoint uuid.UUID
	// Steps counts the steps of the run so far (across resumes).
	Steps int
	// Interrupts lists the pending interrupts when Status is StatusInterrupted.
	Interrupts []*InterruptError
	// NotBefore is when a parked run (StatusWaiting) may go on.
	NotBefore time.Time
	// CommitWaits counts the durable writes this call waited for: every
	// checkpoint under DurabilitySync; under DurabilityAsync the input
	// checkpoint or answer and each barrier that found writes outstanding
	// (see Durability).
	CommitWaits int
	// Trace holds every event of this call (Run and Resume only; a Stream
	// consumer sees the events itself), recorded compactly: Trace.All and
	// Trace.Events materialise them.
	Trace Trace
}

// Compiled is a validated graph, safe for concurrent use on different threads.
type Compiled[S, U any] struct {
	cfg   Config[S, U]
	clock Clock
	// systemClock: the clock is SystemClock, so the end of a node can be
	// read from the monotonic clock alone (see runTask).
	systemClock bool
	nodes       map[string]*nodeDef[S, U]
	order       []string
	entry       []string
	// valueState: S is a ValueState, so a held checkpoint's state is
	// encoded only when a barrier writes it.
	valueState bool

	threads threadSet // threads running or held in this process (threads.go)

	// traceHint is the length of the last trace, used as the capacity of the
	// next one so that Run does not regrow its trace step after step.
	traceHint atomic.Int64
}

// newTrace returns an empty trace for a Run or Resume, sized from the
// previous one so that a long run does not regrow it step after step.
func (c *Compiled[S, U]) newTrace() *Trace {
	n := min(c.traceHint.Load()+8, 4096)
	return &Trace{nodes: c.order, recs: make([]traceRec, 0, n), cps: make([]uuid.UUID, 0, n/4+2)}
}

// keepTrace records the length of a finished trace as the next one's hint.
func (c *Compiled[S, U]) keepTrace(trace *Trace) Trace {
	c.traceHint.Store(int64(trace.Len()))
	return *trace
}

func memoryStore() checkpoint.Store { return memory.New() }

// Store returns the checkpoint store the graph writes to.
func (c *Compiled[S, U]) Store() checkpoint.Store { return c.cfg.Store }

// Nodes lists the node names in declaration order.
func (c *Compiled[S, U]) Nodes() []string { return append([]string(nil), c.order...) }

// Run starts a run on thread with input as the initial state and returns when
// it ends. The returned Result is always filled, also on error. Run always
// starts a new run: an unfinished run on the thread (interrupted, failed,
// canceled) is abandoned, its checkpoints staying in the thread's history as
// parents of the new one; Resume continues it instead.
func (c *Compiled[S, U]) Run(ctx context.Context, thread string, input S) (Result[S], error) {
	trace := c.newTrace()
	res, err := c.exec(ctx, thread, start[S]{fresh: true, input: input}, nil, trace)
	res.Trace = c.keepTrace(trace)
	return res, err
}

// Stream starts a run like Run and yields its events as they happen. A failed
// or canceled run ends with a run_end event paired with the run's error.
// Breaking out of the loop cancels the run at once (the running node sees its
// ctx done); the thread stays resumable.
func (c *Compiled[S, U]) Stream(ctx context.Context, thread string, input S) iter.Seq2[Event, error] {
	return c.stream(ctx, thread, start[S]{fresh: true, input: input})
}

// Resume continues the latest run of thread from its last checkpoint: after a
// crash, a cancellation or a failure (the failed node runs again; concurrent
// siblings that had finished are not run again), or after an interrupt, in
// which case value (encoded as JSON) is the human's answer and the interrupted
// node is re-entered with it (see ResumeValue). The answer is first stored in
// a new checkpoint with the same step, the checkpoint and the answer in one
// transaction (checkpoint.TuplePutter), so a crash after answering loses
// nothing and a crash before leaves the question pending. value nil on an interrupted thread returns the interrupted result
// without running anything; a value on a thread that is not interrupted is
// ErrNotInterrupted.
func (c *Compiled[S, U]) Resume(ctx context.Context, thread string, value any) (Result[S], error) {
	st, err := resumeStart[S](value)
	if err != nil {
		return Result[S]{Thread: thread, Status: StatusFailed}, err
	}
	trace := c.newTrace()
	res, err := c.exec(ctx, thread, st, nil, trace)
	res.Trace = c.keepTrace(trace)
	return res, err
}

// ResumeStream is Resume observed as a stream of events.
func (c *Compiled[S, U]) ResumeStream(ctx context.Context, thread string, value any) iter.Seq2[Event, error] {
	st, err := resumeStart[S](value)
	if err != nil {
		return func(yield func(Event, error) bool) { yield(Event{Kind: EventRunEnd, Thread: thread, Err: err}, err) }
	}
	return c.stream(ctx, thread, st)
}

// State returns the decoded state of the thread's latest checkpoint and the
// checkpoint tuple itself.
func (c *Compiled[S, U]) State(ctx context.Context, thread string) (S, checkpoint.Tuple, error) {
	var s S
	t, err := c.cfg.Store.Get(ctx, thread, uuid.Nil)
	if err != nil {
		return s, t, err
	}
	if err := c.cfg.Codec.Unmarshal(t.Checkpoint.State, &s); err != nil {
		return s, t, fmt.Errorf("graph: decode state of thread %q: %w", thread, err)
	}
	return s, t, nil
}

type start[S any] struct {
	fresh    bool
	input    S
	hasValue bool
	value    json.RawMessage
}

func resumeStart[S any](value any) (start[S], error) {
	if value == nil {
		return start[S]{}, nil
	}
	b, err := encodeValue(value)
	if err != nil {
		return start[S]{}, &EncodeError{What: "the resume value", Err: err}
	}
	return start[S]{hasValue: true, value: b}, nil
}

func (c *Compiled[S, U]) stream(ctx context.Context, thread string, st start[S]) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var (
			stopped bool
			last    Event // the run_end event of a failed run, yielded with its error
			hasLast bool
		)
		_, err := c.exec(ctx, thread, st, func(e Event) bool {
			if stopped {
				return false
			}
			if e.Kind == EventRunEnd && e.Err != nil {
				// The final pair carries the error; yielded below.
				last, hasLast = e, true
				return true
			}
			if !yield(e, nil) {
				// Breaking out of the loop cancels the run: the current node
				// sees ctx done, and the run stays resumable.
				stopped = true
				cancel()
				return false
			}
			return true
		}, nil)
		if err != nil && !stopped {
			if !hasLast {
				// exec failed before the run started (busy thread, bad input).
				last = Event{Kind: EventRunEnd, Thread: thread, Err: err, Time: c.clock.Now()}
			}
			yield(last, err)
		}
	}
}
