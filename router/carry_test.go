package router_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/state"
)

// The decision the route took reaches the node it started, which learns its
// plan step without deciding again; a node started by Resume gets none, and
// Carried decides again from the checkpoint's state, with the same result.
func TestCarriedDecision(t *testing.T) {
	rcfg := router.Config{Capabilities: []string{"read"}}
	type sawT struct {
		carried bool
		d       router.Decision
	}
	var saw []sawT
	fail := true
	g := graph.New(graph.Config[state.State, state.Update]{Apply: state.Apply})
	g.AddNode("start", func(context.Context, state.State) (state.Update, error) { return state.Update{}, nil })
	g.AddNode("read", func(ctx context.Context, s state.State) (state.Update, error) {
		m, ok := graph.RouteMeta(ctx)
		d := router.Carried(ctx, s, rcfg)
		saw = append(saw, sawT{ok, d})
		if ok && m.(*router.Decision) == nil {
			t.Error("nil decision carried")
		}
		if fail {
			fail = false
			return state.Update{}, errors.New("crash stand-in")
		}
		ps := s.Turn.Plan.Steps[d.Steps["read"]]
		ps.Status = state.StepDone
		return state.Update{Step: &state.StepUpdate{Plan: s.Turn.Plan.Number, Index: d.Steps["read"], Step: ps}}, nil
	})
	g.AddNode(state.NodeRespond, func(_ context.Context, s state.State) (state.Update, error) {
		tu := s.Turn
		tu.Done = true
		return state.Update{Turn: &tu}, nil
	})
	for _, n := range []string{"start", "read", state.NodeRespond} {
		g.AddConditionalEdges(n, router.Route(rcfg), "read", state.NodeRespond, state.NodeError)
	}
	g.AddNode(state.NodeError, func(context.Context, state.State) (state.Update, error) { return state.Update{}, nil })
	g.SetTerminal(state.NodeError)
	c, err := g.SetEntry("start").Compile()
	if err != nil {
		t.Fatal(err)
	}
	s0 := planned(st("read", P), st("read", P, 0), st(state.NodeRespond, P))
	if _, err := c.Run(context.Background(), "t", s0); err == nil {
		t.Fatal("the first attempt must fail the run")
	}
	res, err := c.Resume(context.Background(), "t", nil)
	if err != nil || !res.State.Turn.Done {
		t.Fatalf("resume: %v, done %v", err, res.State.Turn.Done)
	}
	if len(saw) != 3 {
		t.Fatalf("read ran %d times, want 3", len(saw))
	}
	wantCarried := []bool{true, false, true} // run, resumed after the failure, next step
	wantStep := []int{0, 0, 1}
	for i, w := range saw {
		if w.carried != wantCarried[i] || w.d.Steps["read"] != wantStep[i] || w.d.Cause != router.CauseSteps {
			t.Errorf("attempt %d: carried %v, decision %+v; want carried %v, step %d", i+1, w.carried, w.d, wantCarried[i], wantStep[i])
		}
	}
	if !reflect.DeepEqual(saw[0].d, saw[1].d) {
		t.Errorf("the decision decided again on resume differs: %+v vs %+v", saw[1].d, saw[0].d)
	}
}
