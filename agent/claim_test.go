package agent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/state"
)

// claimAll pulls every claim r can make now.
func claimAll(t *testing.T, r *agent.Agent) []*agent.ClaimedRun {
	t.Helper()
	var out []*agent.ClaimedRun
	for cr, err := range r.ClaimUnfinished(context.Background()) {
		if err != nil {
			t.Fatalf("ClaimUnfinished: %v", err)
		}
		out = append(out, cr)
	}
	return out
}

// A claim holds the thread against every other agent until it is resumed
// or released; a released claim can be made again, a used one does
// nothing twice, and a run finished by its claim is not claimed again.
func TestClaimUnfinishedHoldsTheThread(t *testing.T) {
	for _, be := range backends {
		t.Run(be.Name, func(t *testing.T) {
			s1, s2 := be.Open(t)
			w := newWorld("read_a")
			a, b := replicas(t, w, s1, s2, state.Options{}, agent.DefaultLeaseTTL)
			cutRun(t, a, "t")

			claims := claimAll(t, a)
			if len(claims) != 1 || claims[0].Thread != "t" {
				t.Fatalf("a claimed %v; want t", claims)
			}
			cr := claims[0]
			// Held: b sees nothing to claim, and cannot run the thread.
			if got := claimAll(t, b); len(got) != 0 {
				t.Fatalf("b claimed %d runs while a holds t", len(got))
			}
			if o := run(t, b, "t", "again"); !errors.Is(o.err, graph.ErrThreadBusy) {
				t.Fatalf("Run on b while a holds t: %v; want ErrThreadBusy", o.err)
			}
			cr.Release()
			cr.Release() // a second release does nothing
			for ev, err := range cr.Resume(context.Background()) {
				t.Fatalf("Resume after Release yielded %+v, %v", ev, err)
			}

			claims = claimAll(t, b)
			if len(claims) != 1 {
				t.Fatalf("b claimed %d runs after a released t; want 1", len(claims))
			}
			var last agent.Event
			for ev, err := range claims[0].Resume(context.Background()) {
				if err != nil {
					t.Fatalf("Resume: %v", err)
				}
				last = ev
			}
			if last.Type != agent.EventDone || last.Status != agent.RunAnswered {
				t.Fatalf("claimed run ended with %+v; want done, answered", last)
			}
			for ev, err := range claims[0].Resume(context.Background()) {
				t.Fatalf("second Resume yielded %+v, %v", ev, err)
			}
			if n := w.respond.count(); n != 1 {
				t.Fatalf("respond ran %d times, want 1", n)
			}
			// Finished: nothing to claim, and the lease is free again.
			if got := claimAll(t, a); len(got) != 0 {
				t.Fatalf("a claimed %d finished runs", len(got))
			}
			if o := run(t, a, "t", "next question"); o.err != nil {
				t.Fatalf("Run after the claimed run ended: %v", o.err)
			}
		})
	}
}
