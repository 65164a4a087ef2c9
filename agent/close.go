package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrClosed: the agent was closed (Agent.Close). Runs, resumes, recoveries,
// prunes and every other call that changes a thread fail with it
// afterwards, and a run Close stopped ends with an error wrapping it.
var ErrClosed = errors.New("agent: closed")

// lifetime is what the agent has running: the threads it owns (each a run,
// a resume or a claimed recovery, with its lease renewals) and its other
// work (background sweeps, Prune, RecoverRuns, DeleteThread). Each is
// registered when it starts — refused once the agent is closed — and
// unregistered when it ends, so that Close knows what to stop and when
// everything has.
type lifetime struct {
	// ctx ends, with ErrClosed as cause, when the agent is closed: the
	// work that is no run of a thread stops with it.
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu     sync.Mutex
	closed bool
	owned  map[*owned]struct{}
	active int           // registered and not yet ended: owned threads and other work
	idle   chan struct{} // closed once the agent is closed and active is 0
}

func newLifetime() *lifetime {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &lifetime{ctx: ctx, cancel: cancel, owned: map[*owned]struct{}{}, idle: make(chan struct{})}
}

// isClosed reports whether Close was called.
func (l *lifetime) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// add registers an owned thread; ErrClosed once the agent is closed.
func (l *lifetime) add(o *owned) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.owned[o] = struct{}{}
	l.active++
	return nil
}

// remove unregisters an owned thread that add registered.
func (l *lifetime) remove(o *owned) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.owned, o)
	l.endLocked()
}

// begin registers work that is no owned thread and returns its end, to be
// called once; ErrClosed once the agent is closed.
func (l *lifetime) begin() (end func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	l.active++
	return sync.OnceFunc(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.endLocked()
	}), nil
}

// join is begin for work under the caller's ctx: the ctx it returns is
// also canceled, with ErrClosed as cause, when the agent is closed.
func (l *lifetime) join(ctx context.Context) (context.Context, func(), error) {
	end, err := l.begin()
	if err != nil {
		return ctx, nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(l.ctx, func() { cancel(ErrClosed) })
	return ctx, func() {
		stop()
		cancel(nil)
		end()
	}, nil
}

func (l *lifetime) endLocked() {
	l.active--
	if l.closed && l.active == 0 {
		close(l.idle)
	}
}

// Close stops the agent and waits for everything it runs to end.
//
// Calls that would start something fail with ErrClosed from then on: Run,
// Resume, ClaimUnfinished, ClaimedRun.Resume, RecoverRuns, Prune,
// ExpireApproval, CreateThread, SetThreadMetadata and DeleteThread. The
// runs in progress are canceled: each stops before its next step, as if
// its process had been stopped, and ends with an error wrapping ErrClosed
// and context.Canceled (RunCanceled); its thread is left unfinished, for
// RecoverRuns to resume later, here or in another process. A claimed run
// nobody resumed yet is released. Then Close waits until every run in
// progress has returned and every goroutine the agent started (background
// sweeps of old checkpoints, lease renewals, RecoverRuns' workers) has
// ended, so that the store may be closed after it.
//
// Waiting for a run means waiting for its caller to go on reading its
// events (or to stop): do not call Close from inside a loop over a run's
// events, which would wait for that very run. If ctx ends first, Close
// returns an error wrapping ctx's, and what still runs ends on its own
// (a capability that ignores its context may keep a run going). Reads
// (State, Threads, Audit, Artifacts…) keep working while the store is
// open. Close does not close the store, the models or the observer: their
// owner does, after Close.
//
// Close may be called more than once, also concurrently: each call waits
// in the same way, and returns nil once everything has ended.
func (a *Agent) Close(ctx context.Context) error {
	l := a.life
	l.mu.Lock()
	first := !l.closed
	var held []*owned
	if first {
		l.closed = true
		for o := range l.owned {
			held = append(held, o)
		}
		if l.active == 0 {
			close(l.idle)
		}
	}
	l.mu.Unlock()
	if first {
		l.cancel(ErrClosed)
		for _, o := range held {
			// A run in progress stops at its next step and releases its
			// thread itself; a claim nobody has taken is released here.
			o.cancel(ErrClosed)
			if o.use() {
				o.release()
			}
		}
	}
	select {
	case <-l.idle:
		return nil
	default:
	}
	select {
	case <-l.idle:
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		n := l.active
		l.mu.Unlock()
		return fmt.Errorf("agent: close: %d runs or background tasks did not end: %w", n, context.Cause(ctx))
	}
}
