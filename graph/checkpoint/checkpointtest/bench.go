package checkpointtest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
)

// BenchState is the state written by the Put benchmarks: about 2 KiB of JSON,
// the size of a small conversation turn. Raw-commit baselines use a blob of
// the same size.
var BenchState = json.RawMessage(`{"messages":["` + strings.Repeat("x", 2030) + `"]}`)

// Latencies records per-operation durations and reports p50/p99 as benchmark metrics.
type Latencies struct{ d []time.Duration }

// Time runs f and records how long it took.
func (l *Latencies) Time(f func()) {
	t0 := time.Now()
	f()
	l.d = append(l.d, time.Since(t0))
}

// Report adds p50-µs and p99-µs metrics to b.
func (l *Latencies) Report(b *testing.B) { l.ReportAs(b, "") }

// ReportAs is Report with a prefix on the metric names ("put-p50-µs").
func (l *Latencies) ReportAs(b *testing.B, prefix string) {
	if len(l.d) == 0 {
		return
	}
	slices.Sort(l.d)
	at := func(q float64) float64 {
		return float64(l.d[int(q*float64(len(l.d)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(at(0.50), prefix+"p50-µs")
	b.ReportMetric(at(0.99), prefix+"p99-µs")
}

// BenchPutVsRaw alternates one Put and one raw commit (raw: a plain INSERT of
// a BenchState-sized blob in its own transaction on the same database) and
// reports both latencies. Interleaving makes the two comparable on a machine
// whose disk and CPUs are shared: both see the same conditions.
func BenchPutVsRaw(b *testing.B, s checkpoint.Store, raw func(ctx context.Context, blob []byte) error) {
	ctx := context.Background()
	blob := []byte(BenchState)
	parent := uuid.Nil
	var put, rc Latencies
	for i := 0; b.Loop(); i++ {
		cp := checkpoint.Checkpoint{ThreadID: "bench-vs", ID: uuid.Must(uuid.NewV7()), ParentID: parent, Step: i,
			State: BenchState, Next: []string{"node"}, Metadata: map[string]string{"owner": "bench"}, Created: time.Now()}
		put.Time(func() {
			if err := s.Put(ctx, cp); err != nil {
				b.Fatal(err)
			}
		})
		rc.Time(func() {
			if err := raw(ctx, blob); err != nil {
				b.Fatal(err)
			}
		})
		parent = cp.ID
	}
	put.ReportAs(b, "put-")
	rc.ReportAs(b, "raw-")
}

// BenchPut measures sequential checkpoint writes: each Put is one durable
// commit of a BenchState-sized checkpoint on one thread.
func BenchPut(b *testing.B, s checkpoint.Store) {
	ctx := context.Background()
	parent := uuid.Nil
	var lat Latencies
	b.SetBytes(int64(len(BenchState)))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		cp := checkpoint.Checkpoint{ThreadID: "bench-put", ID: uuid.Must(uuid.NewV7()), ParentID: parent, Step: i,
			State: BenchState, Next: []string{"node"}, Metadata: map[string]string{"owner": "bench"}, Created: time.Now()}
		lat.Time(func() {
			if err := s.Put(ctx, cp); err != nil {
				b.Fatal(err)
			}
		})
		parent = cp.ID
	}
	lat.Report(b)
}

// BenchGet measures reading a thread's latest checkpoint, as a turn does
// before it starts: a BenchState-sized checkpoint on a thread of 64, most
// of them with no pending writes.
func BenchGet(b *testing.B, s checkpoint.Store) {
	ctx := context.Background()
	parent := uuid.Nil
	for i := range 64 {
		cp := checkpoint.Checkpoint{ThreadID: "bench-get", ID: uuid.Must(uuid.NewV7()), ParentID: parent, Step: i,
			State: BenchState, Next: []string{"node"}, Metadata: map[string]string{"owner": "bench"}, Created: time.Now()}
		if err := s.Put(ctx, cp); err != nil {
			b.Fatal(err)
		}
		parent = cp.ID
	}
	var lat Latencies
	b.ResetTimer()
	for b.Loop() {
		lat.Time(func() {
			if t, err := s.Get(ctx, "bench-get", uuid.Nil); err != nil || t.Checkpoint.ID != parent {
				b.Fatalf("Get = %v, %v; want the latest, %v", t.Checkpoint.ID, err, parent)
			}
		})
	}
	lat.Report(b)
}

// BenchPutParallel measures write throughput with 8 goroutines per CPU
// (b.SetParallelism), each on its own thread.
func BenchPutParallel(b *testing.B, s checkpoint.Store) {
	ctx := context.Background()
	var seq atomic.Int64
	b.SetBytes(int64(len(BenchState)))
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		thread := fmt.Sprint("bench-par-", seq.Add(1))
		step := 0
		for pb.Next() {
			step++
			cp := checkpoint.Checkpoint{ThreadID: thread, ID: uuid.Must(uuid.NewV7()), Step: step,
				State: BenchState, Created: time.Now()}
			if err := s.Put(ctx, cp); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

type benchState struct {
	Thread string   `json:"thread"`
	Seen   []string `json:"seen"`
	Pad    string   `json:"pad"`
}

// BenchGraph8 measures a whole run of an 8-node chain whose nodes do no work,
// so the time is the engine plus its 9 checkpoints (input + one per step).
func BenchGraph8(b *testing.B, s checkpoint.Store) {
	g := graph.New(graph.Config[benchState, string]{Store: s,
		Apply: func(st benchState, node string) (benchState, error) {
			st.Seen = append(slices.Clip(st.Seen), node)
			return st, nil
		}})
	for i := 1; i <= 8; i++ {
		name := fmt.Sprint("n", i)
		g.AddNode(name, func(context.Context, benchState) (string, error) { return name, nil })
		if i < 8 {
			g.AddEdge(name, fmt.Sprint("n", i+1))
		} else {
			g.AddEdge(name, graph.End)
		}
	}
	g.SetEntry("n1")
	c, err := g.Compile()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	pad := strings.Repeat("x", 2000)
	var lat Latencies
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		thread := fmt.Sprint("bench-graph-", i)
		lat.Time(func() {
			res, err := c.Run(ctx, thread, benchState{Thread: thread, Pad: pad})
			if err != nil || res.Status != graph.StatusDone || len(res.State.Seen) != 8 {
				b.Fatalf("run: %v %s %v", err, res.Status, res.State.Seen)
			}
		})
	}
	lat.Report(b)
}
