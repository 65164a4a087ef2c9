package agent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/state"
)

// Issue 12: two applications sharing one store. Each agent runs, reads,
// recovers and claims only its own application's threads, and continues a
// run in progress only with the graph that started it.

// twoApps returns the agents of applications "control-room" and "myagent"
// over two handles on one shared store (memory, and PostgreSQL, whose claims
// go through checkpoint.Claimer). They have the same capabilities, so only
// the application tells them apart.
func twoApps(t *testing.T, w *world, s1, s2 checkpoint.Store, opts state.Options) (cr, mine *agent.Agent) {
	t.Helper()
	cfg := withOptions(w.config(t), opts)
	cfg.Store, cfg.Application = s1, "control-room"
	cr = mustAgent(t, cfg)
	cfg.Store, cfg.Application = s2, "myagent"
	return cr, mustAgent(t, cfg)
}

// foreign fails unless err is a *ForeignThreadError naming both applications.
func foreign(t *testing.T, what string, err error, thread string) {
	t.Helper()
	var fe *agent.ForeignThreadError
	if !errors.Is(err, agent.ErrForeignThread) || !errors.Is(err, agent.ErrBadRequest) || !errors.As(err, &fe) {
		t.Fatalf("%s: err = %v, want a *ForeignThreadError (ErrForeignThread, ErrBadRequest)", what, err)
	}
	for _, s := range []string{thread, `"control-room"`, `"myagent"`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: %q does not name %s", what, err, s)
		}
	}
}

// checkpoints counts the thread's checkpoints (nothing may be written to a
// refused thread).
func checkpoints(t *testing.T, s checkpoint.Store, thread string) int {
	t.Helper()
	cps, err := s.List(context.Background(), thread, checkpoint.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(cps)
}

func TestAnotherApplicationsThreadIsRefused(t *testing.T) {
	for _, be := range backends {
		t.Run(be.Name, func(t *testing.T) {
			ctx := context.Background()
			s1, s2 := be.Open(t)
			w := newWorld("read_a")
			cr, mine := twoApps(t, w, s1, s2, state.Options{})
			if o := run(t, cr, "cr-1", "beam current?"); o.err != nil {
				t.Fatal(o.err)
			}
			n := checkpoints(t, s1, "cr-1")
			// A request's metadata cannot claim the thread for another application.
			var o outcome
			for ev, err := range mine.Run(ctx, agent.TurnRequest{Thread: "cr-1", Input: "and now?", Metadata: map[string]string{agent.MetaApplication: "myagent"}}) {
				o.events = append(o.events, ev)
				if err != nil {
					o.err = err
				}
			}
			foreign(t, "Run", o.err, "cr-1")
			foreign(t, "Resume", resume(t, mine, "cr-1", agent.Answer{}).err, "cr-1")
			_, _, err := mine.State(ctx, "cr-1")
			foreign(t, "State", err, "cr-1")
			_, err = mine.PendingApprovals(ctx, "cr-1")
			foreign(t, "PendingApprovals", err, "cr-1")
			foreign(t, "DeleteThread", mine.DeleteThread(ctx, "cr-1"), "cr-1")
			if got := checkpoints(t, s1, "cr-1"); got != n {
				t.Fatalf("the refused calls wrote: %d checkpoints, had %d", got, n)
			}
			if infos, err := mine.Threads(ctx, checkpoint.ThreadFilter{}); err != nil || len(infos) != 0 {
				t.Errorf("myagent lists %+v, %v; want none of control-room's threads", infos, err)
			}
			// Its own application goes on as before, and its thread says whose it is.
			if o := run(t, cr, "cr-1", "and now?"); o.err != nil || o.message() == nil {
				t.Fatalf("control-room's second turn: %v", o.err)
			}
			if infos, err := cr.Threads(ctx, checkpoint.ThreadFilter{}); err != nil || len(infos) != 1 || infos[0].Metadata[agent.MetaApplication] != "control-room" ||
				infos[0].Metadata[agent.MetaGraphVersion] != cr.GraphVersion() {
				t.Errorf("control-room lists %+v, %v", infos, err)
			}
			// A thread of its own is no problem for myagent, on the same store.
			if o := run(t, mine, "my-1", "beam current?"); o.err != nil {
				t.Fatal(o.err)
			}
			_, _, err = cr.State(ctx, "my-1")
			foreign(t, "control-room reading myagent's thread", err, "my-1")
		})
	}
}

// The bug of the issue: a cut run of one application was finished by
// another's recovery. Recovery, the listing of unfinished runs and claims
// (PostgreSQL: ClaimResumable in the store) never pick up a foreign thread,
// nor lease it.
func TestRecoveryNeverPicksUpAnotherApplicationsRun(t *testing.T) {
	for _, be := range backends {
		t.Run(be.Name, func(t *testing.T) {
			ctx := context.Background()
			s1, s2 := be.Open(t)
			spy := &leaseSpy{leasingStore: s2}
			var st2 checkpoint.Store = spy
			if c, ok := s2.(checkpoint.Claimer); ok {
				st2 = claimSpy{spy, c}
			}
			w := newWorld("read_a")
			cr, mine := twoApps(t, w, s1, st2, state.Options{})
			cutRun(t, cr, "cut")
			if got, err := mine.Unfinished(ctx); err != nil || len(got) != 0 {
				t.Fatalf("myagent's Unfinished = %v, %v; want none", got, err)
			}
			for cl, err := range mine.ClaimUnfinished(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				cl.Release()
				t.Fatalf("myagent claimed %s", cl.Thread)
			}
			if got, err := mine.RecoverRuns(ctx); err != nil || len(got) != 0 {
				t.Fatalf("myagent's RecoverRuns = %v, %v; want nothing resumed", got, err)
			}
			// Not even leased for a moment.
			if got := spy.threads(); len(got) != 0 {
				t.Fatalf("myagent leased %v", got)
			}
			if _, st, _ := cr.State(ctx, "cut"); st != agent.RunCanceled {
				t.Fatalf("the cut run is %s after myagent's recovery, want still canceled", st)
			}
			got, err := cr.RecoverRuns(ctx)
			if err != nil || !slices.Equal(got, []string{"cut"}) {
				t.Fatalf("control-room's RecoverRuns = %v, %v; want [cut]", got, err)
			}
			if _, st, err := cr.State(ctx, "cut"); err != nil || st != agent.RunAnswered {
				t.Fatalf("status %s, %v", st, err)
			}
		})
	}
}

// A run in progress is continued only by the graph that started it: a
// version of the application with other capabilities neither recovers a
// cut run nor answers a pending approval of the old one. A new turn on a
// finished thread is the new graph's, and records its version.
func TestRunInProgressNeedsTheGraphThatStartedIt(t *testing.T) {
	for _, be := range backends {
		t.Run(be.Name, func(t *testing.T) {
			ctx := context.Background()
			s1, s2 := be.Open(t)
			w := writeWorld()
			cfg := withOptions(w.config(t), writesOn)
			cfg.Application, cfg.Store = "control-room", s1
			v1 := mustAgent(t, cfg)

			w2 := writeWorld()
			w2.caps["read_b"] = &script{} // the next version has one more capability
			cfg2 := withOptions(w2.config(t), writesOn)
			cfg2.Application, cfg2.Store = "control-room", s2
			v2 := mustAgent(t, cfg2)
			if v1.GraphVersion() == v2.GraphVersion() {
				t.Fatalf("both graphs have version %s", v1.GraphVersion())
			}
			// Same capabilities, another agent value: the same version.
			if again := mustAgent(t, withOptions(w.config(t), writesOn)); again.GraphVersion() != v1.GraphVersion() {
				t.Fatalf("the same capabilities give versions %s and %s", again.GraphVersion(), v1.GraphVersion())
			}

			ap := approvalOf(t, run(t, v1, "w", "set it"))
			var fe *agent.ForeignThreadError
			for what, err := range map[string]error{
				"Resume with the answer": resume(t, v2, "w", agent.Answer{ApprovalID: ap.ID, Text: "yes"}).err,
				"Run with yes":           run(t, v2, "w", "yes").err,
				"Run superseding it":     run(t, v2, "w", "something else").err,
			} {
				if !errors.As(err, &fe) || fe.GraphVersion != v1.GraphVersion() || fe.WantGraphVersion != v2.GraphVersion() ||
					!strings.Contains(err.Error(), "another version") {
					t.Errorf("%s on the new graph: %v, want a *ForeignThreadError naming both versions", what, err)
				}
			}
			if len(w.effects())+len(w2.effects()) != 0 {
				t.Fatalf("a write was carried out: %v %v", w.effects(), w2.effects())
			}
			// The old graph still answers it.
			if o := resume(t, v1, "w", agent.Answer{ApprovalID: ap.ID, Text: "yes"}); o.err != nil || len(w.effects()) != 1 {
				t.Fatalf("the old graph's answer: %v, effects %d", o.err, len(w.effects()))
			}
			// The thread's turn is done: a new turn is the new graph's.
			if o := run(t, v2, "w", "read it again"); o.err != nil {
				t.Fatalf("a new turn on the new graph: %v", o.err)
			}
			tp, err := s1.Get(ctx, "w", uuid.Nil)
			if err != nil || tp.Checkpoint.Metadata[agent.MetaGraphVersion] != v2.GraphVersion() {
				t.Fatalf("the new turn records version %q, %v; want %s", tp.Checkpoint.Metadata[agent.MetaGraphVersion], err, v2.GraphVersion())
			}

			// A cut run of the old graph is left to it.
			cutRun(t, v1, "cut")
			if got, err := v2.RecoverRuns(ctx); err != nil || len(got) != 0 {
				t.Fatalf("the new graph recovered %v, %v", got, err)
			}
			if o := resume(t, v2, "cut", agent.Answer{}); !errors.As(o.err, &fe) {
				t.Fatalf("Resume of the old graph's cut run on the new one: %v", o.err)
			}
			if got, err := v1.RecoverRuns(ctx); err != nil || !slices.Equal(got, []string{"cut"}) {
				t.Fatalf("the old graph recovered %v, %v; want [cut]", got, err)
			}
		})
	}
}

// An unnamed application (Config.Application empty) records none, and
// runs only threads that record none.
func TestUnnamedApplication(t *testing.T) {
	ctx := context.Background()
	w := newWorld("read_a")
	cfg := w.config(t)
	unnamed := mustAgent(t, cfg)
	cfg.Application = "named"
	named := mustAgent(t, cfg)
	if o := run(t, unnamed, "u", "hi"); o.err != nil {
		t.Fatal(o.err)
	}
	tp, err := cfg.Store.Get(ctx, "u", uuid.Nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tp.Checkpoint.Metadata[agent.MetaApplication]; ok || tp.Checkpoint.Metadata[agent.MetaGraphVersion] == "" {
		t.Errorf("metadata %v: want a graph version and no application", tp.Checkpoint.Metadata)
	}
	var fe *agent.ForeignThreadError
	if o := run(t, named, "u", "hi"); !errors.As(o.err, &fe) || !strings.Contains(o.err.Error(), "no named application") {
		t.Errorf("a named agent on an unnamed thread: %v", o.err)
	}
	if o := run(t, named, "n", "hi"); o.err != nil {
		t.Fatal(o.err)
	}
	if o := run(t, unnamed, "n", "hi"); !errors.As(o.err, &fe) {
		t.Errorf("an unnamed agent on a named thread: %v", o.err)
	}
	if infos, err := unnamed.Threads(ctx, checkpoint.ThreadFilter{}); err != nil || len(infos) != 1 || infos[0].ThreadID != "u" {
		t.Errorf("the unnamed agent lists %+v, %v; want only u", infos, err)
	}
}

// leaseSpy records the threads an agent leased through a store, whether
// with AcquireLease or with a claim.
type leaseSpy struct {
	leasingStore
	mu     sync.Mutex
	leased []string
}

func (s *leaseSpy) record(thread string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leased = append(s.leased, thread)
}

func (s *leaseSpy) threads() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.leased)
}

func (s *leaseSpy) AcquireLease(ctx context.Context, thread, owner string, ttl time.Duration) (checkpoint.Lease, error) {
	l, err := s.leasingStore.AcquireLease(ctx, thread, owner, ttl)
	if err == nil {
		s.record(thread)
	}
	return l, err
}

// claimSpy is a leaseSpy over a store that claims (PostgreSQL).
type claimSpy struct {
	*leaseSpy
	c checkpoint.Claimer
}

func (s claimSpy) ClaimResumable(ctx context.Context, owner string, ttl time.Duration, opts checkpoint.ClaimOptions) ([]checkpoint.Lease, error) {
	ls, err := s.c.ClaimResumable(ctx, owner, ttl, opts)
	for _, l := range ls {
		s.record(l.Thread)
	}
	return ls, err
}
