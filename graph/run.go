package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"runtime/debug"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// ErrThreadBusy: another run on the same thread is in progress in this process.
var ErrThreadBusy = errors.New("graph: a run is already in progress on this thread")

// Status is how a run ended.
type Status string

const (
	StatusDone        Status = "done"        // reached End or a terminal node
	StatusInterrupted Status = "interrupted" // a node asked a human; Resume continues
	StatusFailed      Status = "failed"      // an error ended the run; Resume retries the failed step
	StatusCanceled    Status = "canceled"    // ctx ended; Resume continues
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
	// Trace holds every event of this call (Run and Resume only; a Stream
	// consumer sees the events itself).
	Trace []Event
}

// Compiled is a validated graph, safe for concurrent use on different threads.
type Compiled[S, U any] struct {
	cfg   Config[S, U]
	nodes map[string]*nodeDef[S, U]
	order []string
	entry []string

	mu   sync.Mutex
	busy map[string]bool
}

func memoryStore() checkpoint.Store { return memory.New() }

// Store returns the checkpoint store the graph writes to.
func (c *Compiled[S, U]) Store() checkpoint.Store { return c.cfg.Store }

// Nodes lists the node names in declaration order.
func (c *Compiled[S, U]) Nodes() []string { return append([]string(nil), c.order...) }

// Run starts a run on thread with input as the initial state and returns when
// it ends. The returned Result is always filled, also on error.
func (c *Compiled[S, U]) Run(ctx context.Context, thread string, input S) (Result[S], error) {
	var trace []Event
	res, err := c.exec(ctx, thread, start[S]{fresh: true, input: input}, func(e Event) bool {
		trace = append(trace, e)
		return true
	})
	res.Trace = trace
	return res, err
}

// Stream starts a run like Run and yields its events as they happen. The last
// pair carries the run's error, if any. Stopping the iteration cancels the run
// after its current step.
func (c *Compiled[S, U]) Stream(ctx context.Context, thread string, input S) iter.Seq2[Event, error] {
	return c.stream(ctx, thread, start[S]{fresh: true, input: input})
}

// Resume continues the latest run of thread from its last checkpoint: after a
// crash, a cancellation or a failure (the failed step runs again), or after an
// interrupt, in which case value is the human's answer and the interrupted node
// is re-entered with it (see ResumeValue). value nil on an interrupted thread
// returns the interrupted result without running anything.
func (c *Compiled[S, U]) Resume(ctx context.Context, thread string, value any) (Result[S], error) {
	st, err := resumeStart[S](value)
	if err != nil {
		return Result[S]{Thread: thread, Status: StatusFailed}, err
	}
	var trace []Event
	res, err := c.exec(ctx, thread, st, func(e Event) bool {
		trace = append(trace, e)
		return true
	})
	res.Trace = trace
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

// StatusOf derives the status of a checkpoint tuple: interrupted when it holds
// interrupt writes, done when nothing is next, failed when it holds an error
// write, otherwise canceled (a run that stopped or crashed between steps).
func StatusOf(t checkpoint.Tuple) Status {
	for _, w := range t.Writes {
		if w.Kind == checkpoint.WriteInterrupt {
			return StatusInterrupted
		}
	}
	if len(t.Checkpoint.Next) == 0 {
		return StatusDone
	}
	for _, w := range t.Writes {
		if w.Kind == checkpoint.WriteError {
			return StatusFailed
		}
	}
	return StatusCanceled
}

// Interrupts decodes the pending interrupts of a checkpoint tuple.
func Interrupts(t checkpoint.Tuple) []*InterruptError {
	var out []*InterruptError
	for _, w := range t.Writes {
		if w.Kind == checkpoint.WriteInterrupt {
			out = append(out, &InterruptError{Node: w.Task, Payload: w.Value})
		}
	}
	return out
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
	b, err := json.Marshal(value)
	if err != nil {
		return start[S]{}, fmt.Errorf("graph: resume value: %w", err)
	}
	return start[S]{hasValue: true, value: b}, nil
}

func (c *Compiled[S, U]) stream(ctx context.Context, thread string, st start[S]) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stopped := false
		_, err := c.exec(ctx, thread, st, func(e Event) bool {
			if stopped {
				return false
			}
			if e.Kind == EventRunEnd && e.Err != nil {
				// The final pair carries the error; emitted below.
				return true
			}
			if !yield(e, nil) {
				stopped = true
				cancel()
				return false
			}
			return true
		})
		if err != nil && !stopped {
			yield(Event{Kind: EventRunEnd, Thread: thread, Err: err, Time: time.Now()}, err)
		}
	}
}

func (c *Compiled[S, U]) lock(thread string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy == nil {
		c.busy = make(map[string]bool)
	}
	if c.busy[thread] {
		return false
	}
	c.busy[thread] = true
	return true
}

func (c *Compiled[S, U]) unlock(thread string) {
	c.mu.Lock()
	delete(c.busy, thread)
	c.mu.Unlock()
}

// runner holds the per-run mutable data of exec.
type runner[S, U any] struct {
	c        *Compiled[S, U]
	thread   string
	runID    uuid.UUID
	yield    func(Event) bool
	stopped  bool
	attempts map[string]int
	em       *emitter
}

func (r *runner[S, U]) emit(e Event) {
	if r.stopped {
		return
	}
	e.Thread, e.RunID = r.thread, r.runID
	if e.Time.IsZero() {
		e.Time = r.c.cfg.Now()
	}
	if !r.yield(e) {
		r.stopped = true
	}
}

type taskResult[U any] struct {
	update U
	err    error
	dur    time.Duration
	done   bool // taken from a pending write, not run
}

func (c *Compiled[S, U]) exec(ctx context.Context, thread string, st start[S], yield func(Event) bool) (res Result[S], err error) {
	res.Thread = thread
	if !c.lock(thread) {
		res.Status = StatusFailed
		return res, ErrThreadBusy
	}
	defer c.unlock(thread)

	r := &runner[S, U]{c: c, thread: thread, yield: yield, attempts: make(map[string]int, 8)}
	var (
		cp     checkpoint.Checkpoint
		writes []checkpoint.Write
		state  S
	)
	now := c.cfg.Now()
	if st.fresh {
		parent := uuid.Nil
		if t, gerr := c.cfg.Store.Get(ctx, thread, uuid.Nil); gerr == nil {
			parent = t.Checkpoint.ID
		} else if !errors.Is(gerr, checkpoint.ErrNotFound) {
			res.Status = StatusFailed
			return res, fmt.Errorf("graph: read thread %q: %w", thread, gerr)
		}
		r.runID = newID()
		state = st.input
		enc, merr := c.cfg.Codec.Marshal(state)
		if merr != nil {
			res.Status = StatusFailed
			return res, fmt.Errorf("graph: encode input state: %w", merr)
		}
		cp = checkpoint.Checkpoint{ThreadID: thread, ID: newID(), ParentID: parent, RunID: r.runID, Step: 0,
			State: enc, Next: c.entry, Created: now, Metadata: c.metadata(state)}
		if perr := c.cfg.Store.Put(ctx, cp); perr != nil {
			res.Status = StatusFailed
			return res, fmt.Errorf("graph: write checkpoint: %w", perr)
		}
		res.RunID = r.runID
		r.emit(Event{Kind: EventRunStart, Step: 0, To: cp.Next})
		r.emit(Event{Kind: EventCheckpoint, Step: 0, Checkpoint: cp.ID})
	} else {
		t, gerr := c.cfg.Store.Get(ctx, thread, uuid.Nil)
		if errors.Is(gerr, checkpoint.ErrNotFound) {
			res.Status = StatusFailed
			return res, fmt.Errorf("%w: thread %q has no checkpoint", ErrNoRun, thread)
		}
		if gerr != nil {
			res.Status = StatusFailed
			return res, fmt.Errorf("graph: read thread %q: %w", thread, gerr)
		}
		cp, writes = t.Checkpoint, t.Writes
		r.runID = cp.RunID
		res.RunID = r.runID
		if uerr := c.cfg.Codec.Unmarshal(cp.State, &state); uerr != nil {
			res.Status = StatusFailed
			return res, fmt.Errorf("graph: decode state of thread %q: %w", thread, uerr)
		}
		res.State, res.Checkpoint, res.Steps = state, cp.ID, cp.Step
		if len(cp.Next) == 0 {
			res.Status = StatusDone
			if st.hasValue {
				return res, fmt.Errorf("%w: thread %q", ErrNotInterrupted, thread)
			}
			return res, fmt.Errorf("%w: the last run of thread %q finished", ErrNoRun, thread)
		}
		pending := Interrupts(t)
		switch {
		case len(pending) > 0 && !st.hasValue:
			res.Status, res.Interrupts = StatusInterrupted, pending
			return res, nil
		case len(pending) == 0 && st.hasValue:
			res.Status = StatusFailed
			return res, fmt.Errorf("%w: thread %q", ErrNotInterrupted, thread)
		case len(pending) > 0:
			var rw []checkpoint.Write
			for _, p := range pending {
				rw = append(rw, checkpoint.Write{Task: p.Node, Kind: checkpoint.WriteResume, Value: st.value})
			}
			if perr := c.cfg.Store.PutWrites(ctx, thread, cp.ID, rw); perr != nil {
				res.Status = StatusFailed
				return res, fmt.Errorf("graph: write resume value: %w", perr)
			}
			kept := writes[:0:0]
			for _, w := range writes {
				if w.Kind != checkpoint.WriteInterrupt {
					kept = append(kept, w)
				}
			}
			writes = append(kept, rw...)
		}
		r.emit(Event{Kind: EventRunStart, Step: cp.Step, To: cp.Next, Checkpoint: cp.ID})
	}

	em := &emitter{emit: r.emit, base: Event{Thread: thread, RunID: r.runID}}
	r.em = em
	ctx = context.WithValue(ctx, emitterKey{}, em)

	finish := func(status Status, err error) (Result[S], error) {
		res.Status, res.State, res.Checkpoint, res.Steps = status, state, cp.ID, cp.Step
		r.emit(Event{Kind: EventRunEnd, Step: cp.Step, Err: err})
		return res, err
	}

	for len(cp.Next) > 0 {
		if cp.Step >= c.cfg.MaxSteps {
			return finish(StatusFailed, &StepLimitError{Limit: c.cfg.MaxSteps, Next: cp.Next})
		}
		if !cp.NotBefore.IsZero() {
			if d := cp.NotBefore.Sub(c.cfg.Now()); d > 0 {
				r.emit(Event{Kind: EventWait, Step: cp.Step, NotBefore: cp.NotBefore, To: cp.Next})
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
				}
			}
		}
		if cerr := ctx.Err(); cerr != nil || r.stopped {
			if cerr == nil {
				cerr = context.Canceled
			}
			return finish(StatusCanceled, cerr)
		}

		step := cp.Step + 1
		results, interrupts, failure := c.runStep(ctx, r, step, cp, writes, state)
		if failure != nil {
			if ctx.Err() != nil && (errors.Is(failure, context.Canceled) || errors.Is(failure, context.DeadlineExceeded)) {
				return finish(StatusCanceled, ctx.Err())
			}
			return finish(StatusFailed, failure)
		}
		if len(interrupts) > 0 {
			iw := make([]checkpoint.Write, len(interrupts))
			for i, ie := range interrupts {
				iw[i] = checkpoint.Write{Task: ie.Node, Kind: checkpoint.WriteInterrupt, Value: ie.Payload}
			}
			if perr := c.cfg.Store.PutWrites(ctx, thread, cp.ID, iw); perr != nil {
				return finish(StatusFailed, fmt.Errorf("graph: write interrupt: %w", perr))
			}
			for _, ie := range interrupts {
				r.emit(Event{Kind: EventInterrupt, Step: step, Node: ie.Node, Payload: ie.Payload})
			}
			res.Interrupts = interrupts
			return finish(StatusInterrupted, nil)
		}

		// Apply the updates in route order, then route from each node.
		next, notBefore, aerr := c.advance(&state, cp.Next, results)
		if aerr != nil {
			return finish(StatusFailed, aerr)
		}
		for _, name := range cp.Next {
			if !c.nodes[name].terminal {
				r.emit(Event{Kind: EventRoute, Step: step, Node: name, To: next, NotBefore: notBefore})
			}
		}
		enc, merr := c.cfg.Codec.Marshal(state)
		if merr != nil {
			return finish(StatusFailed, fmt.Errorf("graph: encode state after step %d: %w", step, merr))
		}
		ncp := checkpoint.Checkpoint{ThreadID: thread, ID: newID(), ParentID: cp.ID, RunID: r.runID, Step: step,
			State: enc, Next: next, NotBefore: notBefore, Created: c.cfg.Now(), Metadata: c.metadata(state)}
		if perr := c.cfg.Store.Put(ctx, ncp); perr != nil {
			return finish(StatusFailed, fmt.Errorf("graph: write checkpoint: %w", perr))
		}
		cp, writes = ncp, nil
		r.emit(Event{Kind: EventCheckpoint, Step: step, Checkpoint: cp.ID})
	}
	return finish(StatusDone, nil)
}

func (c *Compiled[S, U]) metadata(s S) map[string]string {
	if c.cfg.Metadata == nil {
		return nil
	}
	return c.cfg.Metadata(s)
}

// runStep runs the nodes of cp.Next that have no pending update, and returns
// their results in cp.Next order.
func (c *Compiled[S, U]) runStep(ctx context.Context, r *runner[S, U], step int, cp checkpoint.Checkpoint, writes []checkpoint.Write, state S) ([]taskResult[U], []*InterruptError, error) {
	next := cp.Next
	if len(next) == 1 && len(writes) == 0 {
		// Fast path: one node, nothing pending, run inline.
		d := c.nodes[next[0]]
		res := c.runTask(ctx, r, step, cp.ID, d, state, nil, r.em)
		return c.collect(step, []taskResult[U]{res}, next)
	}
	results := make([]taskResult[U], len(next))
	type todo struct {
		i      int
		resume json.RawMessage
	}
	var work []todo
	for i, name := range next {
		var (
			resume    json.RawMessage
			hasResume bool
			done      bool
		)
		for _, w := range writes {
			if w.Task != name {
				continue
			}
			switch w.Kind {
			case checkpoint.WriteUpdate:
				if err := c.cfg.Codec.Unmarshal(w.Value, &results[i].update); err != nil {
					return nil, nil, fmt.Errorf("graph: decode pending write of %q: %w", name, err)
				}
				results[i].done, done = true, true
			case checkpoint.WriteResume:
				resume, hasResume = w.Value, true
			}
		}
		if !done {
			if !hasResume {
				resume = nil
			}
			work = append(work, todo{i: i, resume: resume})
		}
	}
	if len(work) == 1 && len(next) == 1 {
		t := work[0]
		results[t.i] = c.runTask(ctx, r, step, cp.ID, c.nodes[next[t.i]], state, t.resume, r.em)
		return c.collect(step, results, next)
	}

	// Concurrent branches: events are buffered and yielded by this goroutine.
	var (
		mu     sync.Mutex
		buf    []Event
		notify = make(chan struct{}, 1)
		wg     sync.WaitGroup
		sem    = make(chan struct{}, c.cfg.MaxConcurrency)
	)
	push := func(e Event) {
		mu.Lock()
		buf = append(buf, e)
		mu.Unlock()
		select {
		case notify <- struct{}{}:
		default:
		}
	}
	pushFull := func(e Event) {
		e.Thread, e.RunID = r.thread, r.runID
		if e.Time.IsZero() {
			e.Time = c.cfg.Now()
		}
		push(e)
	}
	for _, t := range work {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				results[t.i] = taskResult[U]{err: ctx.Err()}
				return
			}
			defer func() { <-sem }()
			name := next[t.i]
			em := &emitter{emit: pushFull, base: Event{Thread: r.thread, RunID: r.runID, Step: step, Node: name}}
			res := c.runTask(ctx, r, step, cp.ID, c.nodes[name], state, t.resume, em)
			if res.err == nil {
				enc, err := c.cfg.Codec.Marshal(res.update)
				if err == nil {
					err = c.cfg.Store.PutWrites(ctx, r.thread, cp.ID, []checkpoint.Write{{Task: name, Kind: checkpoint.WriteUpdate, Value: enc}})
				}
				if err != nil {
					res.err = fmt.Errorf("graph: save result of %q: %w", name, err)
				}
			}
			results[t.i] = res
		}()
	}
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()
	drain := func() {
		mu.Lock()
		evs := buf
		buf = nil
		mu.Unlock()
		for _, e := range evs {
			r.emit(e)
		}
	}
	for waiting := true; waiting; {
		select {
		case <-notify:
			drain()
		case <-allDone:
			waiting = false
		}
	}
	drain()
	return c.collect(step, results, next)
}

// collect sorts task results into interrupts and the first failure, recording
// error writes for failed nodes.
func (c *Compiled[S, U]) collect(step int, results []taskResult[U], next []string) ([]taskResult[U], []*InterruptError, error) {
	var (
		interrupts []*InterruptError
		failure    error
	)
	for i, res := range results {
		if res.err == nil {
			continue
		}
		if ie, ok := IsInterrupt(res.err); ok {
			ie.Node = next[i]
			interrupts = append(interrupts, ie)
			continue
		}
		if failure == nil {
			failure = res.err
		}
	}
	return results, interrupts, failure
}

// runTask runs one node with panic recovery and emits its start and end.
func (c *Compiled[S, U]) runTask(ctx context.Context, r *runner[S, U], step int, cpID uuid.UUID, d *nodeDef[S, U], state S, resume json.RawMessage, em *emitter) taskResult[U] {
	attempt := c.bumpAttempt(r, d.name)
	em.base.Step, em.base.Node = step, d.name
	em.emit(Event{Kind: EventNodeStart, Thread: r.thread, RunID: r.runID, Step: step, Node: d.name, Attempt: attempt})
	nctx := ctx
	if resume != nil {
		nctx = WithResumeValue(ctx, resume)
	}
	t0 := time.Now()
	u, err := callNode(nctx, d, state)
	dur := time.Since(t0)
	if err != nil {
		if _, ok := IsInterrupt(err); !ok && !(ctx.Err() != nil && isCtxErr(err)) {
			var pe *PanicError
			if !errors.As(err, &pe) {
				err = &NodeError{Node: d.name, Step: step, Attempt: attempt, Err: err}
			}
			// Record the failure against the checkpoint so it stays inspectable.
			if b, merr := json.Marshal(err.Error()); merr == nil {
				_ = c.cfg.Store.PutWrites(context.WithoutCancel(ctx), r.thread, cpID, []checkpoint.Write{{Task: d.name, Kind: checkpoint.WriteError, Value: b}})
			}
		}
	}
	em.emit(Event{Kind: EventNodeEnd, Thread: r.thread, RunID: r.runID, Step: step, Node: d.name, Attempt: attempt, Duration: dur, Err: err})
	return taskResult[U]{update: u, err: err, dur: dur}
}

func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func (c *Compiled[S, U]) bumpAttempt(r *runner[S, U], name string) int {
	c.mu.Lock()
	r.attempts[name]++
	n := r.attempts[name]
	c.mu.Unlock()
	return n
}

func callNode[S, U any](ctx context.Context, d *nodeDef[S, U], s S) (u U, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Node: d.name, Value: v, Stack: string(debug.Stack())}
		}
	}()
	return d.fn(ctx, s)
}

// advance applies the step's updates to state in order and computes the next
// nodes from each node's edge.
func (c *Compiled[S, U]) advance(state *S, ran []string, results []taskResult[U]) ([]string, time.Time, error) {
	for i := range results {
		ns, err := c.cfg.Apply(*state, results[i].update)
		if err != nil {
			return nil, time.Time{}, &NodeError{Node: ran[i], Err: fmt.Errorf("apply update: %w", err)}
		}
		*state = ns
	}
	var (
		next      []string
		notBefore time.Time
		shared    bool // next aliases a route's own slice
	)
	for _, name := range ran {
		d := c.nodes[name]
		var to []string
		switch d.edge {
		case edgeNone:
			continue
		case edgeStatic:
			to = d.static
		case edgeConditional:
			rt := d.route(*state)
			to = rt.To
			if rt.NotBefore.After(notBefore) {
				notBefore = rt.NotBefore
			}
			for _, t := range to {
				if t != End && !d.targets[t] {
					return nil, time.Time{}, &InvalidTransitionError{From: name, To: t}
				}
			}
		}
		if len(ran) == 1 && !containsEnd(to) {
			next, shared = to, true
			break
		}
		for _, t := range to {
			if t == End || contains(next, t) {
				continue
			}
			if shared {
				next, shared = append([]string(nil), next...), false
			}
			next = append(next, t)
		}
	}
	return next, notBefore, nil
}

func containsEnd(s []string) bool { return contains(s, End) }

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
