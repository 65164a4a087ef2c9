package agent_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// A run lasting many TTLs keeps its lease: the keeper renews it every TTL/3,
// so another owner finds the thread busy throughout, and gets it as soon as
// the run ends. Virtual time: the capability sleeps 5 TTLs.
func TestLongRunKeepsItsLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = time.Second
		store := memory.New()
		w := newWorld("read_a")
		w.caps["read_a"].errs = []error{errFreeze}
		freeze = func() { time.Sleep(5 * ttl) }
		defer func() { freeze = nil }()
		cfg := w.config(t)
		cfg.Store = store
		cfg.Leases.TTL = ttl
		a := mustAgent(t, cfg)

		done := make(chan outcome, 1)
		go func() { done <- run(t, a, "t", "read") }()
		ctx := context.Background()
		for i := range 9 { // every half TTL, across the whole run
			time.Sleep(ttl / 2)
			_, err := store.AcquireLease(ctx, "t", "other", ttl)
			var he *checkpoint.LeaseHeldError
			if !errors.As(err, &he) || he.Holder != a.LeaseOwner() {
				t.Fatalf("%s into the run: AcquireLease by another owner = %v; want held by %s", time.Duration(i+1)*ttl/2, err, a.LeaseOwner())
			}
		}
		wantAnswer(t, <-done)
		if _, err := store.AcquireLease(ctx, "t", "other", ttl); err != nil {
			t.Fatalf("after the run: %v; want the lease released", err)
		}
	})
}

// The default owner differs per agent and names the host and process.
func TestDefaultLeaseOwner(t *testing.T) {
	cfg := newWorld("read_a").config(t)
	a, b := mustAgent(t, cfg), mustAgent(t, cfg)
	if a.LeaseOwner() == "" || a.LeaseOwner() == b.LeaseOwner() {
		t.Fatalf("owners %q and %q: want distinct, non-empty", a.LeaseOwner(), b.LeaseOwner())
	}
	cfg.Leases.Owner = "replica-0"
	if got := mustAgent(t, cfg).LeaseOwner(); got != "replica-0" {
		t.Fatalf("LeaseOwner = %q, want the configured replica-0", got)
	}
}

// In one process the thread has one owner, whoever asks: while a Run is in
// progress, a second Run or Resume of the agent, a run of its graph
// directly and a claim of unfinished runs all find the thread busy, with no
// lease holder to name (the graph's hold answers before the store is asked);
// once the run ended, the thread is free for each of them.
func TestOneOwnerPerThreadInProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld("read_a")
		w.caps["read_a"].errs = []error{errFreeze}
		release := make(chan struct{})
		freeze = func() { <-release }
		defer func() { freeze = nil }()
		a := mustAgent(t, w.config(t))

		done := make(chan outcome, 1)
		go func() { done <- run(t, a, "t", "read") }()
		synctest.Wait() // the run is frozen inside read_a
		var he *checkpoint.LeaseHeldError
		if o := run(t, a, "t", "again"); !errors.Is(o.err, graph.ErrThreadBusy) || errors.As(o.err, &he) {
			t.Fatalf("second Run: %v; want ErrThreadBusy from this process, no lease holder", o.err)
		}
		if o := resume(t, a, "t", agent.Answer{}); !errors.Is(o.err, graph.ErrThreadBusy) {
			t.Fatalf("Resume during the run: %v; want ErrThreadBusy", o.err)
		}
		if _, err := a.Graph().Resume(context.Background(), "t", nil); !errors.Is(err, graph.ErrThreadBusy) {
			t.Fatalf("the graph's own Resume during the agent's run: %v; want ErrThreadBusy", err)
		}
		for cr, err := range a.ClaimUnfinished(context.Background()) {
			t.Fatalf("claimed %v, %v while the thread runs here", cr, err)
		}
		close(release)
		wantAnswer(t, <-done)
		if o := run(t, a, "t", "again"); o.err != nil {
			t.Fatalf("Run after the run ended: %v", o.err)
		}
	})
}
