// Command soak keeps a capgraph server busy with many concurrent chat
// conversations for a while and reports what went wrong, how long answers
// took (p50, p99) and how the server's memory grew (docs/reliability.md):
//
//	cd bench && go run ./soak                                  # 500 conversations, 60 s, 200 ms model latency
//	go run ./soak -conversations 100 -duration 30s -latency 1s -store sqlite:/tmp/soak.db
//	go run ./soak -url http://127.0.0.1:8080/v1 -key $KEY      # an external server (no memory figures)
//
// Without -url it serves, in this process, the control-room demo's agent
// (its simulated plant and capabilities, offline planning) whose answers
// come from a scripted model that streams after -latency, as a slow LLM
// would; the memory figures are this process's.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/demo/controlroom/plant"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/server"
)

func main() {
	conversations := flag.Int("conversations", 500, "concurrent conversations")
	duration := flag.Duration("duration", 60*time.Second, "how long conversations start new turns")
	latency := flag.Duration("latency", 200*time.Millisecond, "the scripted model's time to answer (in-process server)")
	turns := flag.Int("turns", 5, "turns per conversation before it starts anew")
	storeSpec := flag.String("store", "memory", "the in-process server's store: memory or sqlite:PATH")
	url := flag.String("url", "", "drive this server (its /v1 base URL) instead of one in this process")
	key := flag.String("key", "", "the bearer key for -url")
	memprofile := flag.String("memprofile", "", "write this process's heap profile here after the soak (go tool pprof)")
	flag.Parse()

	cfg := Config{BaseURL: *url, Key: *key, Conversations: *conversations, Duration: *duration, Turns: *turns, Stream: true}
	for _, d := range plant.Demo {
		if !strings.Contains(strings.ToLower(d.Question), "set ") {
			cfg.Questions = append(cfg.Questions, d.Question)
		}
	}
	var stop func()
	if *url == "" {
		base, closeServer, err := serve(*storeSpec, *latency, *conversations)
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			os.Exit(1)
		}
		cfg.BaseURL, stop = base, closeServer
	}
	// A short warm-up, so the memory baseline is the server at work.
	warm := cfg
	warm.Duration, warm.Conversations = 2*time.Second, min(*conversations, 50)
	if _, err := Run(context.Background(), warm); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	heap0, rss0 := heapMB(), rssMB()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	heap1, rss1 := heapMB(), rssMB()
	if *memprofile != "" {
		if err := writeHeapProfile(*memprofile); err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			os.Exit(1)
		}
	}
	if stop != nil {
		stop()
	}
	fmt.Printf("conversations  %d for %s (model latency %s, store %s)\n", *conversations, *duration, *latency, *storeSpec)
	fmt.Printf("turns          %d answered, %d failed %v, in %s (%.0f answers/s)\n", res.Answered, res.Errors(), res.Failed,
		res.Elapsed.Round(time.Millisecond), float64(res.Answered)/res.Elapsed.Seconds())
	fmt.Printf("latency        p50 %s, p99 %s\n", res.Percentile(50).Round(time.Millisecond), res.Percentile(99).Round(time.Millisecond))
	if *url == "" {
		fmt.Printf("memory         heap %.0f → %.0f MB, RSS %.0f → %.0f MB (growth %+.0f MB)\n", heap0, heap1, rss0, rss1, rss1-rss0)
	}
	if res.Errors() > 0 {
		os.Exit(1)
	}
}

// serve starts the control-room agent with a scripted respond model on a
// local port and returns its /v1 base URL.
func serve(spec string, latency time.Duration, conversations int) (string, func(), error) {
	var store checkpoint.Store = memory.NewLatestOnly()
	closeStore := func() {}
	if path, ok := strings.CutPrefix(spec, "sqlite:"); ok {
		s, err := sqlite.New(sqlite.Config{Path: path})
		if err != nil {
			return "", nil, err
		}
		store, closeStore = s, func() { _ = s.Close() }
	} else if spec != "memory" {
		return "", nil, fmt.Errorf("-store %q: want memory or sqlite:PATH", spec)
	}
	p, err := plant.New(plant.Config{Seed: 1})
	if err != nil {
		return "", nil, err
	}
	reg := capabilities.NewRegistry()
	for _, c := range plant.Capabilities(p) {
		if err := reg.Register(c); err != nil {
			return "", nil, err
		}
	}
	a, err := agent.New(agent.Config{Registry: reg, Store: store, Models: scripted{latency}})
	if err != nil {
		return "", nil, err
	}
	srv, err := server.New(server.Config{Runner: a, Limits: server.Limits{MaxConcurrentRuns: conversations, MaxTotalRuns: conversations, MaxThreads: -1}})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, ln); close(done) }()
	stop := func() {
		cancel()
		<-done
		_ = a.Close(context.Background()) // the agent's runs end before its store closes
		closeStore()
	}
	return "http://" + ln.Addr().String() + "/v1", stop, nil
}

// scripted is the respond role's model: after its latency it streams an
// answer made of what the capabilities found, in a few chunks, as a model
// would; the other roles stay offline.
type scripted struct{ latency time.Duration }

func (m scripted) For(role llm.Role) (llm.Model, bool) {
	if role != llm.RoleResponse {
		return nil, false
	}
	return m, true
}

// Cancelable implements llm.Cancelable: a call returns once its context ends.
func (m scripted) Cancelable() bool { return true }

func (m scripted) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	select {
	case <-time.After(m.latency):
	case <-ctx.Done():
		return llm.Response{}, ctx.Err()
	}
	text := "Here is what I found: the values you asked about are in range. (" + strconv.Itoa(len(req.Messages)) + " messages read.)"
	if req.OnChunk != nil {
		for _, w := range strings.SplitAfter(text, " ") {
			if err := req.OnChunk(ctx, w); err != nil {
				return llm.Response{}, err
			}
		}
	}
	return llm.Response{Text: text, FinishReason: llm.FinishStop, Usage: llm.Usage{PromptTokens: 200, CompletionTokens: 25}}, nil
}

func heapMB() float64 {
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return float64(s.HeapAlloc) / (1 << 20)
}

func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// writeHeapProfile writes the heap profile of what is live now.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
