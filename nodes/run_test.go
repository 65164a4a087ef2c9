package nodes

import (
	"context"
	"testing"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/state"
)

// runNode runs one node inside a one-node graph so its graph.Emit payloads
// are observed; it returns the new state (on success), the payloads and the
// node's error.
func runNode(t *testing.T, n Node, s state.State) (state.State, []any, error) {
	t.Helper()
	var nodeErr error
	g := graph.New(graph.Config[state.State, state.Update]{Apply: state.Apply}).
		AddNode(n.Name(), func(ctx context.Context, s state.State) (state.Update, error) {
			u, err := n.Run(ctx, s)
			if err != nil {
				nodeErr = err
				return state.Update{}, nil
			}
			return u, nil
		}).SetEntry(n.Name()).SetTerminal(n.Name())
	c, err := g.Compile()
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(context.Background(), t.Name(), s)
	if err != nil {
		t.Fatal(err)
	}
	var payloads []any
	for _, e := range res.Trace.All() {
		if e.Kind == graph.EventCustom {
			payloads = append(payloads, e.Payload)
		}
	}
	return res.State, payloads, nodeErr
}

func payloadsOf[T any](ps []any) []T {
	var out []T
	for _, p := range ps {
		if v, ok := p.(T); ok {
			out = append(out, v)
		}
	}
	return out
}
