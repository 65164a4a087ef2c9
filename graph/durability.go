package graph

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// Durability says when the checkpoint a step writes must be durable.
type Durability string

const (
	// DurabilitySync (the default, also spelled ""): a step's checkpoint is
	// durable before the next step starts. A crash loses no finished step.
	DurabilitySync Durability = "sync"
	// DurabilityAsync: a step's checkpoint is written while the next step
	// runs, in step order, and the run waits for every pending write at its
	// barriers: Flush (which a node calls before a side effect), an
	// interrupt, a failure recorded against a checkpoint, a parallel
	// branch's saved result, and the run's end (before the run_end event).
	// The input checkpoint of a run and a resume's answer are written
	// before anything runs, as in sync. A crash may lose the checkpoints
	// written since the last barrier: the run then resumes from an earlier
	// step and runs again only steps that, not having called Flush, did
	// nothing but read. A step checkpoint the run's last will prune at once
	// (checkpoint.Transient) is not written unless a barrier comes while it
	// is the latest. An EventCheckpoint still means the checkpoint is
	// durable: it comes once written, so after events of the next step.
	DurabilityAsync Durability = "async"
)

// Durabilities lists the valid values, for configuration errors.
var Durabilities = []Durability{DurabilitySync, DurabilityAsync}

// Valid reports whether d is a known mode ("" is sync).
func (d Durability) Valid() bool { return d == "" || d == DurabilitySync || d == DurabilityAsync }

type flushKey struct{}

type inputKeptKey struct{}

// WithInputKept says that whoever starts the runs under ctx keeps each
// run's input durably and starts the run again from it after a crash (a
// server's run record). Under DurabilityAsync such a run's input
// checkpoint is then written like a step's, while the first step runs,
// instead of before it, or not at all when the run's end prunes it and no
// barrier comes before the next step's replaces it: a crash before it is
// on disk leaves the thread as it was, and the caller runs the input
// again. The first barrier (a side effect's Flush, an interrupt, the run's
// end) waits for it as for any step's. Under DurabilitySync it changes
// nothing.
func WithInputKept(ctx context.Context) context.Context {
	return context.WithValue(ctx, inputKeptKey{}, true)
}

// inputKept reports WithInputKept.
func inputKept(ctx context.Context) bool {
	kept, _ := ctx.Value(inputKeptKey{}).(bool)
	return kept
}

// Flush waits until every checkpoint the current run has written so far is
// durable, and returns the error of a write that failed. A node calls it
// before it does anything that must not be repeated (a side effect, or the
// durable record that one starts): after a crash, the run resumes from a
// checkpoint at least as recent as the one the node ran from, so the node
// is re-entered with the same state rather than an earlier step running
// again and deciding differently. Under DurabilitySync, or outside a run,
// it returns nil at once.
func Flush(ctx context.Context) error {
	w, ok := ctx.Value(flushKey{}).(*asyncWriter)
	if !ok {
		return nil
	}
	return w.flush()
}

// asyncWriter writes one run's step checkpoints in order on a goroutine of
// its own (DurabilityAsync). A failed write stops it: the checkpoints after
// it are dropped (their parent may be missing) and every later queue or
// flush returns the error.
type asyncWriter struct {
	store checkpoint.Store
	ctx   context.Context // the run's: its values (pruning) go with each Put

	mu      sync.Mutex
	pending []checkpoint.Checkpoint
	// held is the latest transient step checkpoint (queueStep), not yet
	// handed to drain: written by the next barrier, or never, when the
	// next step's replaces it or the run's last prunes it.
	held *checkpoint.Checkpoint
	// encodeHeld, when set, encodes held's state, not encoded yet
	// (holdValue): done only when a barrier writes it.
	encodeHeld func() ([]byte, error)
	inPlace    bool          // the store is in memory: written by start itself
	running    bool          // a drain goroutine is writing
	idle       chan struct{} // closed when the drain goroutine stops
	err        error
	waits      int       // barriers that found writes outstanding (Result.CommitWaits)
	written    []written // durable, not yet reported by a checkpoint event
}

// written is a checkpoint the writer made durable: the run reports it with
// an EventCheckpoint, which in every mode means the checkpoint is on disk.
type written struct {
	step    int
	id      uuid.UUID
	created time.Time
	commit  time.Duration
}

// takeWritten returns the checkpoints written since the last call.
func (w *asyncWriter) takeWritten() []written {
	w.mu.Lock()
	defer w.mu.Unlock()
	ws := w.written
	w.written = nil
	return ws
}

// queue hands cp (whose State the writer now owns) to the writer.
func (w *asyncWriter) queue(cp checkpoint.Checkpoint) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.held != nil {
		// A checkpoint is held only under pruning at once (Transient),
		// so one that ends the run prunes it in its own Put: it need not
		// be written. Any other goes after it, in step order.
		if len(cp.Next) > 0 {
			if err := w.releaseHeldLocked(); err != nil {
				return err
			}
		} else {
			w.dropHeldLocked()
		}
	}
	w.pending = append(w.pending, cp)
	w.start()
	return nil
}

// queueStep hands a step's checkpoint to the writer. A transient one (the
// Put ending the run prunes it at once, checkpoint.Transient) is held
// instead: the next barrier writes it, or the next step's replaces it
// unwritten. A crash may lose what a barrier has not made durable in
// either case; holding it makes a turn write the checkpoints its barriers
// need and its last, not one per step.
func (w *asyncWriter) queueStep(cp checkpoint.Checkpoint) error {
	if !checkpoint.Transient(w.ctx, cp) {
		return w.queue(cp)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.dropHeldLocked() // replaced unwritten
	w.held = &cp
	return nil
}

// holdValue holds cp, a transient step checkpoint (checkpoint.Transient)
// whose state encode encodes when a barrier is to write it (a ValueState:
// the state it encodes is the step's, whatever runs meanwhile).
func (w *asyncWriter) holdValue(cp checkpoint.Checkpoint, encode func() ([]byte, error)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.dropHeldLocked()
	w.held, w.encodeHeld = &cp, encode
	return nil
}

// dropHeldLocked forgets the held checkpoint, unwritten (w.mu held).
func (w *asyncWriter) dropHeldLocked() { w.held, w.encodeHeld = nil, nil }

// releaseHeldLocked hands the held checkpoint, encoded now if it was not,
// to the writer (w.mu held). An encoding that fails stops the writer.
func (w *asyncWriter) releaseHeldLocked() error {
	if w.held == nil {
		return nil
	}
	cp := *w.held
	if w.encodeHeld != nil {
		enc, err := w.encodeHeld()
		if err != nil {
			w.err = err
			w.held, w.encodeHeld = nil, nil
			return err
		}
		cp.State = enc
	}
	w.pending = append(w.pending, cp)
	w.held, w.encodeHeld = nil, nil
	return nil
}

// start starts the drain goroutine unless it runs (w.mu held). A store in
// memory (checkpoint.InMemory) is written in place, before start returns.
func (w *asyncWriter) start() {
	if w.running || len(w.pending) == 0 {
		return
	}
	if w.inPlace {
		for len(w.pending) > 0 && w.err == nil {
			w.noteLocked(w.write(w.pop()))
		}
		w.pending = nil
		return
	}
	w.running, w.idle = true, make(chan struct{})
	go w.drain()
}

func (w *asyncWriter) drain() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.pending) > 0 && w.err == nil {
		cp := w.pop()
		w.mu.Unlock()
		wr, err := w.write(cp)
		w.mu.Lock()
		w.noteLocked(wr, err)
	}
	w.pending, w.running = nil, false
	close(w.idle)
}

// pop takes the first pending checkpoint (w.mu held).
func (w *asyncWriter) pop() checkpoint.Checkpoint {
	cp := w.pending[0]
	w.pending[0] = checkpoint.Checkpoint{}
	w.pending = w.pending[1:]
	return cp
}

// write stores cp. Work already done is saved even if the run was canceled
// meanwhile, as a sync Put is (saveCtx).
func (w *asyncWriter) write(cp checkpoint.Checkpoint) (written, error) {
	pctx, release := saveCtx(w.ctx)
	defer release()
	start := time.Now()
	if err := w.store.Put(pctx, cp); err != nil {
		return written{}, fmt.Errorf("graph: write checkpoint: %w", err)
	}
	return written{step: cp.Step, id: cp.ID, created: cp.Created, commit: time.Since(start)}, nil
}

// noteLocked records how a write went (w.mu held): a failure stops the
// writer.
func (w *asyncWriter) noteLocked(wr written, err error) {
	if err != nil {
		w.err = err
		return
	}
	w.written = append(w.written, wr)
}

// flush waits for every queued write and returns the first failure.
func (w *asyncWriter) flush() error {
	w.mu.Lock()
	if w.held != nil && w.err == nil && w.releaseHeldLocked() == nil {
		w.start()
	}
	if !w.running {
		err := w.err
		w.mu.Unlock()
		return err
	}
	w.waits++
	idle := w.idle
	w.mu.Unlock()
	<-idle
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
