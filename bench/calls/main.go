// Command calls measures what a turn waits for when the model is slow: its
// sequential model calls. The scripted model (llm/llmtest) answers every
// call after a fixed latency L and streams the answer; the agent is the
// control-room application's (its four capabilities, or with 26 more from
// a synthetic registry: 30), on the memory store. For the demo's questions
// — a read, a history (the archive), a write, and a follow-up that needs
// the chat — it prints, on the default path and on the path where every
// node asks its model (the four-call path before issue 29), measured in
// the same run:
//
//   - the model calls, by role in order, and how many came before the
//     answer's first token;
//   - the time to the first answer token (TTFT) and to the turn's end (the
//     answer streams over half a latency), in milliseconds and in L;
//   - prompt, completion and cached prompt tokens per role (the scripted
//     model's estimate: a token per four characters; cached as a provider
//     with automatic prompt caching reports them, llmtest.CachePrompts).
//
// With -http it also serves the application as `capgraph serve` does
// (package wiring) and measures the first answer token of the read through
// Chat Completions, Responses and AG-UI, streamed.
//
//	cd bench && go run ./calls [-latency 300ms] [-repeat 3] [-http]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/demo/controlroom/plant"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/state"
)

func main() {
	latency := flag.Duration("latency", 300*time.Millisecond, "the scripted model's latency per call (L)")
	repeat := flag.Int("repeat", 3, "turns per scenario and path, each on a new thread (medians; the first warms the prompt cache)")
	http := flag.Bool("http", false, "also measure the first answer token through the server's streaming frontends")
	flag.Parse()
	if err := run(*latency, *repeat, *http); err != nil {
		fmt.Fprintln(os.Stderr, "calls:", err)
		os.Exit(1)
	}
}

// A path is how the nodes decide on their model calls.
type path struct {
	name  string
	nodes nodes.Config
}

var paths = []path{
	{"default", nodes.Config{}},
	{"every call", nodes.Config{TaskExtraction: nodes.TaskAlways, SelectAllWithinTokens: -1, SeparateTaskAndSelection: true}},
}

// A scenario is one turn of the demo, after the turns of before on the same
// thread.
type scenario struct {
	name     string
	before   []string
	question string
	approve  bool
}

var scenarios = []scenario{
	{name: "read (first turn)", question: "What is the beam current?"},
	{name: "history (archive)", question: "Show me the RF cavity voltage over the last 2 hours"},
	{name: "write (approved)", question: "Set the quadrupole Q1 current in the BTS line to 105 A", approve: true},
	{name: "follow-up needing the chat", before: []string{"What is the beam current?"}, question: "And what was it over the last hour?"},
}

// turnResult is one measured turn.
type turnResult struct {
	calls        []agent.ModelCall
	beforeFirst  int // model calls started before the first answer token
	ttft, total  time.Duration
	answered     bool
	firstToken   bool
	approvalSeen bool
}

func run(latency time.Duration, repeat int, withHTTP bool) error {
	fmt.Printf("Scripted model latency L = %v per call; %d turns per row (medians), each on a new thread; memory store.\n\n", latency, repeat)
	for _, size := range []int{4, 30} {
		fmt.Printf("## %d capabilities\n\n", size)
		fmt.Println("| question | path | model calls (in order) | calls before the first token | TTFT | turn | tokens by role: prompt / completion (cached) |")
		fmt.Println("| --- | --- | --- | --- | --- | --- | --- |")
		for _, sc := range scenarios {
			for _, p := range paths {
				res, err := measure(size, p, sc, latency, repeat)
				if err != nil {
					return fmt.Errorf("%d capabilities, %s, %s: %w", size, sc.name, p.name, err)
				}
				fmt.Println(row(sc, p, res, latency))
			}
		}
		fmt.Println()
	}
	if withHTTP {
		return measureHTTP(latency, repeat)
	}
	return nil
}

// measure runs the scenario repeat times, each on a new thread of one
// agent, and returns the runs.
func measure(size int, p path, sc scenario, latency time.Duration, repeat int) ([]turnResult, error) {
	reg, err := registry(size)
	if err != nil {
		return nil, err
	}
	m := newModel(latency)
	a, err := agent.New(agent.Config{Registry: reg, Models: m, Nodes: p.nodes, Options: state.Options{WritesEnabled: true}})
	if err != nil {
		return nil, err
	}
	var out []turnResult
	for i := range repeat {
		thread := fmt.Sprintf("t%d", i)
		for _, q := range sc.before {
			if _, err := turn(a, thread, q, false); err != nil {
				return nil, err
			}
		}
		r, err := turn(a, thread, sc.question, sc.approve)
		if err != nil {
			return nil, err
		}
		if !r.answered {
			return nil, fmt.Errorf("turn %d was not answered", i)
		}
		out = append(out, r)
	}
	return out, nil
}

// turn runs one turn (and, with approve, answers its approval "yes") and
// measures it from the events.
func turn(a *agent.Agent, thread, question string, approve bool) (turnResult, error) {
	var r turnResult
	start := time.Now()
	consume := func(events func(func(agent.Event, error) bool)) error {
		for ev, err := range events {
			if err != nil {
				return err
			}
			switch ev.Type {
			case agent.EventModelCall:
				r.calls = append(r.calls, *ev.Call)
				if !r.firstToken {
					r.beforeFirst++
				}
			case agent.EventToken:
				if !r.firstToken && ev.Node == state.NodeRespond {
					r.firstToken, r.ttft = true, time.Since(start)
					r.beforeFirst++ // the response call, which streams
				}
			case agent.EventApprovalRequired:
				r.approvalSeen = true
			case agent.EventMessage:
				r.answered = ev.Message.Kind == state.KindAnswer
			}
		}
		return nil
	}
	if err := consume(a.Run(context.Background(), agent.TurnRequest{Thread: thread, Input: question})); err != nil {
		return r, err
	}
	if approve {
		if !r.approvalSeen {
			return r, fmt.Errorf("%q asked for no approval", question)
		}
		// The human's answer is not the agent's time: the clock restarts.
		waited := time.Since(start)
		start = time.Now()
		if err := consume(a.Resume(context.Background(), thread, agent.Answer{Text: "yes"})); err != nil {
			return r, err
		}
		r.ttft += waited
		r.total = waited
	}
	r.total += time.Since(start)
	return r, nil
}

// row is one line of the table: the medians of the runs, and the calls and
// tokens of the last run (the cache is warm by then).
func row(sc scenario, p path, runs []turnResult, latency time.Duration) string {
	last := runs[len(runs)-1]
	var roles []string
	for _, c := range last.calls {
		roles = append(roles, c.Role)
	}
	ttfts, totals := make([]time.Duration, len(runs)), make([]time.Duration, len(runs))
	for i, r := range runs {
		ttfts[i], totals[i] = r.ttft, r.total
	}
	inL := func(d time.Duration) string {
		return fmt.Sprintf("%d ms (%.2f L)", d.Milliseconds(), float64(d)/float64(latency))
	}
	ttft := inL(median(ttfts))
	if sc.approve {
		ttft = "after the approval: " + inL(median(ttfts))
	}
	return fmt.Sprintf("| %s | %s | %d: %s | %d | %s | %s | %s |", sc.name, p.name, len(roles), strings.Join(roles, ", "),
		last.beforeFirst, ttft, inL(median(totals)), tokensByRole(last.calls))
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// tokensByRole sums a turn's calls by role, in the order roles first
// called, and the turn's total.
func tokensByRole(calls []agent.ModelCall) string {
	type sum struct{ prompt, completion, cached int }
	by := map[string]*sum{}
	var order []string
	var total sum
	for _, c := range calls {
		s, ok := by[c.Role]
		if !ok {
			s = &sum{}
			by[c.Role] = s
			order = append(order, c.Role)
		}
		s.prompt += c.Usage.PromptTokens
		s.completion += c.Usage.CompletionTokens
		s.cached += c.Usage.CachedPromptTokens
		total.prompt += c.Usage.PromptTokens
		total.completion += c.Usage.CompletionTokens
		total.cached += c.Usage.CachedPromptTokens
	}
	var parts []string
	for _, r := range order {
		s := by[r]
		parts = append(parts, fmt.Sprintf("%s %d / %d (%d)", r, s.prompt, s.completion, s.cached))
	}
	parts = append(parts, fmt.Sprintf("**total %d / %d (%d)**", total.prompt, total.completion, total.cached))
	return strings.Join(parts, "; ")
}

// registry is the control room's capabilities, and with size 30 the first
// 26 of the synthetic registry after them.
func registry(size int) (*capabilities.Registry, error) {
	p, err := plant.New(plant.Config{Seed: 1})
	if err != nil {
		return nil, err
	}
	caps := plant.Capabilities(p)
	if extra := size - len(caps); extra > 0 {
		syn, err := synthetic(extra)
		if err != nil {
			return nil, err
		}
		caps = append(caps, syn...)
	}
	reg := capabilities.NewRegistry()
	return reg, reg.Register(caps...)
}
