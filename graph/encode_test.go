package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// What JSON refuses (±Inf, NaN) in what the engine encodes — a node's
// interrupt payload, the state after a step, a resume value — is an
// *EncodeError (errors.Is ErrEncode) naming what could not be encoded,
// never an untyped error; the run ends as after a node's error, with the
// thread's last checkpoint the one before. A payload that encodes itself
// (a JSONAppender) is encoded that way.

// level is a payload holding a number JSON may refuse.
type level struct {
	Value float64 `json:"value"`
}

// spelledLevel encodes a value that is not finite as a string, as a type
// that may hold one does.
type spelledLevel struct{ Value float64 }

func (l spelledLevel) AppendJSON(b []byte) ([]byte, error) {
	if math.IsInf(l.Value, 0) || math.IsNaN(l.Value) {
		return append(b, `{"value":"`+formatFloat(l.Value)+`"}`...), nil
	}
	v, err := json.Marshal(level(l))
	return append(b, v...), err
}

func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case f > 0:
		return "+Inf"
	}
	return "-Inf"
}

func TestInterruptPayloadJSONRefusesIsTyped(t *testing.T) {
	for _, bad := range []float64{math.Inf(1), math.Inf(-1), math.NaN()} {
		err := graph.Interrupt(level{Value: bad})
		var ee *graph.EncodeError
		if !errors.As(err, &ee) || !errors.Is(err, graph.ErrEncode) || ee.What != "the interrupt payload" {
			t.Fatalf("Interrupt(%v) = %v; want an *EncodeError of the interrupt payload", bad, err)
		}
		if _, ok := graph.IsInterrupt(err); ok {
			t.Fatalf("Interrupt(%v) reads as an interrupt", bad)
		}
		ie, ok := graph.IsInterrupt(graph.Interrupt(spelledLevel{Value: bad}))
		if !ok || string(ie.Payload) != `{"value":"`+formatFloat(bad)+`"}` {
			t.Fatalf("a payload that spells %v: %+v", bad, ie)
		}
	}
	ie, ok := graph.IsInterrupt(graph.Interrupt(spelledLevel{Value: 105}))
	if !ok || string(ie.Payload) != `{"value":105}` {
		t.Fatalf("a finite payload: %+v", ie)
	}
}

// On a compiled graph: the node whose payload cannot be encoded fails the
// run with the typed error; the thread keeps its checkpoint before it.
func TestRunWithPayloadJSONRefuses(t *testing.T) {
	cnt := newCounter()
	c := chain(cnt, nil, func(ctx context.Context, s tstate) (tupd, error) {
		cnt.inc("b")
		return tupd{}, graph.Interrupt(level{Value: math.Inf(1)})
	})
	res, err := c.Run(context.Background(), "t", tstate{})
	var ee *graph.EncodeError
	if !errors.As(err, &ee) || !errors.Is(err, graph.ErrNodeFailed) || res.Status != graph.StatusFailed {
		t.Fatalf("run: %v (status %s); want the node failed with an *EncodeError", err, res.Status)
	}
	if tu := latest(t, c, "t"); strings.Join(decodeLog(t, tu.Checkpoint.State), ",") != "a" {
		t.Fatalf("the thread's last checkpoint holds %s", tu.Checkpoint.State)
	}
	if cnt.get("c") != 0 {
		t.Fatal("the run went on after the failed interrupt")
	}
	if _, err := c.Resume(context.Background(), "t", math.NaN()); !errors.Is(err, graph.ErrEncode) || !strings.Contains(err.Error(), "the resume value") {
		t.Fatalf("resume with NaN: %v; want an *EncodeError of the resume value", err)
	}
}

func decodeLog(t *testing.T, b []byte) []string {
	t.Helper()
	var s tstate
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s.Log
}

// fstate is a state JSON may refuse to encode.
type fstate struct {
	Level float64 `json:"level"`
}

func TestStateJSONRefusesIsTyped(t *testing.T) {
	g := graph.New(graph.Config[fstate, float64]{Store: memory.New(),
		Apply: func(s fstate, u float64) (fstate, error) { s.Level = u; return s, nil }})
	g.AddNode("set", func(context.Context, fstate) (float64, error) { return math.Inf(-1), nil }).SetTerminal("set")
	c, err := g.SetEntry("set").Compile()
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(context.Background(), "t", fstate{Level: 1})
	var ee *graph.EncodeError
	if !errors.As(err, &ee) || ee.What != "the state after step 1" || res.Status != graph.StatusFailed {
		t.Fatalf("run: %v (status %s); want an *EncodeError of the state after step 1", err, res.Status)
	}
	tu, err := c.Store().Get(context.Background(), "t", [16]byte{})
	if err != nil || string(tu.Checkpoint.State) != `{"level":1}` {
		t.Fatalf("the thread's last checkpoint: %s, %v", tu.Checkpoint.State, err)
	}
	if _, err := c.Run(context.Background(), "u", fstate{Level: math.NaN()}); !errors.Is(err, graph.ErrEncode) || !strings.Contains(err.Error(), "the input state") {
		t.Fatalf("run from NaN: %v; want an *EncodeError of the input state", err)
	}
}
