package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// runner holds the per-call mutable data of exec. It is allocated once per
// call, so everything a step needs again and again lives here rather than in
// per-step allocations.
type runner[S, U any] struct {
	c       *Compiled[S, U]
	thread  string
	runID   uuid.UUID
	yield   func(Event) bool // the consumer of a Stream
	trace   *Trace           // the trace of a Run or Resume, when yield is nil
	stopped bool             // the consumer stopped listening
	inYield bool             // the consumer's code is running (a panic there is not ours)
	em      *emitter
	one     [1]taskResult[S, U] // results of a one-node step, reused

	attempts []int32   // starts per node, indexed by nodeDef.idx (see bumpAttempt)
	anchor   time.Time // the last wall-clock reading of now

	// Fields rather than locals, so they live in the one runner allocation
	// instead of escaping to the heap separately.
	state S
	emB   emitter

	// With the default JSON codec, states are encoded into a pooled buffer
	// reused by every step. This is safe because a Store must not keep the
	// slices of a checkpoint after Put returns (checkpointtest checks it).
	enc *stateEncoder

	scratch Event // the event being built (slot)

	// nextDef is the node the last route named, when it named one: the next
	// step's node if its name matches.
	nextDef *nodeDef[S, U]
	// nextMeta is the Route.Meta for every node of the next step (one route
	// named them all), or nextMetas one per node (several routes did).
	nextMeta  any
	nextMetas []any

	// async writes step checkpoints while the next step runs
	// (DurabilityAsync); nil under DurabilitySync.
	async *asyncWriter
	// waits counts the durable writes the run waited for (Result.CommitWaits).
	waits int
	// durableID and durableStep name the latest checkpoint known durable
	// (DurabilityAsync), which a run whose write failed reports.
	durableID   uuid.UUID
	durableStep int
}

// flush waits for the run's pending checkpoint writes (DurabilityAsync).
// Safe on any goroutine.
func (r *runner[S, U]) flush() error {
	if r.async == nil {
		return nil
	}
	return r.async.flush()
}

// reportWritten emits an EventCheckpoint for each checkpoint the async
// writer has made durable since the last call; on exec's goroutine.
func (r *runner[S, U]) reportWritten() {
	if r.async == nil {
		return
	}
	for _, w := range r.async.takeWritten() {
		r.durableID, r.durableStep = w.id, w.step
		r.event(EventCheckpoint, w.step, nil, 0, w.commit, nil, nil, time.Time{}, w.id, w.created)
	}
}

// metaOf returns the route metadata of the i-th node of the step.
func (r *runner[S, U]) metaOf(i int) any {
	if r.nextMetas != nil {
		return r.nextMetas[i]
	}
	return r.nextMeta
}

type stateEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
	app []byte // a JSONAppender's bytes
}

var encoders = sync.Pool{New: func() any {
	e := &stateEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	return e
}}

// encodeState encodes the state for a checkpoint. The result is only valid
// until the next call.
func (r *runner[S, U]) encodeState(s *S) ([]byte, error) {
	if _, ok := r.c.cfg.Codec.(jsonCodec); !ok {
		return r.c.cfg.Codec.Marshal(s)
	}
	if r.enc == nil {
		r.enc = encoders.Get().(*stateEncoder)
	}
	if a, ok := any(s).(JSONAppender); ok {
		b, err := a.AppendJSON(r.enc.app[:0])
		if err != nil {
			return nil, err
		}
		r.enc.app = b
		return b, nil
	}
	r.enc.buf.Reset()
	if err := r.enc.enc.Encode(s); err != nil {
		return nil, err
	}
	// Encode adds a newline that Marshal does not; drop it, so both
	// produce the same bytes.
	return bytes.TrimSuffix(r.enc.buf.Bytes(), []byte{'\n'}), nil
}

// release returns pooled resources; the runner is not used afterwards.
func (r *runner[S, U]) release() {
	if r.enc != nil && r.enc.buf.Cap() <= 1<<16 && cap(r.enc.app) <= 1<<16 {
		// Huge buffers are left to the GC rather than pinned in the pool.
		encoders.Put(r.enc)
	}
	r.enc = nil
}

// emit completes e and adds it to the trace (Run, Resume) or hands it to
// the consumer (Stream). Only the goroutine running exec calls it; concurrent
// branches buffer their events (see runStep).
func (r *runner[S, U]) emit(e *Event) {
	if r.stopped {
		return
	}
	e.Thread, e.RunID = r.thread, r.runID
	r.commit(e, -1)
}

// event hands on an event of the engine's own from exec's goroutine (a
// node's start and end in a one-node step, a route, a checkpoint). Its
// fields come as arguments, so that the trace records the common case
// without building an Event: a long run emits four per step.
func (r *runner[S, U]) event(kind EventKind, step int, d *nodeDef[S, U], attempt int, dur time.Duration, err error, to []string, nb time.Time, cp uuid.UUID, at time.Time) {
	if r.stopped {
		return
	}
	node := -1
	if d != nil {
		node = d.idx
	}
	if r.trace != nil && err == nil && nb.IsZero() && r.trace.rec(r.thread, r.runID, kind, step, node, attempt, dur, to, cp, at) {
		return
	}
	r.scratch = Event{Kind: kind, Thread: r.thread, RunID: r.runID, Step: step, Attempt: attempt, To: to,
		Duration: dur, Err: err, NotBefore: nb, Checkpoint: cp, Time: at}
	if d != nil {
		r.scratch.Node = d.name
	}
	r.commit(&r.scratch, node)
}

// commit completes e and adds it to the trace, as a compact record when it
// fits one (node is the index of e.Node when known, else -1), or hands it
// to the consumer.
func (r *runner[S, U]) commit(e *Event, node int) {
	if e.Time.IsZero() {
		e.Time = r.c.clock.Now()
	}
	if r.trace != nil {
		r.trace.add(e, node)
		return
	}
	r.inYield = true
	ok := r.yield(*e)
	r.inYield = false
	if !ok {
		r.stopped = true
	}
}

// emitValue is emit for an event passed by value: the emitter of a one-node
// step (Emit from inside the node).
func (r *runner[S, U]) emitValue(e Event) { r.emit(&e) }

// bumpAttempt counts a start of d. Concurrent branches count atomically; a
// one-node step runs alone (the branches of earlier steps have returned), so
// it needs no atomic instruction.
func (r *runner[S, U]) bumpAttempt(d *nodeDef[S, U], alone bool) int {
	if alone {
		r.attempts[d.idx]++
		return int(r.attempts[d.idx])
	}
	return int(atomic.AddInt32(&r.attempts[d.idx], 1))
}

// anchorAge bounds how long the system clock's wall reading is carried
// forward on the monotonic clock (see now).
const anchorAge = time.Millisecond

// now reads the clock on exec's goroutine. With the system clock it reads
// the wall clock at most once per anchorAge and otherwise adds the monotonic
// time elapsed since that reading: half the cost of time.Now, and the same
// time but for a wall-clock step in the last millisecond.
func (r *runner[S, U]) now() time.Time {
	if !r.c.systemClock {
		return r.c.clock.Now()
	}
	if !r.anchor.IsZero() {
		if d := time.Since(r.anchor); d >= 0 && d < anchorAge {
			return r.anchor.Add(d)
		}
	}
	r.anchor = time.Now()
	return r.anchor
}

type taskResult[S, U any] struct {
	def    *nodeDef[S, U]
	update U
	err    error
	dur    time.Duration
	end    time.Time // clock reading when the node returned
	done   bool      // taken from a pending write, not run
}

// exec runs or resumes a run on thread, handing every event to yield, or,
// when yield is nil, appending it to trace.
func (c *Compiled[S, U]) exec(ctx context.Context, thread string, st start[S], yield func(Event) bool, trace *Trace) (res Result[S], err error) {
	res.Thread = thread
	if thread == "" {
		res.Status = StatusFailed
		return res, ErrNoThread
	}
	if cerr := ctx.Err(); cerr != nil {
		res.Status = StatusCanceled
		return res, cerr
	}
	hold, berr := c.threads.enter(ctx, thread)
	if berr != nil {
		res.Status = StatusFailed
		return res, berr
	}
	defer c.threads.leave(thread, hold)

	r := &runner[S, U]{c: c, thread: thread, yield: yield, trace: trace, attempts: make([]int32, len(c.order))}
	defer r.release()
	if c.cfg.Durability == DurabilityAsync {
		r.async = &asyncWriter{store: c.cfg.Store, ctx: ctx, inPlace: checkpoint.IsInMemory(c.cfg.Store)}
		defer func() {
			// Whatever way the run ends (a panic included), no write is
			// left running once the thread is released.
			_ = r.async.flush()
			res.CommitWaits = r.waits + r.async.waits
		}()
	} else {
		defer func() { res.CommitWaits = r.waits }()
	}
	defer func() {
		// Nodes, routes and Apply have their own recovery naming the node;
		// this catches what is left (a Codec, the Metadata function, a
		// Store), so that no panic crosses Run.
		if v := recover(); v != nil {
			if r.inYield {
				// The consumer's loop body panicked: that panic is theirs,
				// and range-over-func requires it to keep going.
				panic(v)
			}
			res.Status = StatusFailed
			err = &PanicError{Value: v, Stack: string(debug.Stack())}
			r.emit(&Event{Kind: EventRunEnd, Err: err})
		}
	}()
	state := &r.state
	cp, writes, stop, err := c.begin(ctx, r, thread, st, &res)
	if stop {
		return res, err
	}

	r.emB.emit = r.emitValue
	r.em = &r.emB
	ctx = context.WithValue(ctx, emitterKey{}, r.em)
	if r.async != nil {
		ctx = context.WithValue(ctx, flushKey{}, r.async)
	}

	finish := func(status Status, err error) (Result[S], error) {
		// Every checkpoint of the run is durable before its end is
		// reported: a caller that saw the end finds it after a crash.
		ferr := r.flush()
		r.reportWritten()
		res.State, res.Checkpoint, res.Steps = *state, cp.ID, cp.Step
		if ferr != nil {
			// An async write failed: the checkpoints after the last durable
			// one are not on disk, and Resume starts from that one.
			res.Checkpoint, res.Steps = r.durableID, r.durableStep
			if status != StatusFailed {
				status, err = StatusFailed, ferr
			}
		}
		if status == StatusFailed && ctx.Err() != nil && isCtxErr(err) {
			// A store or node gave up because the run was canceled: the run
			// did not fail, it stopped, and Resume continues it.
			status, err = StatusCanceled, ctx.Err()
		}
		res.Status = status
		end := Event{Kind: EventRunEnd, Step: cp.Step, Err: err}
		if status == StatusWaiting {
			end.NotBefore = cp.NotBefore
		}
		if status == StatusDone {
			// The state of the last checkpoint, so that a Stream consumer
			// need not read it back from the store and decode it.
			end.Payload = *state
		}
		r.emit(&end)
		return res, err
	}

	for len(cp.Next) > 0 {
		if cp.Step >= c.cfg.MaxSteps {
			serr := &StepLimitError{Limit: c.cfg.MaxSteps, Next: cp.Next}
			_ = r.flush() // the error is written against cp, which must exist
			c.recordError(ctx, thread, cp.ID, cp.Next, serr)
			return finish(StatusFailed, serr)
		}
		if !cp.NotBefore.IsZero() {
			// A durable delay: the time is in the checkpoint, so a resumed run
			// waits only what is left of it.
			if now := c.clock.Now(); cp.NotBefore.After(now) {
				r.emit(&Event{Kind: EventWait, Step: cp.Step, NotBefore: cp.NotBefore, To: cp.Next})
				if park := parkAfter(ctx); park > 0 && cp.NotBefore.Sub(now) > park {
					// Parked: the caller resumes the run at NotBefore.
					res.NotBefore = cp.NotBefore
					return finish(StatusWaiting, nil)
				}
				if werr := c.clock.WaitUntil(ctx, cp.NotBefore); werr != nil && ctx.Err() == nil {
					// Not a cancellation (checked below): the Clock failed.
					return finish(StatusFailed, fmt.Errorf("graph: wait until %s: %w", cp.NotBefore.Format(time.RFC3339Nano), werr))
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
		results, interrupts, failure := c.runStep(ctx, r, step, cp, writes, *state)
		if failure != nil {
			return finish(StatusFailed, failure)
		}
		if len(interrupts) > 0 {
			if ierr := c.interrupt(ctx, r, thread, cp.ID, step, interrupts); ierr != nil {
				return finish(StatusFailed, ierr)
			}
			res.Interrupts = interrupts
			return finish(StatusInterrupted, nil)
		}
		ncp, cerr := c.commitStep(ctx, r, thread, step, state, cp, results)
		if cerr != nil {
			return finish(StatusFailed, cerr)
		}
		cp, writes = ncp, nil
	}
	return finish(StatusDone, nil)
}

// interrupt records the step's interrupts against checkpoint cpID, once it
// and every checkpoint before it are durable, and reports them. A function
// of its own for the reason begin is.
//
//go:noinline
func (c *Compiled[S, U]) interrupt(ctx context.Context, r *runner[S, U], thread string, cpID uuid.UUID, step int, interrupts []*InterruptError) error {
	iw := make([]checkpoint.Write, len(interrupts))
	for i, ie := range interrupts {
		iw[i] = checkpoint.Write{Task: ie.Node, Kind: checkpoint.WriteInterrupt, Value: ie.Payload}
	}
	// The question is reported only once the checkpoint it is
	// asked against, and every one before, is durable.
	if ferr := r.flush(); ferr != nil {
		return ferr
	}
	r.reportWritten()
	if perr := c.cfg.Store.PutWrites(ctx, thread, cpID, iw); perr != nil {
		return fmt.Errorf("graph: write interrupt: %w", perr)
	}
	for _, ie := range interrupts {
		r.emit(&Event{Kind: EventInterrupt, Step: step, Node: ie.Node, Payload: ie.Payload})
	}
	return nil
}

// commitStep applies a step's results to the state and writes its
// checkpoint (under DurabilityAsync, queues it), returning it without its
// state bytes. A function of its own for the reason begin is.
//
//go:noinline
func (c *Compiled[S, U]) commitStep(ctx context.Context, r *runner[S, U], thread string, step int, state *S, cp checkpoint.Checkpoint, results []taskResult[S, U]) (checkpoint.Checkpoint, error) {
	// One clock reading stamps the route events, the checkpoint and its id:
	// in a one-node step, the one taken when the node returned.
	now := results[0].end
	if len(results) > 1 || results[0].done {
		now = c.clock.Now()
	}
	next, notBefore, aerr := c.advance(r, step, now, state, cp.Next, results)
	if aerr != nil {
		return checkpoint.Checkpoint{}, aerr
	}
	ncp := checkpoint.Checkpoint{ThreadID: thread, ID: newIDAt(now), ParentID: cp.ID, RunID: r.runID, Step: step,
		Next: next, NotBefore: notBefore, Created: now, Metadata: c.metadata(*state)}
	if r.async != nil && c.valueState && checkpoint.Transient(ctx, ncp) {
		// Held as a value, encoded only if a barrier writes it.
		if qerr := r.async.holdValue(ncp, c.encodeLater(*state, step)); qerr != nil {
			return checkpoint.Checkpoint{}, qerr
		}
		r.reportWritten()
		return ncp, nil
	}
	enc, merr := r.encodeState(state)
	if merr != nil {
		return checkpoint.Checkpoint{}, &EncodeError{What: fmt.Sprintf("the state after step %d", step), Err: merr}
	}
	ncp.State = enc
	if r.async != nil {
		// Written while the next step runs: the writer gets its own
		// copy of the state, as the encode buffer is reused.
		ncp.State = bytes.Clone(enc)
		if qerr := r.async.queueStep(ncp); qerr != nil {
			return checkpoint.Checkpoint{}, qerr
		}
		ncp.State = nil
		// Its EventCheckpoint follows once it is durable.
		r.reportWritten()
		return ncp, nil
	}
	r.waits++
	pctx, release := saveCtx(ctx)
	putAt := r.now()
	perr := c.cfg.Store.Put(pctx, ncp)
	commit := r.now().Sub(putAt)
	release()
	if perr != nil {
		return checkpoint.Checkpoint{}, fmt.Errorf("graph: write checkpoint: %w", perr)
	}
	ncp.State = nil // the encode buffer is reused by the next step
	r.event(EventCheckpoint, step, nil, 0, commit, nil, nil, time.Time{}, ncp.ID, now)
	return ncp, nil
}

// encodeLater returns what encodes s, the state after step (0: the
// input), when a barrier writes the checkpoint holding it (holdValue). s
// is a ValueState: what runs meanwhile changes other values, not s.
func (c *Compiled[S, U]) encodeLater(s S, step int) func() ([]byte, error) {
	return func() ([]byte, error) {
		enc, err := c.cfg.Codec.Marshal(&s)
		if err != nil {
			what := fmt.Sprintf("the state after step %d", step)
			if step == 0 {
				what = "the input state"
			}
			return nil, &EncodeError{What: what, Err: err}
		}
		return enc, nil
	}
}

// begin reads or writes the checkpoint the run starts from: the input
// checkpoint of a new run, or the latest one (with a resume value's answer
// checkpoint) of a resumed one. stop: the run ends here, with res and err.
// A function of its own, so that exec's frame — on the run's stack under
// every node, while a model answers — holds none of its locals
// (docs/performance.md, "Memory per live conversation").
//
//go:noinline
func (c *Compiled[S, U]) begin(ctx context.Context, r *runner[S, U], thread string, st start[S], res *Result[S]) (cp checkpoint.Checkpoint, writes []checkpoint.Write, stop bool, err error) {
	state := &r.state
	fail := func(err error) (checkpoint.Checkpoint, []checkpoint.Write, bool, error) {
		res.Status = StatusFailed
		return cp, writes, true, err
	}
	if st.fresh {
		parent := uuid.Nil
		r.runID = uuid.Nil
		latest, known := latestOf(ctx, thread)
		if !known {
			t, gerr := c.cfg.Store.Get(ctx, thread, uuid.Nil)
			if gerr != nil && !errors.Is(gerr, checkpoint.ErrNotFound) {
				return fail(fmt.Errorf("graph: read thread %q: %w", thread, gerr))
			}
			latest = latestRead{cp: t.Checkpoint, found: gerr == nil}
		}
		if latest.found {
			parent = latest.cp.ID
			if isInitial(latest.cp) {
				// The thread's first run takes its Init checkpoint's run id:
				// that checkpoint is then one of the run's own, pruned with
				// its intermediate ones once it ends.
				r.runID = latest.cp.RunID
			}
		}
		if r.runID == uuid.Nil {
			r.runID = newID()
		}
		*state = st.input
		cp = checkpoint.Checkpoint{ThreadID: thread, ID: newID(), ParentID: parent, RunID: r.runID, Step: 0,
			Next: c.entry, Created: c.clock.Now(), Metadata: c.metadata(*state)}
		res.RunID = r.runID
		if r.async != nil && inputKept(ctx) && c.valueState && checkpoint.Transient(ctx, cp) {
			// As a step's: held as a value, encoded only if a barrier
			// writes it.
			if qerr := r.async.holdValue(cp, c.encodeLater(*state, 0)); qerr != nil {
				return fail(qerr)
			}
			r.emit(&Event{Kind: EventRunStart, Step: 0, To: cp.Next})
			return cp, writes, false, nil
		}
		enc, merr := c.cfg.Codec.Marshal(state)
		if merr != nil {
			return fail(&EncodeError{What: "the input state", Err: merr})
		}
		cp.State = enc
		if r.async != nil && inputKept(ctx) {
			// The caller keeps the input (WithInputKept): written while
			// the first step runs, its EventCheckpoint once it is durable;
			// held like a step's when the run's end prunes it.
			if qerr := r.async.queueStep(cp); qerr != nil {
				return fail(qerr)
			}
			r.emit(&Event{Kind: EventRunStart, Step: 0, To: cp.Next})
		} else {
			// Otherwise the input checkpoint is durable before the run
			// starts in every mode: a caller told that the run started can
			// find it after a crash.
			r.waits++
			if perr := c.cfg.Store.Put(ctx, cp); perr != nil {
				return fail(fmt.Errorf("graph: write checkpoint: %w", perr))
			}
			r.durableID = cp.ID
			r.emit(&Event{Kind: EventRunStart, Step: 0, To: cp.Next})
			r.emit(&Event{Kind: EventCheckpoint, Step: 0, Checkpoint: cp.ID})
		}
	} else {
		t, gerr := c.cfg.Store.Get(ctx, thread, uuid.Nil)
		if errors.Is(gerr, checkpoint.ErrNotFound) {
			return fail(fmt.Errorf("%w: thread %q has no checkpoint", ErrNoRun, thread))
		}
		if gerr != nil {
			return fail(fmt.Errorf("graph: read thread %q: %w", thread, gerr))
		}
		cp, writes = t.Checkpoint, t.Writes
		r.durableID, r.durableStep = cp.ID, cp.Step
		r.runID = cp.RunID
		res.RunID = r.runID
		if uerr := c.cfg.Codec.Unmarshal(cp.State, state); uerr != nil {
			return fail(fmt.Errorf("graph: decode state of thread %q: %w", thread, uerr))
		}
		res.State, res.Checkpoint, res.Steps = *state, cp.ID, cp.Step
		if len(cp.Next) == 0 {
			res.Status = StatusDone
			if st.hasValue {
				return cp, writes, true, fmt.Errorf("%w: thread %q", ErrNotInterrupted, thread)
			}
			return cp, writes, true, fmt.Errorf("%w: the last run of thread %q finished", ErrNoRun, thread)
		}
		pending := Interrupts(t)
		switch {
		case len(pending) > 0 && !st.hasValue:
			res.Status, res.Interrupts = StatusInterrupted, pending
			return cp, writes, true, nil
		case len(pending) == 0 && st.hasValue:
			return fail(fmt.Errorf("%w: thread %q", ErrNotInterrupted, thread))
		}
		r.emit(&Event{Kind: EventRunStart, Step: cp.Step, To: cp.Next, Checkpoint: cp.ID})
		if len(pending) > 0 {
			// The answer goes into a new checkpoint (same step, state and next
			// nodes) holding the resume values and the updates of branches that
			// had finished. The interrupt writes stay behind on the parent, so
			// the latest checkpoint never holds both a question and its answer:
			// if the re-entered node interrupts again, its new interrupt is
			// unambiguous, and if this run crashes, Resume(nil) re-enters the
			// node with the answer already given.
			ncp := cp
			ncp.ID, ncp.ParentID, ncp.Created = newID(), cp.ID, c.clock.Now()
			var carried []checkpoint.Write
			for _, w := range writes {
				if w.Kind == checkpoint.WriteUpdate {
					carried = append(carried, w)
				}
			}
			for _, p := range pending {
				carried = append(carried, checkpoint.Write{Task: p.Node, Kind: checkpoint.WriteResume, Value: st.value})
			}
			r.waits++
			if perr := c.putAnswer(ctx, ncp, carried); perr != nil {
				return fail(perr)
			}
			cp, writes = ncp, carried
			res.Checkpoint = cp.ID
			r.durableID = cp.ID
			r.emit(&Event{Kind: EventCheckpoint, Step: cp.Step, Checkpoint: cp.ID})
		}
	}
	return cp, writes, false, nil
}

// putAnswer stores the checkpoint that answers an interrupt with its writes
// (the resume values, the updates of finished branches). A store that is a
// checkpoint.TuplePutter writes them in one transaction, so a crash keeps
// the answer whole or leaves the thread interrupted as it was; with any
// other store a crash between the two writes loses the answer (the thread
// then reads as cut, and Resume re-enters the node without it).
func (c *Compiled[S, U]) putAnswer(ctx context.Context, cp checkpoint.Checkpoint, writes []checkpoint.Write) error {
	if tp, ok := c.cfg.Store.(checkpoint.TuplePutter); ok {
		if err := tp.PutTuple(ctx, checkpoint.Tuple{Checkpoint: cp, Writes: writes}); err != nil {
			return fmt.Errorf("graph: write resume value: %w", err)
		}
		return nil
	}
	if err := c.cfg.Store.Put(ctx, cp); err != nil {
		return fmt.Errorf("graph: write checkpoint: %w", err)
	}
	if err := c.cfg.Store.PutWrites(ctx, cp.ThreadID, cp.ID, writes); err != nil {
		return fmt.Errorf("graph: write resume value: %w", err)
	}
	return nil
}

// recordError records err against the checkpoint for each of nodes, so that
// the stored thread shows a failed run (see StatusOf). Best effort and not
// canceled with the run: the error is returned to the caller either way.
func (c *Compiled[S, U]) recordError(ctx context.Context, thread string, cpID uuid.UUID, nodes []string, err error) {
	b, merr := json.Marshal(err.Error())
	if merr != nil {
		return
	}
	ws := make([]checkpoint.Write, len(nodes))
	for i, n := range nodes {
		ws[i] = checkpoint.Write{Task: n, Kind: checkpoint.WriteError, Value: b}
	}
	_ = c.cfg.Store.PutWrites(context.WithoutCancel(ctx), thread, cpID, ws)
}

func (c *Compiled[S, U]) metadata(s S) map[string]string {
	if c.cfg.Metadata == nil {
		return nil
	}
	return c.cfg.Metadata(s)
}

// advance applies the step's updates to state in route order, then routes
// from each node that ran (seeing the merged state) and emits each decision.
// The next nodes are the union of the destinations in that order, without
// duplicates and without End.
func (c *Compiled[S, U]) advance(r *runner[S, U], step int, now time.Time, state *S, ran []string, results []taskResult[S, U]) ([]string, time.Time, error) {
	for i := range results {
		ns, err := safeApply(c.cfg.Apply, ran[i], *state, results[i].update)
		if err != nil {
			var pe *PanicError
			if errors.As(err, &pe) {
				return nil, time.Time{}, err
			}
			return nil, time.Time{}, &NodeError{Node: ran[i], Step: step, Err: fmt.Errorf("apply update: %w", err)}
		}
		*state = ns
	}
	var (
		next      []string
		notBefore time.Time
		shared    bool  // next aliases a route's own slice; copy before appending
		metas     []any // per node of next, once some route carries Meta
	)
	r.nextMeta, r.nextMetas = nil, nil
	for i, name := range ran {
		d := results[i].def
		if d == nil {
			d = c.nodes[name]
		}
		var (
			to   []string
			nb   time.Time
			meta any
			dest *nodeDef[S, U] // the node of to[0]
		)
		switch d.edge {
		case edgeNone:
			continue
		case edgeStatic:
			to, dest = d.static, d.staticDest
		case edgeConditional:
			rt, err := safeRoute(d, *state)
			if err != nil {
				return nil, time.Time{}, err
			}
			to, nb, meta = rt.To, rt.NotBefore, rt.Meta
			if rt.NotBefore.After(notBefore) {
				notBefore = rt.NotBefore
			}
			for j, t := range to {
				td, ok := d.dests[t]
				if !ok {
					return nil, time.Time{}, &InvalidTransitionError{From: name, To: t}
				}
				if j == 0 {
					dest = td
				}
			}
		}
		r.event(EventRoute, step, d, 0, 0, nil, to, nb, uuid.Nil, now)
		if len(ran) == 1 && clean(to) {
			// The common case keeps the route's slice: no allocation.
			next, shared = to, true
			r.nextMeta = meta
			if len(to) == 1 {
				r.nextDef = dest // the next step's node, found without a lookup
			}
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
			if meta != nil && metas == nil {
				metas = make([]any, len(next)-1, len(next)) // the nodes named before carry none
			}
			if metas != nil {
				metas = append(metas, meta) // a node named twice keeps the first route's
			}
		}
	}
	r.nextMetas = metas
	return next, notBefore, nil
}

// safeApply calls the user's Apply, turning a panic into a *PanicError
// naming the node whose update it was applying: Apply, like a node, is
// application code, and a panic in it must fail the run, not the process.
func safeApply[S, U any](apply ApplyFunc[S, U], node string, s S, u U) (ns S, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Node: node, Value: fmt.Sprintf("in Apply: %v", v), Stack: string(debug.Stack())}
		}
	}()
	return apply(s, u)
}

// safeRoute calls a node's route function, turning a panic into a
// *PanicError naming the node.
func safeRoute[S, U any](d *nodeDef[S, U], s S) (rt Route, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Node: d.name, Value: fmt.Sprintf("in route: %v", v), Stack: string(debug.Stack())}
		}
	}()
	return d.route(s), nil
}

// clean reports whether to holds neither End nor a duplicate, so it can be
// used as the next nodes as it is.
func clean(to []string) bool {
	for i, t := range to {
		if t == End || contains(to[:i], t) {
			return false
		}
	}
	return true
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// saveGrace bounds how long the engine keeps saving finished work after the
// run was canceled.
const saveGrace = 5 * time.Second

// saveCtx is the context for saving work that is already done (a finished
// step's checkpoint, a finished branch's update). A cancellation that arrives
// after the node returned must not throw its result away, or Resume would run
// the node again; so the save is not canceled with ctx: once ctx is done,
// before the save or during it (a store's write queued behind another
// commit gives up on its context), it gets saveGrace of its own.
func saveCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Err() != nil {
		return context.WithTimeout(context.WithoutCancel(ctx), saveGrace)
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(saveGrace, cancel) })
	return sctx, func() {
		stop()
		cancel()
	}
}

func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
