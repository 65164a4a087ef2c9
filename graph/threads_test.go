package graph_test

import (
	"context"
	"errors"
	"testing"

	"github.com/capgraph/capgraph/graph"
)

// A caller holding a thread runs it one run at a time under the hold; every
// other run of the thread is busy until the hold is released.
func TestThreadHold(t *testing.T) {
	ctx := context.Background()
	started := make(chan struct{}, 1)
	g := newGraph(nil)
	g.AddNode("a", func(context.Context, tstate) (tupd, error) { return tupd{N: 1}, nil })
	g.AddEdge("a", graph.End)
	c := compile(t, g.SetEntry("a"))

	h, err := c.HoldThread("t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.HoldThread("t"); !errors.Is(err, graph.ErrThreadBusy) {
		t.Fatalf("second hold: %v, want ErrThreadBusy", err)
	}
	if _, err := c.Run(ctx, "t", tstate{}); !errors.Is(err, graph.ErrThreadBusy) {
		t.Fatalf("run without the hold: %v, want ErrThreadBusy", err)
	}
	held := graph.WithThreadHold(ctx, h)
	if _, err := c.Run(held, "other", tstate{}); err != nil {
		t.Fatalf("the hold is for t only; other: %v", err)
	}
	for range 2 {
		if res, err := c.Run(held, "t", tstate{}); err != nil || res.State.N != 1 {
			t.Fatalf("run under the hold: %v %+v", err, res.State)
		}
	}

	// Under one hold, runs go one at a time.
	block := make(chan struct{})
	g2 := newGraph(nil)
	g2.AddNode("a", func(context.Context, tstate) (tupd, error) { started <- struct{}{}; <-block; return tupd{}, nil })
	g2.AddEdge("a", graph.End)
	c2 := compile(t, g2.SetEntry("a"))
	h2, err := c2.HoldThread("t")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := c2.Run(graph.WithThreadHold(ctx, h2), "t", tstate{}); done <- err }()
	<-started
	if _, err := c2.Run(graph.WithThreadHold(ctx, h2), "t", tstate{}); !errors.Is(err, graph.ErrThreadBusy) {
		t.Fatalf("second run under one hold: %v, want ErrThreadBusy", err)
	}
	// Released while a run under it is in progress: the thread stays taken
	// until that run returns.
	h2.Release()
	if _, err := c2.HoldThread("t"); !errors.Is(err, graph.ErrThreadBusy) {
		t.Fatalf("hold during the released hold's run: %v, want ErrThreadBusy", err)
	}
	close(block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	h2.Release() // again: nothing
	h3, err := c2.HoldThread("t")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	h3.Release()
	// A released hold in a context holds nothing: the run takes the thread.
	if _, err := c2.Run(graph.WithThreadHold(ctx, h2), "t", tstate{}); err != nil {
		t.Fatalf("run under a released hold: %v", err)
	}

	h.Release()
	if _, err := c.Run(ctx, "t", tstate{}); err != nil {
		t.Fatalf("run after release: %v", err)
	}
}
