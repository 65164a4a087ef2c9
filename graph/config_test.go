package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// countingCodec is JSON that counts its calls, to show the engine uses the
// configured Codec for states and updates.
type countingCodec struct{ marshal, unmarshal atomic.Int32 }

func (c *countingCodec) Marshal(v any) ([]byte, error) {
	c.marshal.Add(1)
	return json.Marshal(v)
}

func (c *countingCodec) Unmarshal(b []byte, v any) error {
	c.unmarshal.Add(1)
	return json.Unmarshal(b, v)
}

func TestCodecAndMetadata(t *testing.T) {
	codec := &countingCodec{}
	cnt := newCounter()
	g := graph.New(graph.Config[tstate, tupd]{
		Apply: tapply, Codec: codec,
		Metadata: func(s tstate) map[string]string { return map[string]string{"n": strconv.Itoa(s.N)} },
	})
	g.AddNode("a", logNode(cnt, "a")).AddEdge("a", "b").AddNode("b", logNode(cnt, "b")).SetTerminal("b")
	c := compile(t, g.SetEntry("a"))
	if _, err := c.Run(context.Background(), "t", tstate{}); err != nil {
		t.Fatal(err)
	}
	if got := codec.marshal.Load(); got != 3 { // input state + 2 steps
		t.Fatalf("codec encoded %d times, want 3", got)
	}
	s, tu, err := c.State(context.Background(), "t")
	if err != nil || s.N != 2 || tu.Checkpoint.Metadata["n"] != "2" || codec.unmarshal.Load() != 1 {
		t.Fatalf("State: %+v %+v %v (decoded %d times)", s, tu.Checkpoint.Metadata, err, codec.unmarshal.Load())
	}
	cps, err := c.Store().List(context.Background(), "t", checkpoint.ListOptions{Filter: map[string]string{"n": "1"}})
	if err != nil || len(cps) != 1 || cps[0].Step != 1 {
		t.Fatalf("checkpoints with n=1: %+v, %v", cps, err)
	}
}

// flakyStore is the memory store with Put failing while broken is set: a
// store outage in the middle of a run.
type flakyStore struct {
	*memory.Store
	broken atomic.Bool
}

var errOutage = errors.New("store outage")

func (f *flakyStore) Put(ctx context.Context, cp checkpoint.Checkpoint) error {
	if f.broken.Load() {
		return errOutage
	}
	return f.Store.Put(ctx, cp)
}

func TestStoreFailureThenResume(t *testing.T) {
	store := &flakyStore{Store: memory.New()}
	cnt := newCounter()
	g := newGraph(store)
	g.AddNode("a", logNode(cnt, "a")).AddEdge("a", "b")
	g.AddNode("b", func(ctx context.Context, s tstate) (tupd, error) {
		cnt.inc("b")
		if cnt.get("b") == 1 {
			store.broken.Store(true) // the checkpoint after b cannot be written
		}
		return tupd{Log: "b", N: 1}, nil
	}).AddEdge("b", graph.End)
	c := compile(t, g.SetEntry("a"))
	res, err := c.Run(context.Background(), "t", tstate{})
	if !errors.Is(err, errOutage) || res.Status != graph.StatusFailed || res.Steps != 1 {
		t.Fatalf("run: %v, %+v", err, res)
	}
	store.broken.Store(false)
	res, err = c.Resume(context.Background(), "t", nil)
	if err != nil || res.Status != graph.StatusDone || res.State.N != 2 || cnt.get("b") != 2 {
		t.Fatalf("resume: %v, %+v, b ran %d", err, res, cnt.get("b"))
	}
	if _, err := c.Resume(context.Background(), "t", nil); !errors.Is(err, graph.ErrNoRun) {
		t.Fatalf("second resume: %v", err)
	}
	// A thread that cannot be read is reported, not treated as new.
	if _, _, err := c.State(context.Background(), "missing"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("State of a missing thread: %v", err)
	}
}
