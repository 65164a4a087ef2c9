package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/demo/controlroom"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/server"
	"github.com/capgraph/capgraph/wiring"
)

// The scripted model's replies, in the forms real models give them: the
// plan after a reasoning block and a sentence, in a code fence.
const (
	taskReply   = `{"task": "What is the stored beam current in the storage ring?", "depends_on_chat_history": false, "intent": {"kind": "read", "changes": []}}`
	selectReply = `{"capabilities": ["channel_finding", "channel_read"]}`
	planReply   = "<think>The user asks for one value: find the channel, read it.</think>\nHere is the plan.\n```json\n" + `{"steps": [
 {"context_key": "beam_channel", "capability": "channel_finding", "task_objective": "Find the storage ring beam current channel", "expected_output": "CHANNEL_ADDRESSES", "parameters": {"query": "storage ring beam current"}},
 {"context_key": "beam_value", "capability": "channel_read", "task_objective": "Read the storage ring beam current", "expected_output": "CHANNEL_VALUES", "inputs": [{"CHANNEL_ADDRESSES": "beam_channel"}]},
 {"context_key": "answer", "capability": "respond", "task_objective": "Answer with the beam current"}]}` + "\n```"
)

// tagged finds the tag a load client puts in its question ("[load 3-17]"),
// which the task (and so every later prompt of the turn) repeats.
var tagged = regexp.MustCompile(`\[load \d+-\d+\]`)

// tagOf is the tag in text, or "". The tool's own work in the server
// process counts against capgraph, not the floor: a prompt of several
// kilobytes is searched for the tag's start before the pattern runs.
func tagOf(text string) string {
	for {
		i := strings.Index(text, "[load ")
		if i < 0 {
			return ""
		}
		text = text[i:]
		if t := tagged.FindString(text[:min(len(text), 32)]); t != "" && strings.HasPrefix(text, t) {
			return t
		}
		text = text[1:]
	}
}

// timedModel is the scripted model, timing each call and adding its time to
// the turn named by the tag in its prompt: a turn's model time as the model
// saw it, timer overshoot on a busy machine included.
type timedModel struct {
	m       *llmtest.Model
	latency time.Duration
	// wait waits out latency: on a timer, or over the network (-model-wait).
	wait  func(ctx context.Context, d time.Duration) error
	mu    sync.Mutex
	turns map[string]time.Duration
	spans map[string][]int64 // per tag: each call's start and end, Unix ns
	late  []time.Duration    // how much later than latency each call returned
	calls int64
}

func (t *timedModel) For(role llm.Role) (llm.Model, bool) {
	m, ok := t.m.For(role)
	if !ok {
		return nil, false
	}
	return timedCall{t, m}, true
}

type timedCall struct {
	t *timedModel
	m llm.Model
}

// Cancelable is the scripted model's (llm.Cancelable): timing a call adds
// nothing that waits.
func (c timedCall) Cancelable() bool { return llm.IsCancelable(c.m) }

func (c timedCall) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	start := time.Now()
	if err := c.t.wait(ctx, c.t.latency); err != nil {
		return llm.Response{}, err
	}
	resp, err := c.m.Generate(ctx, req)
	took := time.Since(start)
	tag := ""
	for i := len(req.Messages) - 1; i >= 0 && tag == ""; i-- {
		tag = tagOf(req.Messages[i].Content)
	}
	c.t.record(tag, start, took)
	return resp, err
}

// record adds a call of the turn tagged tag that started at start and took
// took.
func (t *timedModel) record(tag string, start time.Time, took time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls++
	t.late = append(t.late, took-t.latency)
	if tag != "" {
		t.turns[tag] += took
		t.spans[tag] = append(t.spans[tag], start.UnixNano(), start.Add(took).UnixNano())
	}
}

// scriptedModel answers the four roles of a turn after latency each (the
// error node's role stays offline); the task repeats the question's tag.
func scriptedModel(latency time.Duration, wait func(context.Context, time.Duration) error) *timedModel {
	reply := func(s string) func(llm.Request) llmtest.Reply {
		return func(llm.Request) llmtest.Reply { return llmtest.Reply{Text: s} }
	}
	task := func(req llm.Request) llmtest.Reply {
		tag := ""
		for _, m := range req.Messages {
			if t := tagOf(m.Content); t != "" {
				tag = " " + t
			}
		}
		return llmtest.Reply{Text: strings.Replace(taskReply, "ring?", "ring?"+tag, 1)}
	}
	m := llmtest.New().NoLog().
		On(llmtest.RoleIs(llm.RoleTaskExtraction), task).
		On(llmtest.RoleIs(llm.RoleClassifier), reply(selectReply)).
		On(llmtest.RoleIs(llm.RoleOrchestrator), reply(planReply)).
		On(llmtest.RoleIs(llm.RoleResponse), reply(Answer))
	m.Only(llm.RoleTaskExtraction, llm.RoleClassifier, llm.RoleOrchestrator, llm.RoleResponse)
	return &timedModel{m: m, latency: latency, wait: wait, turns: map[string]time.Duration{}, spans: map[string][]int64{}}
}

// runServer serves the control-room application as `capgraph serve` does,
// over the scripted model, on a free loopback port it prints; then it
// answers commands on stdin until stdin closes:
//
//	snapshot         after a garbage collection: rss, heap, threads, model calls, store bytes
//	modeltime        each tagged turn's model time since the last time and its calls'
//	                 start and end times: "TAG NANOSECONDS START END START END..." lines
//	                 (Unix ns), the p50 and p99 lateness of the calls ("late P50 P99"), then "ok"
//	resetpeak        reset the resident high-water mark that snapshot reports as peak
//	heapprofile FILE write a heap profile (after a garbage collection) the goroutines to FILE.goroutines,
//	                 memory statistics to FILE.memstats
//	profile FILE     start a CPU profile
//	profile stop     stop it
//	contention start sample lock contention and blocking (1 in 10 contended locks, blocking over 100 µs)
//	contention stop FILE  stop, and write the profiles to FILE.mutex and FILE.block
func runServer(store, dir string, latency time.Duration, keep string, trustedFrontend bool, delayAddr string) error {
	wait := timerWait
	if delayAddr != "" {
		d, err := dialDelays(delayAddr)
		if err != nil {
			return err
		}
		wait = d.wait
	}
	// Every node asks its model (model_calls), so a turn makes the four
	// calls the floor waits out, as when the figures of docs/performance.md
	// were first measured; the default path would make two.
	// A store named with -sync or -async (sqlite-sync) is that store with
	// that checkpoints.durability; without, the file leaves it out (the
	// application's default, wiring.DefaultDurability).
	durability := ""
	for _, mode := range []string{"sync", "async"} {
		if base, ok := strings.CutSuffix(store, "-"+mode); ok {
			store, durability = base, "  durability: "+mode+"\n"
		}
	}
	yaml := fmt.Sprintf("server:\n  api_keys:\n    - name: load\n      key: %s\n      trusted_frontend: %t\n  limits:\n    max_concurrent_runs: 100000\nlogging:\n  level: warn\ncheckpoints:\n  keep_intermediate: %s\n%s"+
		"model_calls:\n  task_extraction: always\n  select_all_within_tokens: -1\n  task_with_selection: false\n", apiKey, trustedFrontend, keep, durability)
	cfg, err := config.Parse([]byte(yaml), "load.yaml")
	if err != nil {
		return err
	}
	if store == "floor" {
		m := &timedModel{latency: latency, wait: wait, turns: map[string]time.Duration{}, spans: map[string][]int64{}}
		return commands(context.Background(), floorHandler(m), nil, m, "")
	}
	spec, dbPath := "memory", ""
	if store == "sqlite" {
		dbPath = filepath.Join(dir, "load.db")
		spec = "sqlite:" + dbPath
	} else if store != "memory" {
		return fmt.Errorf("unknown store %q (want floor, memory or sqlite, the last two with -sync or -async for that checkpoints.durability)", store)
	}
	// The collector as capgraph serve sets it up (the floor keeps Go's).
	wiring.RuntimeTuningOf(cfg, os.Getenv, wiring.ContainerMemory()).Apply()
	m := scriptedModel(latency, wait)
	app := controlroom.App()
	rt, err := wiring.New(cfg, wiring.App{Name: app.Name, Capabilities: app.Capabilities}, wiring.Options{Store: spec, Models: m})
	if err != nil {
		return err
	}
	defer rt.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logger, err := rt.Logger(os.Stderr)
	if err != nil {
		return err
	}
	sc, err := rt.ServerConfig(ctx, logger)
	if err != nil {
		return err
	}
	srv, err := server.New(sc)
	if err != nil {
		return err
	}
	st, err := rt.Store(ctx)
	if err != nil {
		return err
	}
	return commands(ctx, srv.Serve, st, m, dbPath)
}

// commands serves on a free loopback port it prints, then answers the
// commands on stdin (see runServer) until stdin closes.
func commands(ctx context.Context, serve func(context.Context, net.Listener) error, st checkpoint.Store, m *timedModel, dbPath string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- serve(ctx, ln) }()
	fmt.Println("listening", ln.Addr())

	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd := strings.Fields(in.Text())
		switch {
		case len(cmd) == 1 && cmd[0] == "snapshot":
			s, err := snapshot(ctx, st, m, dbPath)
			if err != nil {
				fmt.Println("error:", err)
				continue
			}
			fmt.Println(s)
		case len(cmd) == 1 && cmd[0] == "modeltime":
			m.mu.Lock()
			for tag, d := range m.turns {
				fmt.Printf("%s %d", strings.Trim(tag, "[]"), d.Nanoseconds())
				for _, ns := range m.spans[tag] {
					fmt.Printf(" %d", ns)
				}
				fmt.Println()
			}
			clear(m.spans)
			late := slices.Sorted(slices.Values(m.late))
			m.late = m.late[:0]
			clear(m.turns) // the next load's clients number their turns from 0 again
			m.mu.Unlock()
			if n := len(late); n > 0 {
				fmt.Printf("late %d %d\n", late[n/2].Nanoseconds(), late[min(n-1, n*99/100)].Nanoseconds())
			}
			fmt.Println("ok")
		case len(cmd) == 1 && cmd[0] == "resetpeak":
			// Linux: writing 5 to clear_refs resets the resident
			// high-water mark (VmHWM) to the present RSS.
			if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
				fmt.Println("error:", err)
				continue
			}
			fmt.Println("ok")
		case len(cmd) == 2 && cmd[0] == "heapprofile":
			runtime.GC()
			f, err := os.Create(cmd[1])
			if err == nil {
				err = pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
			if err == nil {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				rss, _ := statusBytes("VmRSS:")
				err = os.WriteFile(cmd[1]+".memstats", fmt.Appendf(nil, "rss %d\nheap_alloc %d\nheap_inuse %d\nheap_idle %d\nheap_released %d\nstack_inuse %d\ngoroutines %d\nnext_gc %d\nsys %d\n",
					rss, ms.HeapAlloc, ms.HeapInuse, ms.HeapIdle, ms.HeapReleased, ms.StackInuse, runtime.NumGoroutine(), ms.NextGC, ms.Sys), 0o644)
			}
			if err == nil {
				if f, err = os.Create(cmd[1] + ".goroutines"); err == nil {
					err = pprof.Lookup("goroutine").WriteTo(f, 1)
					f.Close()
				}
			}
			if err != nil {
				fmt.Println("error:", err)
				continue
			}
			fmt.Println("ok")
		case len(cmd) == 3 && cmd[0] == "trace":
			d, err := time.ParseDuration(cmd[2])
			var f *os.File
			if err == nil {
				f, err = os.Create(cmd[1])
			}
			if err == nil {
				err = trace.Start(f)
			}
			if err != nil {
				fmt.Println("error:", err)
				continue
			}
			time.AfterFunc(d, func() { trace.Stop(); f.Close() })
			fmt.Println("ok")
		case len(cmd) == 2 && cmd[0] == "contention" && cmd[1] == "start":
			runtime.SetMutexProfileFraction(10)
			runtime.SetBlockProfileRate(int(100 * time.Microsecond))
			fmt.Println("ok")
		case len(cmd) == 3 && cmd[0] == "contention" && cmd[1] == "stop":
			runtime.SetMutexProfileFraction(0)
			runtime.SetBlockProfileRate(0)
			var err error
			for _, name := range []string{"mutex", "block"} {
				var f *os.File
				if f, err = os.Create(cmd[2] + "." + name); err != nil {
					break
				}
				err = pprof.Lookup(name).WriteTo(f, 0)
				f.Close()
			}
			if err != nil {
				fmt.Println("error:", err)
				continue
			}
			fmt.Println("ok")
		case len(cmd) == 2 && cmd[0] == "profile" && cmd[1] == "stop":
			pprof.StopCPUProfile()
			fmt.Println("ok")
		case len(cmd) == 2 && cmd[0] == "profile":
			f, err := os.Create(cmd[1])
			if err == nil {
				err = pprof.StartCPUProfile(f)
			}
			if err != nil {
				fmt.Println("error:", err)
				continue
			}
			fmt.Println("ok")
		default:
			fmt.Println("error: unknown command", strconv.Quote(in.Text()))
		}
	}
	cancel()
	if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// snapshot collects garbage, gives freed memory back and reports the
// process's resident memory, the live heap, the store's threads, the model
// calls so far and, on SQLite, the bytes the database holds (its pages
// less the free ones), its files on disk and its commits (each an fsync).
func snapshot(ctx context.Context, st checkpoint.Store, m *timedModel, dbPath string) (string, error) {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, err := statusBytes("VmRSS:")
	if err != nil {
		return "", err
	}
	peak, err := statusBytes("VmHWM:")
	if err != nil {
		return "", err
	}
	threads := 0
	if st != nil {
		ts, err := st.Threads(ctx, checkpoint.ThreadFilter{})
		if err != nil {
			return "", err
		}
		threads = len(ts)
	}
	var storeBytes, fileBytes int64
	if dbPath != "" {
		if storeBytes, err = usedBytes(ctx, dbPath); err != nil {
			return "", err
		}
		for _, p := range []string{dbPath, dbPath + "-wal"} {
			if fi, err := os.Stat(p); err == nil {
				fileBytes += fi.Size()
			}
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return "", err
	}
	cpu := ru.Utime.Nano() + ru.Stime.Nano()
	m.mu.Lock()
	calls := m.calls
	m.mu.Unlock()
	var commits int64
	if sq, ok := st.(*sqlite.Store); ok {
		commits = sq.Stats().Commits
	}
	return fmt.Sprintf("rss=%d peak=%d heap=%d threads=%d calls=%d store_bytes=%d file_bytes=%d cpu=%d commits=%d",
		rss, peak, ms.HeapAlloc, threads, calls, storeBytes, fileBytes, cpu, commits), nil
}

// statusBytes reads a size (VmRSS:, VmHWM:) from /proc/self/status.
func statusBytes(field string) (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", field)
}

// usedBytes is what an SQLite database holds: its pages, the write-ahead
// log's included, less the free ones (which later writes reuse).
func usedBytes(ctx context.Context, path string) (int64, error) {
	db, err := sql.Open("sqlite", path+"?_pragma=query_only(1)")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var pages, free, size int64
	for _, q := range []struct {
		pragma string
		dst    *int64
	}{{"page_count", &pages}, {"freelist_count", &free}, {"page_size", &size}} {
		if err := db.QueryRowContext(ctx, "PRAGMA "+q.pragma).Scan(q.dst); err != nil {
			return 0, fmt.Errorf("PRAGMA %s: %w", q.pragma, err)
		}
	}
	return (pages - free) * size, nil
}

// floorHandler serves the floor: what a turn of the load costs without
// capgraph — the same client, HTTP and stream, and a handler that waits for
// the turn's four model calls one after another (timed like the scripted
// model's) and streams a status line after each, then the answer, as
// capgraph's Chat Completions stream does. Its added latency is the
// machine's and the client's share of every row.
func floorHandler(m *timedModel) func(context.Context, net.Listener) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+apiKey {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		tag := tagOf(req.Messages[len(req.Messages)-1].Content)
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		chunk := func(delta map[string]any, finish any) {
			b, _ := json.Marshal(map[string]any{"id": "chatcmpl-floor", "object": "chat.completion.chunk", "model": "capgraph",
				"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
			fl.Flush()
		}
		chunk(map[string]any{"role": "assistant"}, nil)
		for i := range 4 {
			start := time.Now()
			if m.wait(r.Context(), m.latency) != nil {
				return
			}
			m.record(tag, start, time.Since(start))
			chunk(map[string]any{"reasoning_content": fmt.Sprintf("call %d of 4 done\n", i+1)}, nil)
		}
		chunk(map[string]any{"content": Answer}, nil)
		chunk(map[string]any{}, "stop")
		fmt.Fprint(w, "data: [DONE]\n\n")
		fl.Flush()
	})
	return func(ctx context.Context, ln net.Listener) error {
		hs := &http.Server{Handler: mux}
		go func() {
			<-ctx.Done()
			hs.Close()
		}()
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}
