package agent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/graph/checkpoint/postgres/pgtest"
	"github.com/capgraph/capgraph/state"
)

// leasingStore is a store that grants thread leases (all of ours).
type leasingStore = pgtest.LeasingStore

// backends return two handles on one shared store, as two replicas hold:
// memory, and PostgreSQL (under CI=true a missing database fails the test).
var backends = pgtest.ReplicaBackends()

// replicas returns two agents over the two store handles, built from one
// world (so side effects are recorded in one place), each with its own lease
// owner.
func replicas(t *testing.T, w *world, s1, s2 checkpoint.Store, opts state.Options, ttl time.Duration) (*agent.Agent, *agent.Agent) {
	t.Helper()
	cfg := withOptions(w.config(t), opts)
	cfg.Leases.TTL = ttl
	cfg.Store = s1
	a := mustAgent(t, cfg)
	cfg.Store = s2
	b := mustAgent(t, cfg)
	if a.LeaseOwner() == b.LeaseOwner() {
		t.Fatalf("both agents lease as %q", a.LeaseOwner())
	}
	return a, b
}

// An approval answered on several replicas at once is carried out once.
func TestReplicasCarryOutAnApprovalOnce(t *testing.T) {
	for _, be := range backends {
		t.Run(be.Name, func(t *testing.T) {
			s1, s2 := be.Open(t)
			w := writeWorld()
			a, b := replicas(t, w, s1, s2, writesOn, agent.DefaultLeaseTTL)
			ap := approvalOf(t, run(t, a, "t", "x"))
			var (
				wg   sync.WaitGroup
				errs = make([]error, 6)
			)
			for i := range errs {
				r := a
				if i%2 == 1 {
					r = b
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = resume(t, r, "t", agent.Answer{ApprovalID: ap.ID, Text: "yes"}).err
				}()
			}
			wg.Wait()
			ok := carriedOut(t, errs)
			if ok != 1 || len(w.effects()) != 1 {
				t.Fatalf("%d answers carried out, %d effects; want 1 and 1", ok, len(w.effects()))
			}
			if _, st, err := b.State(context.Background(), "t"); err != nil || st != agent.RunAnswered {
				t.Fatalf("status %s, %v; want answered", st, err)
			}
		})
	}
}

// cutRun starts a turn on thread and cancels it when read_a starts, as a
// crash would leave it: unfinished, resumable.
func cutRun(t *testing.T, a *agent.Agent, thread string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for ev := range a.Run(ctx, agent.TurnRequest{Thread: thread, Input: "read " + thread}) {
		if ev.Type == agent.EventStepStart && ev.Capability == "read_a" {
			cancel()
		}
	}
}

// RecoverRuns on every replica at once resumes each unfinished thread
// exactly once between them.
func TestReplicasRecoverEachRunOnce(t *testing.T) {
	for _, be := range backends {
		t.Run(be.Name, func(t *testing.T) {
			s1, s2 := be.Open(t)
			w := newWorld("read_a")
			a, b := replicas(t, w, s1, s2, state.Options{}, agent.DefaultLeaseTTL)
			var want []string
			for i := range 8 {
				th := fmt.Sprintf("t%d", i)
				cutRun(t, a, th)
				want = append(want, th)
			}
			if got, err := b.Unfinished(context.Background()); err != nil || len(got) != len(want) {
				t.Fatalf("Unfinished = %v, %v; want %d threads", got, err, len(want))
			}
			var (
				wg    sync.WaitGroup
				got   [2][]string
				errs  [2]error
				start = make(chan struct{})
			)
			for i, r := range []*agent.Agent{a, b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					got[i], errs[i] = r.RecoverRuns(context.Background())
				}()
			}
			close(start)
			wg.Wait()
			if errs[0] != nil || errs[1] != nil {
				t.Fatalf("RecoverRuns: %v / %v", errs[0], errs[1])
			}
			all := slices.Sorted(slices.Values(append(slices.Clone(got[0]), got[1]...)))
			if !slices.Equal(all, want) {
				t.Fatalf("replica a resumed %v, b resumed %v; want each of %v exactly once", got[0], got[1], want)
			}
			if n := w.respond.count(); n != len(want) {
				t.Fatalf("respond ran %d times for %d threads: a run was resumed twice", n, len(want))
			}
			for _, th := range want {
				if _, st, err := a.State(context.Background(), th); err != nil || st != agent.RunAnswered {
					t.Errorf("%s: status %s, %v; want answered", th, st, err)
				}
			}
			t.Logf("replica a resumed %d, b %d", len(got[0]), len(got[1]))
		})
	}
}

// deafStore loses every lease renewal, as a replica cut off from the
// database (or frozen) would: its lease keeper is, in effect, abandoned.
type deafStore struct{ leasingStore }

func (deafStore) RenewLease(context.Context, checkpoint.Lease, time.Duration) (checkpoint.Lease, error) {
	return checkpoint.Lease{}, errors.New("renewal lost on the way to the store")
}

// A replica that stops renewing mid-run keeps its thread until its lease
// expires; then another replica's RecoverRuns takes the run over, and the
// first one, when it wakes up, cannot write over the new holder's progress.
func TestReplicaTakesOverAnAbandonedLease(t *testing.T) {
	const ttl = 600 * time.Millisecond
	for _, be := range backends {
		t.Run(be.Name, func(t *testing.T) {
			s1, s2 := be.Open(t)
			w := newWorld("read_a")
			entered, wake := make(chan struct{}), make(chan struct{})
			var once sync.Once
			// The first read_a freezes, ignoring its ctx, until the test wakes it.
			w.plan = func(int, state.State) []state.PlanStep {
				return []state.PlanStep{step("read_a", "a"), step(state.NodeRespond, "r", 0)}
			}
			a, b := replicas(t, w, deafStore{s1}, s2, state.Options{}, ttl)
			w.caps["read_a"].errs = []error{errFreeze}
			freeze = func() {
				once.Do(func() { close(entered) })
				<-wake
			}
			t.Cleanup(func() { freeze = nil })

			done := make(chan outcome, 1)
			go func() { done <- run(t, a, "t", "read") }()
			select {
			case <-entered:
			case <-time.After(10 * time.Second):
				t.Fatal("read_a never started on replica a")
			}
			// While a's lease runs, b leaves the thread alone.
			if got, err := b.RecoverRuns(context.Background()); err != nil || len(got) != 0 {
				t.Fatalf("RecoverRuns during a's lease: %v, %v; want nothing resumed", got, err)
			}
			o := run(t, b, "t", "again")
			var he *checkpoint.LeaseHeldError
			if !errors.Is(o.err, graph.ErrThreadBusy) || !errors.As(o.err, &he) || he.Holder != a.LeaseOwner() {
				t.Fatalf("Run on b during a's lease: %v; want ErrThreadBusy naming holder %s", o.err, a.LeaseOwner())
			}
			time.Sleep(ttl + 200*time.Millisecond)
			got, err := b.RecoverRuns(context.Background())
			if err != nil || !slices.Equal(got, []string{"t"}) {
				t.Fatalf("RecoverRuns after the TTL: %v, %v; want [t]", got, err)
			}
			close(wake)
			var ao outcome
			select {
			case ao = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("a's run did not end after it woke up")
			}
			if !errors.Is(ao.err, checkpoint.ErrLeaseLost) {
				t.Fatalf("a's run ended with %v; want ErrLeaseLost", ao.err)
			}
			if n := w.respond.count(); n != 1 {
				t.Fatalf("respond ran %d times, want 1", n)
			}
			s, st, err := b.State(context.Background(), "t")
			if err != nil || st != agent.RunAnswered {
				t.Fatalf("status %s, %v; want answered (a must not have written after losing its lease)", st, err)
			}
			if m, _ := s.LastAssistant(); m.Kind != state.KindAnswer {
				t.Fatalf("last message %+v", m)
			}
		})
	}
}

// A thread leased by another owner is busy: the error names the holder and
// the run writes nothing. The lease is released when a run ends.
func TestBusyThreadNamesTheLeaseHolder(t *testing.T) {
	store := memory.New()
	w := newWorld("read_a")
	cfg := w.config(t)
	cfg.Store = store
	a := mustAgent(t, cfg)
	ctx := context.Background()
	other, err := store.AcquireLease(ctx, "t", "replica-b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	o := run(t, a, "t", "hello")
	var he *checkpoint.LeaseHeldError
	if !errors.Is(o.err, graph.ErrThreadBusy) || !errors.As(o.err, &he) || he.Holder != "replica-b" || !he.Expires.Equal(other.Expires) {
		t.Fatalf("Run on a leased thread: %v; want ErrThreadBusy with *LeaseHeldError naming replica-b", o.err)
	}
	if last := o.last(); last.Type != agent.EventDone || last.Status != agent.RunFailed {
		t.Fatalf("last event %+v, want done/failed", last)
	}
	if _, err := store.Get(ctx, "t", [16]byte{}); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("a busy Run wrote a checkpoint: Get err = %v", err)
	}
	if o := resume(t, a, "t", agent.Answer{}); !errors.Is(o.err, graph.ErrThreadBusy) {
		t.Fatalf("Resume on a leased thread: %v; want ErrThreadBusy", o.err)
	}
	if err := store.ReleaseLease(ctx, other); err != nil {
		t.Fatal(err)
	}
	wantAnswer(t, run(t, a, "t", "hello"))
	// The run released its lease: another owner gets it at once.
	if _, err := store.AcquireLease(ctx, "t", "replica-b", time.Minute); err != nil {
		t.Fatalf("lease after the run: %v", err)
	}
}

func TestLeaseConfig(t *testing.T) {
	for _, tc := range []struct {
		ttl time.Duration
		ok  bool
	}{{0, true}, {time.Second, true}, {-time.Second, false}, {time.Millisecond, false}} {
		cfg := newWorld("read_a").config(t)
		cfg.Leases.TTL = tc.ttl
		_, err := agent.New(cfg)
		var ce *agent.ConfigError
		if got := err == nil; got != tc.ok || (err != nil && (!errors.As(err, &ce) || ce.Field != "Leases.TTL")) {
			t.Errorf("TTL %s: err = %v, want ok=%v (else a ConfigError on Leases.TTL)", tc.ttl, err, tc.ok)
		}
	}
}
