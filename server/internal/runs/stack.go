package runs

// growStack grows the calling goroutine's stack to 32 KB in one copy, while
// it is still shallow. A run's goroutine reaches that depth in its first
// step anyway (the graph, the agent, a node, a model call, JSON); grown in
// steps from Go's 8 KB start, each doubling copies the stack and walks its
// frames again — 3 % of the server's CPU under load (docs/performance.md,
// "after the fifth session's cuts").
//
//go:noinline
func growStack() byte {
	var pad [16 << 10]byte
	return lastByte(pad[:])
}

// lastByte uses b, so the compiler keeps growStack's frame.
//
//go:noinline
func lastByte(b []byte) byte { return b[len(b)-1] }
