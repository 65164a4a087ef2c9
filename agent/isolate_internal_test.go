package agent

import (
	"errors"
	"runtime"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
)

func TestIsolated(t *testing.T) {
	if v, err := isolated(func() (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Errorf("plain: %v %v", v, err)
	}
	boom := errors.New("boom")
	if _, err := isolated(func() (int, error) { return 0, boom }); err != boom {
		t.Errorf("error: %v", err)
	}
	var pe *capabilities.PanicError
	if _, err := isolated(func() (int, error) { panic("nil map") }); !errors.As(err, &pe) || pe.Value != "nil map" || pe.Stack == "" {
		t.Errorf("panic: %v", err)
	}
	_, err := isolated(func() (int, error) { runtime.Goexit(); return 0, nil })
	if !errors.As(err, &pe) || pe.Value != errGoexit || !errors.Is(err, capabilities.ErrPanic) {
		t.Errorf("goexit: %v", err)
	}
	if cl := capabilities.DefaultClassify(err); cl.Severity != capabilities.Critical || cl.Kind != capabilities.KindPanic {
		t.Errorf("goexit classified %+v", cl)
	}
}

// BenchmarkIsolated is the price of running a capability on its own
// goroutine (a goroutine and a channel hand-off), beside a capability's
// own I/O.
func BenchmarkIsolated(b *testing.B) {
	f := func() (int, error) { return 1, nil }
	b.Run("inline", func(b *testing.B) {
		for b.Loop() {
			_, _ = f()
		}
	})
	b.Run("isolated", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = isolated(f)
		}
	})
}
