// Command load measures a capgraph server under load: concurrent clients
// (package loadgen) streaming Chat Completions against the server
// `capgraph serve` runs — the control-room application, the same wiring
// (package wiring), on loopback — whose model is the scripted one
// (llm/llmtest) answering every call after a fixed latency. It prints, per
// store, turns per second, the p50 and p99 latency a turn adds to its model
// calls, the errors, the server's CPU per turn, its peak resident memory
// and memory per live conversation, per idle thread and, on SQLite, the
// store's growth per conversation — as Markdown tables that paste into
// docs/performance.md.
//
//	cd bench && go run ./load [-stores floor,memory,sqlite] [-clients 200] [-latency 200ms] [-duration 30s] [-runs 5] [-users 0]
//
// The floor is the same load against a bare handler that waits out the
// turn's four model calls and streams as capgraph does, without capgraph:
// what the client, HTTP and the machine's scheduling add by themselves.
// Every server figure is printed beside the floor row measured in the same
// run (a ratio or a difference), because on a shared machine absolute
// figures move with the load; the load average is printed before and after
// each run. -runs repeats the whole sequence and ends with each figure's
// min, median and max and every run's value.
//
// -users N makes the key a trusted frontend's and spreads the clients over
// N forwarded users, each question a new chat, as Open WebUI sends them:
// the thread quota (server.limits.max_threads) counts per forwarded user,
// so a load of many conversations measures the server, not the quota.
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
	"math"
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
	stores := flag.String("stores", "floor,memory,sqlite", "stores to measure, in order: floor (the same load without capgraph), memory, sqlite (checkpoints.durability left to its default, async); memory-sync, sqlite-sync, memory-async, sqlite-async: the same with that durability")
	clients := flag.Int("clients", 200, "concurrent clients")
	latency := flag.Duration("latency", 200*time.Millisecond, "the scripted model's latency, per call")
	duration := flag.Duration("duration", 30*time.Second, "measured load per store")
	warmup := flag.Duration("warmup", 5*time.Second, "warm-up load per store, not counted")
	ramp := flag.Duration("ramp", -1, "spread the clients' starts over this time (default: one turn's model time, 4 × latency; 0 starts them together, in step)")
	flag.StringVar(&serverMemLimit, "gomemlimit", "", "the server process's GOMEMLIMIT (a soft limit near which its collector runs sooner, e.g. 900MiB); empty: this tool's environment's")
	keep := flag.String("keep-intermediate", "false", "checkpoints.keep_intermediate of the server: false (prune when a turn ends), true, or a duration")
	modelWait := flag.String("model-wait", "timer", "how the scripted model's latency is waited out, in the server's process: timer (a timer of that process) or net (a reply over a loopback connection from this tool's process, as a provider's reply comes)")
	delayAddr := flag.String("delay-addr", "", "internal (-serve): the address of this tool's delay server (-model-wait net)")
	store := flag.String("store", "memory", "internal (-serve): the store")
	dir := flag.String("dir", "", "internal (-serve): the directory of the SQLite file")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the server during each measured load to FILE.STORE")
	flag.StringVar(&contentionFile, "contention", "", "write mutex and block profiles of the server during each measured load to FILE.STORE.mutex and FILE.STORE.block")
	heapprofile := flag.String("heapprofile", "", "write a heap profile of the server halfway through each measured load (every client with a conversation in flight) to FILE.STORE, and its goroutines to FILE.STORE.goroutines")
	flag.StringVar(&traceFile, "trace", "", "write an execution trace of the server's first 5 s of each measured load to FILE.STORE (go tool trace)")
	runs := flag.Int("runs", 5, "runs of every store, each with its own floor row; the figures' min, median and max are printed after them")
	users := flag.Int("users", 0, "0: the clients share one API key; N: the key is a trusted frontend's and client c forwards user c mod N with a new chat id per question (X-OpenWebUI-User-Id, X-OpenWebUI-Chat-Id), as Open WebUI does")
	flag.Parse()
	var err error
	if *serve {
		err = runServer(*store, *dir, *latency, *keep, *users > 0, *delayAddr)
	} else if *runs < 1 || *clients < 1 || *users < 0 {
		err = fmt.Errorf("-runs and -clients must be at least 1 and -users at least 0")
	} else if *modelWait != "timer" && *modelWait != "net" {
		err = fmt.Errorf("-model-wait must be timer or net, got %q", *modelWait)
	} else {
		if *modelWait == "net" {
			delayServerAddr, err = delayServer()
		}
		trustedFrontend = *users > 0
		keepIntermediate = *keep
		if *ramp < 0 {
			*ramp = 4 * *latency
		}
		clientRamp = *ramp
		if err == nil {
			err = run(strings.Split(*stores, ","), options{clients: *clients, latency: *latency, duration: *duration, warmup: *warmup,
				cpuprofile: *cpuprofile, heapprofile: *heapprofile, runs: *runs, users: *users})
		}
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
	commitsPerTurn             float64       // SQLite's commits (each an fsync) per turn
	rssPerThread, storePerConv float64       // bytes; storePerConv < 0: not measured
	// peakRSS is the server's resident high-water mark during the
	// measured load; rssPerLive is peakRSS less the RSS after it, per
	// client (each has a conversation in flight).
	peakRSS            int64
	rssPerLive         float64
	fileBytes, threads int64
	firstErrors        []string
}

// options are the load's settings beyond the stores.
type options struct {
	clients                   int
	latency, duration, warmup time.Duration
	cpuprofile, heapprofile   string
	runs, users               int
}

func run(stores []string, o options) error {
	who := "one API key, every question a new conversation (a new thread)"
	if o.users > 0 {
		who = fmt.Sprintf("one trusted frontend key forwarding %d users (X-OpenWebUI-User-Id, client c is user c mod %d), every question a new chat (X-OpenWebUI-Chat-Id)", o.users, o.users)
	}
	fmt.Printf("capgraph server under load: `go run ./load %s`\n\n", strings.Join(os.Args[1:], " "))
	fmt.Printf("- %d clients streaming Chat Completions; %s\n", o.clients, who)
	fmt.Printf("- control-room application, scripted model answering each call after %v; %v measured after %v of warm-up, per store; %d runs\n", o.latency, o.duration, o.warmup, o.runs)
	fmt.Printf("- checkpoints.keep_intermediate: %s; the clients' starts spread over %v\n", keepIntermediate, clientRamp)
	fmt.Printf("- %s/%s, %d CPUs (%s), %s, GOMAXPROCS %d\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel(), runtime.Version(), runtime.GOMAXPROCS(0))
	if serverMemLimit != "" {
		fmt.Printf("- the server runs with GOMEMLIMIT=%s\n", serverMemLimit)
	} else if v := os.Getenv("GOMEMLIMIT"); v != "" {
		fmt.Printf("- the server runs with GOMEMLIMIT=%s (from the environment)\n", v)
	}
	fmt.Printf("- load average (1, 5, 15 min) at start: %s\n\n", loadavg())
	var runs [][]row
	for i := range o.runs {
		before := loadavg()
		var rows []row
		for _, st := range stores {
			r, err := measure(strings.TrimSpace(st), o)
			if err != nil {
				return fmt.Errorf("run %d: %s: %w", i+1, st, err)
			}
			rows = append(rows, r)
		}
		runs = append(runs, rows)
		fmt.Printf("### Run %d of %d (load average before %s, after %s)\n\n", i+1, o.runs, before, loadavg())
		printRun(rows)
	}
	if o.runs > 1 {
		printSummary(stores, runs)
	}
	fmt.Printf("load average at the end: %s\n\n", loadavg())
	fmt.Println("floor = the same clients against a bare handler that waits out four model calls and streams, without capgraph;")
	fmt.Println("every × floor and − floor is against the floor row of the same run.")
	fmt.Println("added = a turn's latency at the client minus the time of its model calls, as the model measured them.")
	fmt.Println("late = how much later than asked the scripted model's timer woke it: the machine's scheduling delay, which")
	fmt.Println("every wake-up of a turn (its steps, its commits, its stream writes) pays as well.")
	fmt.Println("before 1st call = request to the first model call: the request, the thread, the run, the turn's first step;")
	fmt.Println("between calls = the turn's steps and checkpoints; after last call = the answer's steps, stream and client.")
	fmt.Println("peak RSS = the server's resident high-water mark during the measured load (warm-up excluded);")
	fmt.Println("RSS/live conv = (peak RSS − RSS after the measured load, once its garbage is collected) ÷ clients: every")
	fmt.Println("client has a turn in flight at the peak, and the idle threads the load leaves are in both; the collector's")
	fmt.Println("headroom (Go lets the heap grow to twice what is live) counts in it.")
	return nil
}

// floorOf returns the floor row among rows, if measured.
func floorOf(rows []row) (row, bool) {
	for _, r := range rows {
		if r.store == "floor" {
			return r, true
		}
	}
	return row{}, false
}

// printRun prints one run's rows as Markdown tables, each server figure
// beside the floor's of the same run.
func printRun(rows []row) {
	fl, hasFloor := floorOf(rows)
	vs := func(f func(row) string) func(row) string {
		return func(r row) string {
			if !hasFloor || r.store == "floor" {
				return "—"
			}
			return f(r)
		}
	}
	fmt.Println("| store | turns | × floor | errors | p50 added | − floor | p99 added | × floor's p99 | CPU/turn | − floor | peak RSS | RSS/live conv | RSS/idle thread | store/conv |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, r := range rows {
		perConv := "—"
		if r.storePerConv >= 0 {
			perConv = fmt.Sprintf("%.2f KB", r.storePerConv/1024)
		}
		fmt.Printf("| %s | %d | %s | %d | %s | %s | %s | %s | %s | %s | %.0f MB | %.0f KB | %.2f KB | %s |\n", r.store, r.turns,
			vs(func(r row) string { return fmt.Sprintf("%.3f", float64(r.turns)/float64(max(fl.turns, 1))) })(r), r.errors,
			ms(r.p50add), vs(func(r row) string { return ms(r.p50add - fl.p50add) })(r),
			ms(r.p99add), vs(func(r row) string { return fmt.Sprintf("%.1f", float64(r.p99add)/float64(max(fl.p99add, 1))) })(r),
			ms(r.cpuPerTurn), vs(func(r row) string { return ms(r.cpuPerTurn - fl.cpuPerTurn) })(r),
			float64(r.peakRSS)/(1<<20), r.rssPerLive/1024, r.rssPerThread/1024, perConv)
	}
	fmt.Println()
	fmt.Println("| store | added time of | before 1st call | between calls | after last call | model late p50 | p99 |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- |")
	for _, r := range rows {
		fmt.Printf("| %s | the median turn | %s | %s | %s | %s | %s |\n", r.store, ms(r.medianPhases[0]), ms(r.medianPhases[1]), ms(r.medianPhases[2]), ms(r.late[0]), ms(r.late[1]))
		fmt.Printf("| | the slowest 1 %% (mean) | %s | %s | %s | | |\n", ms(r.slowPhases[0]), ms(r.slowPhases[1]), ms(r.slowPhases[2]))
	}
	fmt.Println()
	for _, r := range rows {
		for _, e := range r.firstErrors {
			fmt.Printf("%s: error: %s\n", r.store, e)
		}
	}
}

// printSummary prints, per store and figure, the min, median and max over
// the runs and every run's value in order.
func printSummary(stores []string, runs [][]row) {
	type figure struct {
		name  string
		value func(r, floor row) (float64, bool)
		unit  string
	}
	msOf := func(d time.Duration) float64 { return float64(d) / 1e6 }
	figures := []figure{
		{"turns × floor", func(r, f row) (float64, bool) { return float64(r.turns) / float64(max(f.turns, 1)), r.store != "floor" }, "×"},
		{"errors", func(r, f row) (float64, bool) { return float64(r.errors), true }, ""},
		{"p50 added", func(r, f row) (float64, bool) { return msOf(r.p50add), true }, "ms"},
		{"p50 added − floor", func(r, f row) (float64, bool) { return msOf(r.p50add - f.p50add), r.store != "floor" }, "ms"},
		{"p99 added", func(r, f row) (float64, bool) { return msOf(r.p99add), true }, "ms"},
		{"p99 added × floor's p99 added", func(r, f row) (float64, bool) {
			return float64(r.p99add) / float64(max(f.p99add, 1)), r.store != "floor"
		}, "×"},
		{"CPU per turn", func(r, f row) (float64, bool) { return msOf(r.cpuPerTurn), true }, "ms"},
		{"CPU per turn − floor", func(r, f row) (float64, bool) { return msOf(r.cpuPerTurn - f.cpuPerTurn), r.store != "floor" }, "ms"},
		{"commits (fsyncs) per turn", func(r, f row) (float64, bool) { return r.commitsPerTurn, strings.HasPrefix(r.store, "sqlite") }, ""},
		{"peak RSS", func(r, f row) (float64, bool) { return float64(r.peakRSS) / (1 << 20), true }, "MB"},
		{"RSS per live conversation", func(r, f row) (float64, bool) { return r.rssPerLive / 1024, r.store != "floor" }, "KB"},
	}
	fmt.Printf("### Summary of %d runs: min / median / max (every run, in order)\n\n", len(runs))
	fmt.Println("| store | figure | min | median | max | runs |")
	fmt.Println("| --- | --- | --- | --- | --- | --- |")
	for _, st := range stores {
		st = strings.TrimSpace(st)
		for _, fg := range figures {
			var vals []float64
			for _, rows := range runs {
				fl, hasFloor := floorOf(rows)
				for _, r := range rows {
					if r.store != st {
						continue
					}
					if v, ok := fg.value(r, fl); ok && (hasFloor || !strings.Contains(fg.name, "floor")) {
						vals = append(vals, v)
					}
				}
			}
			if len(vals) == 0 {
				continue
			}
			all := make([]string, len(vals))
			for i, v := range vals {
				all[i] = num(v)
			}
			sorted := slices.Sorted(slices.Values(vals))
			fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", st, fg.name+unitSuffix(fg.unit), num(sorted[0]), num(sorted[len(sorted)/2]), num(sorted[len(sorted)-1]), strings.Join(all, ", "))
		}
	}
	fmt.Println()
}

func unitSuffix(u string) string {
	if u == "" || u == "×" {
		return ""
	}
	return " (" + u + ")"
}

// num prints a figure with three significant digits or so.
func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100 || v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// loadavg is /proc/loadavg's three load averages.
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

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/1e6) }

// measure starts a server on store, loads it and takes its snapshots.
// traceFile and contentionFile are the -trace and -contention flags.
var traceFile, contentionFile string

func measure(store string, o options) (row, error) {
	clients, latency, duration, warmup, cpuprofile, heapprofile := o.clients, o.latency, o.duration, o.warmup, o.cpuprofile, o.heapprofile
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
	if o.users > 0 {
		cfg.Headers = func(c, n int) http.Header {
			return http.Header{"X-Openwebui-User-Id": {fmt.Sprintf("user-%d", c%o.users)}, "X-Openwebui-Chat-Id": {fmt.Sprintf("chat-%d-%d-%d", c, n, time.Now().UnixNano())}}
		}
	}
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
	if err := srv.command("resetpeak"); err != nil {
		return r, err
	}
	if cpuprofile != "" {
		if err := srv.command("profile " + cpuprofile + "." + store); err != nil {
			return r, err
		}
	}
	if contentionFile != "" {
		if err := srv.command("contention start"); err != nil {
			return r, err
		}
	}
	if traceFile != "" {
		if err := srv.command("trace " + traceFile + "." + store + " 5s"); err != nil {
			return r, err
		}
	}
	cfg.Duration = duration
	// The heap profile is taken halfway through the measured load, when
	// every client has a conversation in flight.
	var profiled chan error
	if heapprofile != "" {
		profiled = make(chan error, 1)
		time.AfterFunc(duration/2, func() { profiled <- srv.command("heapprofile " + heapprofile + "." + store) })
	}
	res, err := loadgen.Run(ctx, cfg)
	if err != nil {
		return r, err
	}
	if profiled != nil {
		if err := <-profiled; err != nil {
			return r, err
		}
	}
	if cpuprofile != "" {
		if err := srv.command("profile stop"); err != nil {
			return r, err
		}
	}
	if contentionFile != "" {
		if err := srv.command("contention stop " + contentionFile + "." + store); err != nil {
			return r, err
		}
	}
	after, err := srv.snapshot()
	if err != nil {
		return r, err
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
		if strings.HasPrefix(store, "sqlite") {
			r.storePerConv = float64(after.storeBytes-before.storeBytes) / float64(n)
		}
	}
	r.fileBytes, r.threads = after.fileBytes, after.threads
	r.peakRSS = after.peak
	// The threads the load left behind are in both peak and after (the
	// RSS once the load is over and its garbage collected): what is left
	// is what the conversations in flight held, their garbage included.
	r.rssPerLive = float64(after.peak-after.rss) / float64(clients)
	if r.turns > 0 {
		r.cpuPerTurn = time.Duration((after.cpu - before.cpu) / int64(r.turns))
		r.commitsPerTurn = float64(after.commits-before.commits) / float64(r.turns)
	}
	return r, nil
}

// clientRamp is loadgen.Config.Ramp of every load.
var clientRamp time.Duration

// trustedFrontend makes the server's key a trusted frontend's (-users).
var trustedFrontend bool

// delayServerAddr is this tool's delay server's address (-model-wait net),
// empty for timers.
var delayServerAddr string

// serverMemLimit is the server process's GOMEMLIMIT (-gomemlimit).
var serverMemLimit string

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
	args := []string{"-serve", "-store", store, "-dir", dir, "-latency", latency.String(), "-keep-intermediate", keepIntermediate}
	if trustedFrontend {
		args = append(args, "-users", "1")
	}
	if delayServerAddr != "" {
		args = append(args, "-delay-addr", delayServerAddr)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	if serverMemLimit != "" {
		cmd.Env = append(os.Environ(), "GOMEMLIMIT="+serverMemLimit)
	}
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
	rss, peak, heap, threads, calls, storeBytes, fileBytes, cpu, commits int64
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
		case "peak":
			sn.peak = n
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
		case "commits":
			sn.commits = n
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
