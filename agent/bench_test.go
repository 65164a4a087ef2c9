package agent_test

import (
	"fmt"
	"testing"
)

// BenchmarkTurn measures one whole turn (task, classifier, orchestrator, two
// steps, respond) over the in-memory store, with scripted nodes: the agent's
// own overhead per turn (a new thread each time, so history does not grow).
func BenchmarkTurn(b *testing.B) {
	w := newWorld("read_a", "read_b")
	a := mustAgent(b, w.config(b))
	i := 0
	for b.Loop() {
		i++
		if o := run(b, a, fmt.Sprint("bench-", i), "x"); o.err != nil {
			b.Fatal(o.err)
		}
	}
}
