package agent

import (
	"errors"
	"runtime/debug"

	"github.com/capgraph/capgraph/capabilities"
)

// errGoexit is the value of the *capabilities.PanicError of application code
// that called runtime.Goexit (t.FailNow in a shared test helper, say)
// instead of returning.
var errGoexit = errors.New("runtime.Goexit called instead of returning")

// isolated runs f on a goroutine of its own and waits for it. A panic in f,
// or runtime.Goexit, becomes a *capabilities.PanicError (CRITICAL, kind
// panic). Goexit cannot be recovered on the goroutine that calls it: run
// inline, it would end the graph's goroutine — for a one-node step, the
// caller's, reading the turn's events — with no error and no done event.
func isolated[T any](f func() (T, error)) (T, error) {
	r := <-goIsolated(f)
	return r.v, r.err
}

// isolatedResult is what f returned, or the *capabilities.PanicError of
// its panic or runtime.Goexit.
type isolatedResult[T any] struct {
	v   T
	err error
}

// goIsolated starts f as isolated runs it and returns the channel its
// result arrives on, for a caller that may stop waiting (executeBounded):
// the channel is buffered, so a result nobody takes is dropped with it.
func goIsolated[T any](f func() (T, error)) <-chan isolatedResult[T] {
	ch := make(chan isolatedResult[T], 1)
	go func() {
		returned := false
		defer func() {
			if returned {
				return
			}
			if v := recover(); v != nil {
				ch <- isolatedResult[T]{err: panicErr(v)}
				return
			}
			ch <- isolatedResult[T]{err: &capabilities.PanicError{Value: errGoexit, Stack: string(debug.Stack())}}
		}()
		v, err := f()
		returned = true
		ch <- isolatedResult[T]{v, err}
	}()
	return ch
}
