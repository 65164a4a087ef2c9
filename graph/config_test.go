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

// appState encodes itself (graph.JSONAppender), counting its calls.
type appState struct {
	N     int    `json:"n"`
	Label string `json:"label"`
}

var appended atomic.Int32

func (s *appState) AppendJSON(b []byte) ([]byte, error) {
	appended.Add(1)
	b = append(b, `{"n":`...)
	b = strconv.AppendInt(b, int64(s.N), 10)
	b = append(b, `,"label":`...)
	b = strconv.AppendQuote(b, s.Label)
	return append(b, '}'), nil
}

// TestJSONAppenderEncodesTheState: under the default codec, a state that
// appends its own JSON is encoded by it for every checkpoint (the input's
// and each step's), and its checkpoints read back as json.Marshal's would.
func TestJSONAppenderEncodesTheState(t *testing.T) {
	g := graph.New(graph.Config[appState, int]{
		Apply: func(s appState, u int) (appState, error) {
			s.N += u
			s.Label = "after " + strconv.Itoa(s.N)
			return s, nil
		},
	})
	step := func(context.Context, appState) (int, error) { return 1, nil }
	g.AddNode("a", step).AddEdge("a", "b").AddNode("b", step).SetTerminal("b").SetEntry("a")
	c, err := g.Compile()
	if err != nil {
		t.Fatal(err)
	}
	appended.Store(0)
	if _, err := c.Run(context.Background(), "t", appState{Label: "start"}); err != nil {
		t.Fatal(err)
	}
	if got := appended.Load(); got != 3 {
		t.Fatalf("AppendJSON called %d times, want 3 (input state + 2 steps)", got)
	}
	_, tu, err := c.State(context.Background(), "t")
	want, _ := json.Marshal(appState{N: 2, Label: "after 2"})
	if err != nil || string(tu.Checkpoint.State) != string(want) {
		t.Fatalf("stored %s, %v; want %s", tu.Checkpoint.State, err, want)
	}
}
