package graph

import (
	"context"
	"fmt"
	"sync"
)

// The engine's thread ownership: one run at a time per thread of a Compiled
// graph, in this process. A run takes its thread for its duration; a caller
// that does several things with a thread (read its state, end a waiting run,
// start a new one, as the agent package does under its store lease) holds it
// across them with HoldThread and runs under the hold. Other processes are
// kept out by the caller's leases, not here (see checkpoint.Leaser).

// threadSet is the set of threads held in one Compiled graph, in shards:
// every run takes and drops its thread, and under load a single lock's
// holder, preempted by the machine, made every other run wait.
type threadSet struct {
	shards [threadShards]threadShard
}

const threadShards = 32

type threadShard struct {
	mu   sync.Mutex
	busy map[string]bool
	_    [48]byte // a shard per cache line (64 bytes)
}

func (ts *threadSet) shard(thread string) *threadShard {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(thread); i++ {
		h = (h ^ uint32(thread[i])) * 16777619
	}
	return &ts.shards[h%threadShards]
}

func (ts *threadSet) take(thread string) bool {
	sh := ts.shard(thread)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.busy == nil {
		sh.busy = make(map[string]bool)
	}
	if sh.busy[thread] {
		return false
	}
	sh.busy[thread] = true
	return true
}

func (ts *threadSet) drop(thread string) {
	sh := ts.shard(thread)
	sh.mu.Lock()
	delete(sh.busy, thread)
	sh.mu.Unlock()
}

// enter takes thread for one run: under the caller's hold when ctx carries
// one for it (runs under one hold go one at a time), else for the run alone.
// It returns the hold the run entered under, nil if none; leave undoes it.
func (ts *threadSet) enter(ctx context.Context, thread string) (*ThreadHold, error) {
	if h, _ := ctx.Value(holdKey{}).(*ThreadHold); h != nil && h.set == ts && h.thread == thread {
		h.mu.Lock()
		defer h.mu.Unlock()
		switch {
		case h.running:
			return nil, fmt.Errorf("%w: %q", ErrThreadBusy, thread)
		case !h.released:
			h.running = true
			return h, nil
		}
		// A released hold holds nothing: the run takes the thread itself.
	}
	if !ts.take(thread) {
		return nil, fmt.Errorf("%w: %q", ErrThreadBusy, thread)
	}
	return nil, nil
}

func (ts *threadSet) leave(thread string, h *ThreadHold) {
	if h == nil {
		ts.drop(thread)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running = false
	if h.released {
		ts.drop(thread) // released while this run was in progress
	}
}

// ThreadHold is a thread of a Compiled graph held by a caller between runs
// (see HoldThread).
type ThreadHold struct {
	set    *threadSet
	thread string

	mu       sync.Mutex
	running  bool // a run under the hold is in progress
	released bool
}

type holdKey struct{}

// HoldThread takes thread in this graph for the caller until Release: runs
// of the thread (Run, Stream, Resume, ResumeStream) fail with ErrThreadBusy,
// except runs whose ctx carries the hold (WithThreadHold), which go one at
// a time. It fails with ErrThreadBusy when the thread is held or running.
func (c *Compiled[S, U]) HoldThread(thread string) (*ThreadHold, error) {
	if !c.threads.take(thread) {
		return nil, fmt.Errorf("%w: %q", ErrThreadBusy, thread)
	}
	return &ThreadHold{set: &c.threads, thread: thread}, nil
}

// Thread returns the held thread.
func (h *ThreadHold) Thread() string { return h.thread }

// Release gives the thread up (once a run under the hold, if one is in
// progress, has returned); later calls do nothing.
func (h *ThreadHold) Release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return
	}
	h.released = true
	if !h.running {
		h.set.drop(h.thread)
	}
}

// WithThreadHold returns ctx carrying h: runs of h's thread under it enter
// the hold instead of taking the thread.
func WithThreadHold(ctx context.Context, h *ThreadHold) context.Context {
	return context.WithValue(ctx, holdKey{}, h)
}
