// Command load measures a capgraph server under load: concurrent clients
// (package loadgen) streaming Chat Completions against the server
// `capgraph serve` runs — the control-room application, the same wiring
// (package wiring), on loopback — whose model is the scripted one
// (llm/llmtest) answering every call after a fixed latency. It prints, per
// store, turns per second, the p50 and p99 latency a turn adds to its model
// calls, the errors, the server's resident memory per idle thread and, on
// SQLite, the store's growth per conversation.
//
//	cd bench && go run ./load [-stores floor,memory,sqlite] [-clients 200] [-latency 200ms] [-duration 30s]
//
// The floor is the same load against a bare handler that waits out the
// turn's four model calls and streams as capgraph does, without capgraph:
// what the client, HTTP and the machine's scheduling add by themselves, so
// that each store's figures can be read beside it.
//
// The server runs in a process of its own (this program, started again
// with -serve), so its resident memory is its own. Each store gets a
// warm-up load first (the same clients, not counted), then a memory
// snapshot, the measured load and a second snapshot; a snapshot is taken
// after a garbage collection that returns freed memory to the system.
// Every conversation is new (one question, a new thread), so the threads
// left behind are idle: the snapshots' difference divided by the threads
// the measured load created is the memory an idle thread costs.
package main

import (
	"bufio"
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/capgraph/capgraph/bench/loadgen"
)

// Answer is the scripted model's answer; every turn must end with it.
const Answer = "The stored beam current (SR:DCCT:CURRENT) is 500.2 mA."

func main() {
	serve := flag.Bool("serve", false, "internal: run the server and answer commands on stdin")
	stores := flag.String("stores", "floor,memory,sqlite", "stores to measure, in order: floor (the same load without capgraph), memory, sqlite")
	clients := flag.Int("clients", 200, "concurrent clients")
	latency := flag.Duration("latency", 200*time.Millisecond, "the scripted model's latency, per call")
	duration := flag.Duration("duration", 30*time.Second, "measured load per store")
	warmup := flag.Duration("warmup", 5*time.Second, "warm-up load per store, not counted")
	ramp := flag.Duration("ramp", -1, "spread the clients' starts over this time (default: one turn's model time, 4 × latency; 0 starts them together, in step)")
	keep := flag.String("keep-intermediate", "false", "checkpoints.keep_intermediate of the server: false (prune when a turn ends), true, or a duration")
	store := flag.String("store", "memory", "internal (-serve): the store")
	dir := flag.String("dir", "", "internal (-serve): the directory of the SQLite file")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the server during each measured load to FILE.STORE")
	heapprofile := flag.String("heapprofile", "", "write a heap profile of the server after each measured load to FILE.STORE")
	flag.StringVar(&traceFile, "trace", "", "write an execution trace of the server's first 5 s of each measured load to FILE.STORE (go tool trace)")
	flag.Parse()
	var err error
	if *serve {
		err = runServer(*store, *dir, *latency, *keep)
	} else {
		keepIntermediate = *keep
		if *ramp < 0 {
			*ramp = 4 * *latency
		}
		clientRamp = *ramp
		err = run(strings.Split(*stores, ","), *clients, *latency, *duration, *warmup, *cpuprofile, *heapprofile)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

// row is one store's measurement.
type row struct {
	store                    string
	turns, errors            int
	elapsed                  time.Duration
	callsPerTurn             float64
	p50, p99, p50add, p99add time.Duration
	p50model                 time.Duration
	late                     [2]time.Duration // the model's calls returning late: p50, p99
	// medianPhases and slowPhases split the added time of the median turn
	// and, on average, of the slowest 1 % (phases).
	medianPhases, slowPhases   [3]time.Duration
	cpuPerTurn                 time.Duration // the server process's CPU time per turn
	rssPerThread, storePerConv float64       // bytes; storePerConv < 0: not measured
	fileBytes, threads         int64
	firstErrors                []string
}

func run(stores []string, clients int, latency, duration, warmup time.Duration, cpuprofile, heapprofile string) error {
	fmt.Printf("capgraph server under load: %d clients streaming Chat Completions, one new conversation per question\n", clients)
	fmt.Printf("control-room application, scripted model answering each call after %v; %v measured after %v of warm-up, per store\n", latency, duration, warmup)
	fmt.Printf("checkpoints.keep_intermediate: %s; the clients' starts spread over %v\n", keepIntermediate, clientRamp)
	fmt.Printf("%s/%s, %d CPUs (%s), %s, GOMAXPROCS %d\n\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel(), runtime.Version(), runtime.GOMAXPROCS(0))
	var rows []row
	for _, st := range stores {
		r, err := measure(strings.TrimSpace(st), clients, latency, duration, warmup, cpuprofile, heapprofile)
		if err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
		rows = append(rows, r)
	}
	fmt.Printf("%-7s %7s %8s %10s %10s %9s %9s %10s %10s %7s %12s %14s\n", "store", "turns", "turns/s", "calls/turn", "p50 model",
		"p50 turn", "p99 turn", "p50 added", "p99 added", "errors", "RSS/idle thr", "store/conv")
	for _, r := range rows {
		perConv := "—"
		if r.storePerConv >= 0 {
			perConv = fmt.Sprintf("%.2f KB", r.storePerConv/1024)
		}
		fmt.Printf("%-7s %7d %8.1f %10.2f %10s %9s %9s %10s %10s %7d %9.2f KB %14s\n", r.store, r.turns, float64(r.turns)/r.elapsed.Seconds(), r.callsPerTurn,
			ms(r.p50model), ms(r.p50), ms(r.p99), ms(r.p50add), ms(r.p99add), r.errors, r.rssPerThread/1024, perConv)
	}
	fmt.Println()
	fmt.Printf("%-7s %18s %18s %16s\n", "store", "server CPU / turn", "model call late p50", "p99")
	for _, r := range rows {
		fmt.Printf("%-7s %18s %18s %16s\n", r.store, ms(r.cpuPerTurn), ms(r.late[0]), ms(r.late[1]))
	}
	fmt.Println()
	fmt.Printf("%-7s %-26s %15s %14s %16s\n", "store", "added time of", "before 1st call", "between calls", "after last call")
	for _, r := range rows {
		fmt.Printf("%-7s %-26s %15s %14s %16s\n", r.store, "the median turn", ms(r.medianPhases[0]), ms(r.medianPhases[1]), ms(r.medianPhases[2]))
		fmt.Printf("%-7s %-26s %15s %14s %16s\n", "", "the slowest 1 % (mean)", ms(r.slowPhases[0]), ms(r.slowPhases[1]), ms(r.slowPhases[2]))
	}
	for _, r := range rows {
		for _, e := range r.firstErrors {
			fmt.Printf("%s: error: %s\n", r.store, e)
		}
	}
	fmt.Println("\nfloor = the same clients against a bare handler that waits out four model calls and streams, without capgraph")
	fmt.Println("added = a turn's latency at the client minus the time of its model calls, as the model measured them")
	fmt.Println("late = how much later than asked the scripted model's timer woke it: the machine's scheduling delay, which")
	fmt.Println("       every wake-up of a turn (its steps, its commits, its stream writes) pays as well")
	fmt.Println("before 1st call = request to the first model call: the request, the thread, the run, the turn's first step")
	fmt.Println("between calls = the turn's steps and checkpoints; after last call = the answer's steps, stream and client")
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/1e6) }

// measure starts a server on store, loads it and takes its snapshots.
// traceFile is the -trace flag.
var traceFile string

func measure(store string, clients int, latency, duration, warmup time.Duration, cpuprofile, heapprofile string) (row, error) {
	r := row{store: store, storePerConv: -1}
	dir, err := os.MkdirTemp("", "capgraph-load-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	srv, err := startServer(store, dir, latency)
	if err != nil {
		return r, err
	}
	defer srv.stop()
	cfg := loadgen.Config{BaseURL: "http://" + srv.addr, APIKey: apiKey, Clients: clients, Ramp: clientRamp,
		Timeout: 10*time.Minute + 10*latency,
		// Each question is tagged, so the server's model can add up the
		// time of each turn's calls.
		Question: func(c, n int) string { return fmt.Sprintf("whats the beam current right now? [load %d-%d]", c, n) },
		Check: func(a string) error {
			if !strings.Contains(a, Answer) {
				return fmt.Errorf("answer %.120q is not the scripted one", a)
			}
			return nil
		}}
	ctx := context.Background()
	if warmup > 0 {
		cfg.Duration = warmup
		res, err := loadgen.Run(ctx, cfg)
		if err != nil {
			return r, err
		}
		if res.Errors() > 0 {
			return r, fmt.Errorf("warm-up: %d of %d turns failed: %v", res.Errors(), len(res.Turns), res.FirstErrors(3))
		}
		// The measured load's clients number their turns from 0 again:
		// the warm-up's model times must not add to theirs.
		if _, _, err := srv.modelTimes(); err != nil {
			return r, err
		}
	}
	before, err := srv.snapshot()
	if err != nil {
		return r, err
	}
	if cpuprofile != "" {
		if err := srv.command("profile " + cpuprofile + "." + store); err != nil {
			return r, err
		}
	}
	if traceFile != "" {
		if err := srv.command("trace " + traceFile + "." + store + " 5s"); err != nil {
			return r, err
		}
	}
	cfg.Duration = duration
	res, err := loadgen.Run(ctx, cfg)
	if err != nil {
		return r, err
	}
	if cpuprofile != "" {
		if err := srv.command("profile stop"); err != nil {
			return r, err
		}
	}
	after, err := srv.snapshot()
	if err != nil {
		return r, err
	}
	if heapprofile != "" {
		if err := srv.command("heapprofile " + heapprofile + "." + store); err != nil {
			return r, err
		}
	}
	r.turns, r.errors, r.elapsed, r.firstErrors = len(res.Turns), res.Errors(), res.Elapsed, res.FirstErrors(3)
	if ok := r.turns - r.errors; ok > 0 {
		r.callsPerTurn = float64(after.calls-before.calls) / float64(r.turns)
	}
	modelTime, late, err := srv.modelTimes()
	if err != nil {
		return r, err
	}
	r.late = late
	var lat, added, model []time.Duration
	type split struct {
		added  time.Duration
		phases [3]time.Duration
	}
	var splits []split
	for _, t := range res.Turns {
		if t.Err != nil {
			continue
		}
		mt, ok := modelTime[fmt.Sprintf("load %d-%d", t.Client, t.N)]
		if !ok {
			return r, fmt.Errorf("no model time for turn %d of client %d", t.N, t.Client)
		}
		lat, added, model = append(lat, t.Latency), append(added, t.Latency-mt.total), append(model, mt.total)
		splits = append(splits, split{t.Latency - mt.total, phases(t, mt)})
	}
	// Where the added time of the slowest turns went, beside the median's.
	slices.SortFunc(splits, func(a, b split) int { return cmp.Compare(a.added, b.added) })
	if n := len(splits); n > 0 {
		r.medianPhases = splits[n/2].phases
		slow := splits[n*99/100:]
		for _, sp := range slow {
			for i, d := range sp.phases {
				r.slowPhases[i] += d / time.Duration(len(slow))
			}
		}
	}
	for _, s := range [][]time.Duration{lat, added, model} {
		slices.Sort(s)
	}
	r.p50, r.p99 = loadgen.Percentile(lat, 50), loadgen.Percentile(lat, 99)
	r.p50add, r.p99add = loadgen.Percentile(added, 50), loadgen.Percentile(added, 99)
	r.p50model = loadgen.Percentile(model, 50)
	if n := after.threads - before.threads; n > 0 {
		r.rssPerThread = float64(after.rss-before.rss) / float64(n)
		if store == "sqlite" {
			r.storePerConv = float64(after.storeBytes-before.storeBytes) / float64(n)
		}
	}
	r.fileBytes, r.threads = after.fileBytes, after.threads
	if r.turns > 0 {
		r.cpuPerTurn = time.Duration((after.cpu - before.cpu) / int64(r.turns))
	}
	return r, nil
}

// clientRamp is loadgen.Config.Ramp of every load.
var clientRamp time.Duration

// keepIntermediate is the server's checkpoints.keep_intermediate.
var keepIntermediate = "false"

// apiKey is the one key of the server's configuration.
const apiKey = "capgraph-load-0123456789abcdef"

// child is the server process.
type child struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	addr string
}

func startServer(store, dir string, latency time.Duration) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-serve", "-store", store, "-dir", dir, "-latency", latency.String(), "-keep-intermediate", keepIntermediate)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &child{cmd: cmd, in: in, out: bufio.NewScanner(outPipe)}
	line, err := s.reply()
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("start the server: %w", err)
	}
	addr, ok := strings.CutPrefix(line, "listening ")
	if !ok {
		s.stop()
		return nil, fmt.Errorf("the server said %q", line)
	}
	s.addr = addr
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		s.stop()
		return nil, err
	}
	resp.Body.Close()
	return s, nil
}

func (s *child) reply() (string, error) {
	if !s.out.Scan() {
		if err := s.out.Err(); err != nil {
			return "", err
		}
		return "", io.ErrUnexpectedEOF
	}
	return s.out.Text(), nil
}

// command sends a command and waits for its "ok".
func (s *child) command(c string) error {
	if _, err := fmt.Fprintln(s.in, c); err != nil {
		return err
	}
	line, err := s.reply()
	if err != nil {
		return err
	}
	if line != "ok" {
		return fmt.Errorf("%s: %s", c, line)
	}
	return nil
}

// modelTurn is what the model saw of a turn: its calls' total time and each
// call's start and end (Unix ns, in the order they ended).
type modelTurn struct {
	total time.Duration
	spans []int64
}

// modelTimes asks for each turn's model time, by tag, and how late the
// model's calls returned (p50, p99).
func (s *child) modelTimes() (map[string]modelTurn, [2]time.Duration, error) {
	var late [2]time.Duration
	if _, err := fmt.Fprintln(s.in, "modeltime"); err != nil {
		return nil, late, err
	}
	out := map[string]modelTurn{}
	for {
		line, err := s.reply()
		if err != nil {
			return nil, late, err
		}
		if line == "ok" {
			return out, late, nil
		}
		var p50, p99 int64
		if n, _ := fmt.Sscanf(line, "late %d %d", &p50, &p99); n == 2 {
			late = [2]time.Duration{time.Duration(p50), time.Duration(p99)}
			continue
		}
		f := strings.Fields(line) // "load C-N" NANOS START END...
		if len(f) < 3 || len(f)%2 == 0 {
			return nil, late, fmt.Errorf("modeltime: %q", line)
		}
		var nums []int64
		for _, v := range f[2:] {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, late, fmt.Errorf("modeltime: %q", line)
			}
			nums = append(nums, n)
		}
		out[f[0]+" "+f[1]] = modelTurn{total: time.Duration(nums[0]), spans: nums[1:]}
	}
}

// phases splits a turn's added time: before its first model call, between
// its calls, and after its last, to the client's [DONE].
func phases(t loadgen.Turn, mt modelTurn) [3]time.Duration {
	type span struct{ start, end int64 }
	var calls []span
	for i := 0; i+1 < len(mt.spans); i += 2 {
		calls = append(calls, span{mt.spans[i], mt.spans[i+1]})
	}
	if len(calls) == 0 {
		return [3]time.Duration{}
	}
	slices.SortFunc(calls, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	start := t.Start.UnixNano()
	var between int64
	for i := 1; i < len(calls); i++ {
		between += calls[i].start - calls[i-1].end
	}
	return [3]time.Duration{time.Duration(calls[0].start - start), time.Duration(between),
		time.Duration(start + t.Latency.Nanoseconds() - calls[len(calls)-1].end)}
}

// snap is what the server reports of itself after a garbage collection.
type snap struct {
	rss, heap, threads, calls, storeBytes, fileBytes, cpu int64
}

func (s *child) snapshot() (snap, error) {
	if _, err := fmt.Fprintln(s.in, "snapshot"); err != nil {
		return snap{}, err
	}
	line, err := s.reply()
	if err != nil {
		return snap{}, err
	}
	var sn snap
	for _, f := range strings.Fields(line) {
		k, v, _ := strings.Cut(f, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return sn, fmt.Errorf("snapshot %q", line)
		}
		switch k {
		case "rss":
			sn.rss = n
		case "heap":
			sn.heap = n
		case "threads":
			sn.threads = n
		case "calls":
			sn.calls = n
		case "store_bytes":
			sn.storeBytes = n
		case "file_bytes":
			sn.fileBytes = n
		case "cpu":
			sn.cpu = n
		}
	}
	return sn, nil
}

// stop closes the server's stdin, which makes it shut down, and waits.
func (s *child) stop() {
	s.in.Close()
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-done
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
