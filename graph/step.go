package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// runStep runs the nodes of cp.Next that have no pending update, and returns
// the results of all of them in cp.Next order: the interrupts raised and the
// first failure (in that order) separately.
func (c *Compiled[S, U]) runStep(ctx context.Context, r *runner[S, U], step int, cp checkpoint.Checkpoint, writes []checkpoint.Write, state S) ([]taskResult[S, U], []*InterruptError, error) {
	next := cp.Next
	if len(next) == 1 && len(writes) == 0 {
		// Fast path: one node, nothing pending, run inline with a reused
		// result slot. Its update needs no pending write: the checkpoint
		// written right after the step holds it.
		d := r.nextDef
		if d == nil || d.name != next[0] {
			d = c.nodes[next[0]]
		}
		r.em.meta = r.metaOf(0)
		r.one[0] = c.runTask(ctx, r, step, cp.ID, d, state, nil, r.em)
		return c.collect(r.one[:], next)
	}
	results := make([]taskResult[S, U], len(next))
	type todo struct {
		i      int
		resume json.RawMessage
	}
	var work []todo
	for i, name := range next {
		results[i].def = c.nodes[name]
		var (
			resume json.RawMessage
			done   bool
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
				resume = w.Value
				if resume == nil {
					// A resume value is never nil for a re-entered node:
					// ResumeValue reports ok by the value's presence.
					resume = json.RawMessage("null")
				}
			}
		}
		if !done {
			work = append(work, todo{i: i, resume: resume})
		}
	}
	if len(work) == 1 && len(next) == 1 {
		t := work[0]
		r.em.meta = r.metaOf(t.i)
		results[t.i] = c.runTask(ctx, r, step, cp.ID, c.nodes[next[t.i]], state, t.resume, r.em)
		return c.collect(results, next)
	}

	// Concurrent branches. Only this goroutine may call r.emit (the consumer's
	// yield is not safe for concurrent use), so branches buffer their events
	// and this goroutine hands them over as they come.
	cpID := cp.ID // captured by the branches; capturing cp would move it to the heap on every step
	var (
		mu     sync.Mutex
		buf    []Event
		notify = make(chan struct{}, 1)
		wg     sync.WaitGroup
		sem    = make(chan struct{}, c.cfg.MaxConcurrency)
	)
	push := func(e Event) {
		e.Thread, e.RunID = r.thread, r.runID
		if e.Time.IsZero() {
			e.Time = c.clock.Now()
		}
		mu.Lock()
		buf = append(buf, e)
		mu.Unlock()
		select {
		case notify <- struct{}{}:
		default:
		}
	}
	for _, t := range work {
		wg.Add(1)
		go func() {
			finished := false
			defer func() {
				// A panic outside the node (the Codec, the Store) or a
				// runtime.Goexit in the node must not leave an empty result
				// that reads as success, nor crash the process.
				if v := recover(); v != nil {
					results[t.i] = taskResult[S, U]{err: &PanicError{Node: next[t.i], Value: v, Stack: string(debug.Stack())}}
				} else if !finished {
					results[t.i] = taskResult[S, U]{err: &NodeError{Node: next[t.i], Step: step, Err: errGoexit}}
				}
				wg.Done()
			}()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				results[t.i] = taskResult[S, U]{err: ctx.Err()}
				finished = true
				return
			}
			defer func() { <-sem }()
			name := next[t.i]
			// Each branch has its own emitter, so Emit from inside the node
			// goes through the buffer, tagged with the branch's node.
			em := &emitter{emit: push, meta: r.metaOf(t.i)}
			bctx := context.WithValue(ctx, emitterKey{}, em)
			res := c.runTask(bctx, r, step, cpID, c.nodes[name], state, t.resume, em)
			if res.err == nil {
				// Record the finished branch, so a resume after a crash, an
				// interrupt or a sibling's failure does not run it again.
				enc, err := c.cfg.Codec.Marshal(&res.update)
				if err != nil {
					err = &EncodeError{What: fmt.Sprintf("the update of %q", name), Err: err}
				} else if err = r.flush(); err == nil { // the write is against cpID, which must exist
					sctx, release := saveCtx(ctx)
					err = c.cfg.Store.PutWrites(sctx, r.thread, cpID, []checkpoint.Write{{Task: name, Kind: checkpoint.WriteUpdate, Value: enc}})
					release()
				}
				if err != nil {
					res.err = fmt.Errorf("graph: save result of %q: %w", name, err)
				}
			}
			results[t.i] = res
			finished = true
		}()
	}
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()
	drain := func() {
		mu.Lock()
		evs := buf
		buf = nil
		mu.Unlock()
		for i := range evs {
			r.emit(&evs[i])
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
	return c.collect(results, next)
}

// errGoexit is the cause of a NodeError for a branch whose node called
// runtime.Goexit (t.FailNow in a test, for instance) instead of returning.
var errGoexit = errors.New("the node exited its goroutine without returning")

// collect sorts task results into interrupts and the first failure in route
// order.
func (c *Compiled[S, U]) collect(results []taskResult[S, U], next []string) ([]taskResult[S, U], []*InterruptError, error) {
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

// runTask runs one node with panic recovery and emits its start and end. A
// failure (not an interrupt, not the run's own cancellation) is also recorded
// as an error write against the checkpoint, so the thread shows it as failed.
func (c *Compiled[S, U]) runTask(ctx context.Context, r *runner[S, U], step int, cpID uuid.UUID, d *nodeDef[S, U], state S, resume json.RawMessage, em *emitter) taskResult[S, U] {
	inline := em == r.em // a one-node step, run on exec's goroutine
	attempt := r.bumpAttempt(d, inline)
	em.base.Step, em.base.Node = step, d.name
	// The clock is read twice per node, and the start and end events reuse
	// the readings: on a 1 µs transition every clock read counts. Durations
	// are measured with the Clock, so a test clock gives test durations.
	var t0 time.Time
	if inline {
		t0 = r.now()
	} else {
		t0 = c.clock.Now()
	}
	if !inline {
		em.emit(Event{Kind: EventNodeStart, Step: step, Node: d.name, Attempt: attempt, Time: t0})
	} else {
		r.event(EventNodeStart, step, d, attempt, 0, nil, nil, time.Time{}, uuid.Nil, t0)
	}
	nctx := ctx
	if resume != nil {
		nctx = WithResumeValue(ctx, resume)
	}
	u, err := callNode(nctx, d, state)
	var t1 time.Time
	if c.systemClock {
		// The monotonic clock alone: half the cost of time.Now, and the
		// same reading it would give.
		t1 = t0.Add(time.Since(t0))
	} else {
		t1 = c.clock.Now()
	}
	dur := t1.Sub(t0)
	if err != nil {
		if ie, ok := IsInterrupt(err); ok {
			ie.Node = d.name
		} else if !(ctx.Err() != nil && isCtxErr(err)) {
			var pe *PanicError
			if !errors.As(err, &pe) {
				err = &NodeError{Node: d.name, Step: step, Attempt: attempt, Err: err}
			}
			_ = r.flush() // the error is written against cpID, which must exist
			c.recordError(ctx, r.thread, cpID, []string{d.name}, err)
		}
	}
	if !inline {
		em.emit(Event{Kind: EventNodeEnd, Step: step, Node: d.name, Attempt: attempt, Duration: dur, Err: err, Time: t1})
	} else {
		r.event(EventNodeEnd, step, d, attempt, dur, err, nil, time.Time{}, uuid.Nil, t1)
	}
	return taskResult[S, U]{def: d, update: u, err: err, dur: dur, end: t1}
}

// callNode calls the node, turning a panic into a *PanicError with the stack.
func callNode[S, U any](ctx context.Context, d *nodeDef[S, U], s S) (u U, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Node: d.name, Value: v, Stack: string(debug.Stack())}
		}
	}()
	return d.fn(ctx, s)
}
