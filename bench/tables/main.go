// Command tables prints the tables of docs/performance.md that are not the
// engine's comparison with eino (../eino): SQLite group commit, a turn
// without the model, parallel steps and the server under load, each beside
// its goal, after a description of the machine (OS, CPU model, cores,
// GOMAXPROCS, Go version, load average, the time of a synced 4 KiB write).
//
//	cd bench && go run ./tables [-count 3] [-load 30s] [-clients 200] [-latency 200ms]
//
// The figures come from the benchmarks in the packages they measure, run
// with `go test` in the repository (the parent of this module), and from the
// load command (../load), run as a process of its own; so the tables and
// `go test -bench` never disagree about what is measured.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	count := flag.Int("count", 3, "runs of each benchmark (the tables give the range)")
	load := flag.Duration("load", 30*time.Second, "measured load per store of the server table; 0 skips it")
	clients := flag.Int("clients", 200, "clients of the server table")
	latency := flag.Duration("latency", 200*time.Millisecond, "the scripted model's latency per call in the server table")
	flag.Parse()
	if err := run(*count, *load, *clients, *latency); err != nil {
		fmt.Fprintln(os.Stderr, "tables:", err)
		os.Exit(1)
	}
}

func run(count int, load time.Duration, clients int, latency time.Duration) error {
	root, err := filepath.Abs("..")
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "graph", "checkpoint", "sqlite")); err != nil {
		return fmt.Errorf("run from bench/ in the repository: %w", err)
	}
	fmt.Println("# Machine")
	fmt.Println()
	fmt.Printf("%s/%s, %s, %d cores, GOMAXPROCS %d, %s\n", runtime.GOOS, runtime.GOARCH, cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	fmt.Printf("load average at start: %s; a 4 KiB overwrite + fsync: %s (median of 200)\n\n", loadavg(), syncedWrite())

	// Group commit.
	gc, err := bench(root, "./graph/checkpoint/sqlite", "GroupCommit", "-benchtime", "4x", "-count", strconv.Itoa(count))
	if err != nil {
		return err
	}
	fmt.Println("# SQLite group commit")
	fmt.Println()
	fmt.Println("go test ./graph/checkpoint/sqlite -run '^$' -bench GroupCommit -benchtime 4x")
	fmt.Println()
	fmt.Println("| goroutines | single-commit loop, checkpoints/s | group commit, checkpoints/s | group ÷ single | goal |")
	fmt.Println("| --- | --- | --- | --- | --- |")
	for _, th := range []string{"1", "8", "64"} {
		name := "BenchmarkGroupCommit/threads=" + th
		goal := ""
		if th == "64" {
			goal = "≥ 3 ×"
		}
		fmt.Printf("| %s | %s | %s | %s | %s |\n", th, gc.span(name, "single-cp/s", "%.0f"), gc.span(name, "group-cp/s", "%.0f"), gc.span(name, "group/single", "%.2f"), goal)
	}
	fmt.Println()

	// The turn.
	tu, err := bench(root, "./agent", "TurnScriptedModel", "-benchmem", "-benchtime", "1s", "-count", strconv.Itoa(count))
	if err != nil {
		return err
	}
	fmt.Println("# A turn without the model")
	fmt.Println()
	fmt.Println("go test ./agent -run '^$' -bench TurnScriptedModel -benchmem")
	fmt.Println()
	fmt.Println("| store | µs per turn | CPU µs per turn | allocs | B | commits per node step | goal |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- |")
	fmt.Printf("| memory | %s | %s | %s | %s | — | < 200 µs |\n", tu.span("BenchmarkTurnScriptedModel/memory", "ns/op", "µs"),
		tu.span("BenchmarkTurnScriptedModel/memory", "cpu-µs/turn", "%.0f"),
		tu.span("BenchmarkTurnScriptedModel/memory", "allocs/op", "%.0f"), tu.span("BenchmarkTurnScriptedModel/memory", "B/op", "%.0f"))
	fmt.Printf("| SQLite | %s | — | %s | %s | %s | about 1 |\n", tu.span("BenchmarkTurnScriptedModel/sqlite", "ns/op", "µs"),
		tu.span("BenchmarkTurnScriptedModel/sqlite", "allocs/op", "%.0f"), tu.span("BenchmarkTurnScriptedModel/sqlite", "B/op", "%.0f"),
		tu.span("BenchmarkTurnScriptedModel/sqlite", "commits/step", "%.3f"))
	fmt.Println()

	// Parallel steps.
	ps, err := bench(root, "./agent", "ParallelSteps", "-benchtime", "5x", "-count", strconv.Itoa(count))
	if err != nil {
		return err
	}
	fmt.Println("# Parallel steps")
	fmt.Println()
	fmt.Println("go test ./agent -run '^$' -bench ParallelSteps -benchtime 5x")
	fmt.Println()
	fmt.Println("| store | wall time ÷ slowest step (4 independent steps of 200 ms) | goal |")
	fmt.Println("| --- | --- | --- |")
	for _, st := range []string{"memory", "sqlite"} {
		fmt.Printf("| %s | %s | ≤ 1.1 |\n", st, ps.span("BenchmarkParallelSteps/"+st, "wall/slowest", "%.3f"))
	}
	fmt.Println()

	if load > 0 {
		fmt.Println("# The server under load")
		fmt.Println()
		fmt.Printf("go run ./load -clients %d -latency %s -duration %s -runs %d\n\n", clients, latency, load, count)
		cmd := exec.Command("go", "run", "./load", "-clients", strconv.Itoa(clients), "-latency", latency.String(), "-duration", load.String(), "-runs", strconv.Itoa(count))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("load: %w", err)
		}
		os.Stdout.Write(out)
		fmt.Println("goals at 200 clients and 200 ms: p99 added ≤ 5 ms (memory), ≤ 50 ms (SQLite); 0 errors; ≤ 20 KB per idle thread")
		fmt.Println()
	}
	fmt.Printf("load average at the end: %s\n", loadavg())
	return nil
}

// results are benchmark lines: per benchmark name (without -GOMAXPROCS),
// each run's metrics by unit.
type results map[string][]map[string]float64

// bench runs `go test -bench` in root for pkg and parses the lines.
func bench(root, pkg, pattern string, args ...string) (results, error) {
	cmd := exec.Command("go", append([]string{"test", pkg, "-run", "^$", "-bench", pattern}, args...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go test %s -bench %s: %w\n%s%s", pkg, pattern, err, out, stderr.Bytes())
	}
	res := results{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			name = name[:i]
		}
		m := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				m[f[i+1]] = v
			}
		}
		res[name] = append(res[name], m)
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("go test %s -bench %s printed no benchmark:\n%s", pkg, pattern, out)
	}
	return res, nil
}

// span gives the range of a metric over the runs, lowest–highest (one
// value for one run). format "µs" prints nanoseconds as microseconds.
func (r results) span(name, unit, format string) string {
	var vs []float64
	for _, m := range r[name] {
		if v, ok := m[unit]; ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return "?"
	}
	slices.Sort(vs)
	f := func(v float64) string {
		if format == "µs" {
			return fmt.Sprintf("%.0f", v/1e3)
		}
		return fmt.Sprintf(format, v)
	}
	if len(vs) == 1 {
		return f(vs[0])
	}
	return fmt.Sprintf("%s–%s", f(vs[0]), f(vs[len(vs)-1]))
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

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// syncedWrite measures what a durable commit rests on: a 4 KiB write and
// fsync in a temporary directory, the median of 200.
func syncedWrite() string {
	f, err := os.CreateTemp("", "capgraph-fsync-")
	if err != nil {
		return "unknown"
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	var ds []time.Duration
	for i := range 200 {
		t0 := time.Now()
		if _, err := f.WriteAt(buf, int64(i%16)*4096); err != nil {
			return "unknown"
		}
		if err := f.Sync(); err != nil {
			return "unknown"
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	return ds[len(ds)/2].Round(time.Microsecond).String()
}
