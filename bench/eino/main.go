// Command eino measures the hub-and-spoke run of package hub on eino's
// compose.Graph (no checkpoints) and on capgraph's engine (a checkpoint after
// every step), and prints ns/run, allocations per run and the ratio
// capgraph ÷ eino. Every run's result is checked.
//
//	cd bench && go run ./eino [-rounds 5] [-blocks 3] [-runs 1000]
//
// The engines are measured in alternating blocks of runs, in shuffled order,
// so that on a shared machine both see the same load; each block runs in a
// process of its own (this program, started again with -child), warmed up
// first, so that no engine's garbage or heap size is charged to the other.
// Each round prints its ratios, and the summary gives the best and median
// round. Besides wall time, each block's CPU time (the process's user +
// system time, so garbage collection on the other core counts) is reported:
// on a loaded machine it moves less than wall time, which also counts the
// time spent waiting for a core.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capgraph/capgraph/bench/hub"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

func main() {
	rounds := flag.Int("rounds", 5, "rounds; each gives one ratio per capgraph variant")
	blocks := flag.Int("blocks", 3, "blocks of runs per engine and round, alternating between engines")
	runs := flag.Int("runs", 1000, "runs per block")
	child := flag.Int("child", -1, "internal: run one block of the contender with this index and print its times")
	flag.Parse()
	var err error
	if *child >= 0 {
		err = runChild(*child, *runs)
	} else {
		err = run(*rounds, *blocks, *runs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "eino:", err)
		os.Exit(1)
	}
}

// runChild runs one block: warm-up runs, a GC, then runs timed runs of
// contender i, printing the wall and CPU nanoseconds they took.
func runChild(i, runs int) error {
	cs, err := contenders(context.Background())
	if err != nil {
		return err
	}
	if i >= len(cs) {
		return fmt.Errorf("no contender %d", i)
	}
	c := cs[i]
	for range max(runs/5, 100) {
		if err := c.once(); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	runtime.GC()
	t0, c0 := time.Now(), cpuTime()
	for range runs {
		if err := c.once(); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	fmt.Println(time.Since(t0).Nanoseconds(), (cpuTime() - c0).Nanoseconds())
	return nil
}

// block runs one block of contender i in a child process.
func block(i, runs int) (wall, cpu time.Duration, err error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	cmd := exec.Command(exe, "-child", strconv.Itoa(i), "-runs", strconv.Itoa(runs))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, 0, fmt.Errorf("block of contender %d: %w", i, err)
	}
	var w, c int64
	if _, err := fmt.Sscan(string(out), &w, &c); err != nil {
		return 0, 0, fmt.Errorf("block of contender %d printed %q: %w", i, out, err)
	}
	return time.Duration(w), time.Duration(c), nil
}

// contender is one engine set-up: once runs one whole run and checks it.
type contender struct {
	name   string
	once   func() error
	ns     []float64 // wall time per run, per round
	cpu    []float64 // CPU time per run, per round
	allocs float64
	bytes  float64
}

// contenders builds every engine set-up, eino first.
func contenders(ctx context.Context) ([]*contender, error) {
	er, err := hub.Eino(ctx)
	if err != nil {
		return nil, err
	}
	cs := []*contender{{name: "eino compose.Graph (no checkpoints)", once: func() error {
		out, err := er.Invoke(ctx, hub.State{})
		if err != nil {
			return err
		}
		return hub.Check(out)
	}}}
	for _, v := range []struct {
		name   string
		store  checkpoint.Store
		stream bool
	}{
		{"capgraph Run, memory store", memory.New(), false},
		{"capgraph Run, latest-only store", memory.NewLatestOnly(), false},
		{"capgraph Stream, memory store", memory.New(), true},
		{"capgraph Stream, latest-only store", memory.NewLatestOnly(), true},
	} {
		c, err := hub.Capgraph(v.store)
		if err != nil {
			return nil, err
		}
		cs = append(cs, &contender{name: v.name, once: capgraphOnce(ctx, c, v.store, v.stream)})
	}
	return cs, nil
}

func run(rounds, blocks, runs int) error {
	cs, err := contenders(context.Background())
	if err != nil {
		return err
	}
	for _, c := range cs {
		if err := c.once(); err != nil { // also warms up
			return fmt.Errorf("%s: %w", c.name, err)
		}
		var failed error
		c.allocs = testing.AllocsPerRun(50, func() {
			if err := c.once(); err != nil {
				failed = err
			}
		})
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for range 50 {
			if err := c.once(); err != nil {
				failed = err
			}
		}
		runtime.ReadMemStats(&m1)
		c.bytes = float64(m1.TotalAlloc-m0.TotalAlloc) / 50
		if failed != nil {
			return fmt.Errorf("%s: %w", c.name, failed)
		}
	}

	fmt.Printf("hub and spoke: a router with a conditional edge to %d workers, %d round trips, %d node executions per run\n",
		len(hub.Workers), hub.Trips, 2*hub.Trips+1)
	fmt.Printf("capgraph writes a checkpoint after every step (%d per run); eino writes none\n", 2*hub.Trips+2)
	fmt.Printf("%s/%s, %d CPUs (%s), %s, GOMAXPROCS %d\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel(), runtime.Version(), runtime.GOMAXPROCS(0))
	fmt.Printf("%d rounds × %d blocks × %d runs per engine, blocks alternating in shuffled order, one process per block\n\n", rounds, blocks, runs)

	for r := 1; r <= rounds; r++ {
		wall := make([]time.Duration, len(cs))
		cpu := make([]time.Duration, len(cs))
		for range blocks {
			for _, i := range rand.Perm(len(cs)) {
				w, c, err := block(i, runs)
				if err != nil {
					return err
				}
				wall[i] += w
				cpu[i] += c
			}
		}
		fmt.Printf("round %d, × eino wall (CPU):", r)
		for i, c := range cs {
			c.ns = append(c.ns, float64(wall[i].Nanoseconds())/float64(blocks*runs))
			c.cpu = append(c.cpu, float64(cpu[i].Nanoseconds())/float64(blocks*runs))
			if i > 0 {
				fmt.Printf("  %.3f (%.3f)", c.ns[r-1]/cs[0].ns[r-1], c.cpu[r-1]/cs[0].cpu[r-1])
			}
		}
		fmt.Println()
	}

	fmt.Printf("\n%-36s %11s %11s %11s %10s %9s %22s %22s\n", "", "best ns/run", "median", "median CPU", "allocs/run", "B/run",
		"× eino wall: median (range)", "× eino CPU: median (range)")
	for i, c := range cs {
		ns := slices.Sorted(slices.Values(c.ns))
		cpu := slices.Sorted(slices.Values(c.cpu))
		wallRatio, cpuRatio := "", ""
		if i > 0 {
			wallRatio, cpuRatio = ratios(c.ns, cs[0].ns), ratios(c.cpu, cs[0].cpu)
		}
		fmt.Printf("%-36s %11.0f %11.0f %11.0f %10.0f %9.0f %22s %22s\n", c.name, ns[0], ns[len(ns)/2], cpu[len(cpu)/2], c.allocs, c.bytes, wallRatio, cpuRatio)
	}
	return nil
}

// ratios describes a[r]/b[r] over the rounds r: the median and the range.
func ratios(a, b []float64) string {
	rs := make([]float64, len(a))
	for r := range a {
		rs[r] = a[r] / b[r]
	}
	slices.Sort(rs)
	return fmt.Sprintf("%.3f (%.3f–%.3f)", rs[len(rs)/2], rs[0], rs[len(rs)-1])
}

// cpuTime is the CPU time the process has used, all threads.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// capgraphOnce runs the graph on one thread and deletes the thread, as a
// server does with a finished conversation, so the store holds one run at a
// time. Run keeps the trace (every event of the run in Result.Trace); Stream
// hands each event to the loop instead.
func capgraphOnce(ctx context.Context, c *graph.Compiled[hub.State, hub.State], store checkpoint.Store, stream bool) func() error {
	return func() error {
		var (
			final hub.State
			steps int
		)
		if stream {
			for ev, err := range c.Stream(ctx, "hub", hub.State{}) {
				if err != nil {
					return err
				}
				if ev.Kind == graph.EventCheckpoint {
					steps = ev.Step
				}
			}
			s, _, err := c.State(ctx, "hub")
			if err != nil {
				return err
			}
			final = s
		} else {
			res, err := c.Run(ctx, "hub", hub.State{})
			if err != nil {
				return err
			}
			final, steps = res.State, res.Steps
		}
		if err := hub.Check(final); err != nil {
			return err
		}
		if steps != 2*hub.Trips+1 {
			return fmt.Errorf("%d steps, want %d", steps, 2*hub.Trips+1)
		}
		return store.DeleteThread(ctx, "hub")
	}
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
