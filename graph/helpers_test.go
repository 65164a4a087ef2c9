package graph_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// tstate is the state of the test graphs: Log records the updates in the
// order they were applied, so ordering bugs show as a wrong log.
type tstate struct {
	Log    []string `json:"log"`
	N      int      `json:"n"`
	Answer string   `json:"answer,omitempty"`
}

type tupd struct {
	Log    string `json:"log,omitempty"`
	N      int    `json:"n,omitempty"`
	Answer string `json:"answer,omitempty"`
}

func tapply(s tstate, u tupd) (tstate, error) {
	if u.Log != "" {
		// Copy: concurrent branches share the state they were given.
		s.Log = append(slices.Clip(s.Log), u.Log)
	}
	s.N += u.N
	if u.Answer != "" {
		s.Answer = u.Answer
	}
	return s, nil
}

// counter counts node executions, safely across concurrent branches.
type counter struct {
	mu      sync.Mutex
	n       map[string]int
	changed chan struct{} // closed and replaced on every inc
}

func newCounter() *counter { return &counter{n: map[string]int{}, changed: make(chan struct{})} }

func (c *counter) inc(name string) {
	c.mu.Lock()
	c.n[name]++
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// waitFor blocks until every name has run at least once or ctx is done.
func (c *counter) waitFor(ctx context.Context, names ...string) error {
	for {
		c.mu.Lock()
		ok := true
		for _, n := range names {
			ok = ok && c.n[n] > 0
		}
		ch := c.changed
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *counter) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// logNode returns a node that counts itself and logs its name.
func logNode(cnt *counter, name string) graph.NodeFunc[tstate, tupd] {
	return func(ctx context.Context, s tstate) (tupd, error) {
		cnt.inc(name)
		return tupd{Log: name, N: 1}, nil
	}
}

func compile(t testing.TB, g *graph.Graph[tstate, tupd]) *graph.Compiled[tstate, tupd] {
	t.Helper()
	c, err := g.Compile()
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return c
}

func newGraph(store checkpoint.Store) *graph.Graph[tstate, tupd] {
	if store == nil {
		store = memory.New()
	}
	return graph.New(graph.Config[tstate, tupd]{Apply: tapply, Store: store})
}

// kinds lists the kinds of events, for compact comparisons.
func kinds(evs []graph.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Kind.String()
		if e.Node != "" {
			out[i] += ":" + e.Node
		}
	}
	return out
}

func eventsOf(evs []graph.Event, k graph.EventKind) []graph.Event {
	var out []graph.Event
	for _, e := range evs {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func latest(t testing.TB, c *graph.Compiled[tstate, tupd], thread string) checkpoint.Tuple {
	t.Helper()
	tu, err := c.Store().Get(context.Background(), thread, [16]byte{})
	if err != nil {
		t.Fatalf("Get %s: %v", thread, err)
	}
	return tu
}
