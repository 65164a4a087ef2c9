package nodes

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
)

// goroutineID is the running goroutine's number, from its stack's header.
func goroutineID() uint64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf, _ = bytes.CutPrefix(buf, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(buf[:bytes.IndexByte(buf, ' ')]), 10, 64)
	return id
}

// whereCalled answers as its inner model does and notes the goroutine each
// call runs on; cancelable is what it says of itself (llm.Cancelable).
type whereCalled struct {
	inner      llm.Model
	cancelable bool
	on         atomic.Uint64
}

func (w *whereCalled) For(llm.Role) (llm.Model, bool) { return w, true }
func (w *whereCalled) Cancelable() bool               { return w.cancelable }
func (w *whereCalled) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	w.on.Store(goroutineID())
	return w.inner.Generate(ctx, req)
}

// A model that returns when its context ends (llm.Cancelable) is asked on
// the node's own goroutine: no goroutine and no hand-over a call. Any other
// is asked on a goroutine the node can abandon when the run stops
// (TestStopEndsTheRunInsideADeafModelCall in agent).
func TestACancelableModelIsAskedInPlace(t *testing.T) {
	for _, cancelable := range []bool{true, false} {
		inner, _ := llmtest.New().Script(llm.RoleTaskExtraction,
			llmtest.Text(`{"task": "Read the RF voltage of cavity 2", "depends_on_chat_history": false}`)).For(llm.RoleTaskExtraction)
		m := &whereCalled{inner: inner, cancelable: cancelable}
		cfg := cfgFor(controlRoom(t))
		cfg.Models = m
		n, err := NewTaskExtraction(cfg)
		if err != nil {
			t.Fatal(err)
		}
		node := goroutineID()
		if _, err := n.Run(context.Background(), newState("What is the RF voltage of cavity 2?")); err != nil {
			t.Fatal(err)
		}
		if inPlace := m.on.Load() == node; inPlace != cancelable {
			t.Errorf("Cancelable %t: asked on the node's goroutine %t, want %t", cancelable, inPlace, cancelable)
		}
	}
}
