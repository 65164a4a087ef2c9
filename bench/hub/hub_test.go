package hub_test

import (
	"context"
	"testing"

	"github.com/capgraph/capgraph/bench/hub"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// Both engines run the same graph: the same result, and in capgraph one
// checkpoint per step, the router and workers visited in the same order.
func TestSameRunOnBothEngines(t *testing.T) {
	ctx := context.Background()
	er, err := hub.Eino(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := er.Invoke(ctx, hub.State{})
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.Check(out); err != nil {
		t.Errorf("eino: %v", err)
	}
	store := memory.New()
	c, err := hub.Capgraph(store)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(ctx, "hub", hub.State{})
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.Check(res.State); err != nil {
		t.Errorf("capgraph: %v", err)
	}
	if res.State != out {
		t.Errorf("capgraph ended with %+v, eino with %+v", res.State, out)
	}
	var nodes []string
	for _, e := range res.Trace.All() {
		if e.Kind == graph.EventNodeStart {
			nodes = append(nodes, e.Node)
		}
	}
	if len(nodes) != 2*hub.Trips+1 {
		t.Fatalf("capgraph ran %d nodes, want %d", len(nodes), 2*hub.Trips+1)
	}
	for i, n := range nodes {
		want := "router"
		if i%2 == 1 {
			want = hub.Workers[(i/2)%len(hub.Workers)]
		}
		if n != want {
			t.Fatalf("node %d is %s, want %s (%v…)", i, n, want, nodes[:min(len(nodes), 16)])
		}
	}
	cps, err := store.List(ctx, "hub", checkpoint.ListOptions{})
	if err != nil || len(cps) != 2*hub.Trips+2 {
		t.Errorf("%d checkpoints (%v), want one per step and the input's", len(cps), err)
	}
}

func BenchmarkEino(b *testing.B) {
	ctx := context.Background()
	er, err := hub.Eino(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		out, err := er.Invoke(ctx, hub.State{})
		if err == nil {
			err = hub.Check(out)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCapgraph(b *testing.B) {
	ctx := context.Background()
	for _, s := range []struct {
		name  string
		store checkpoint.Store
	}{{"memory", memory.New()}, {"latest-only", memory.NewLatestOnly()}} {
		b.Run(s.name, func(b *testing.B) {
			c, err := hub.Capgraph(s.store)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				res, err := c.Run(ctx, "hub", hub.State{})
				if err == nil {
					err = hub.Check(res.State)
				}
				if err == nil {
					err = s.store.DeleteThread(ctx, "hub")
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
