package agent_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/state"
)

// The turn of docs/performance.md ("A turn without the model"): the real
// infrastructure nodes (task extraction, the batched classifier, the
// orchestrator, respond) over the scripted model, which answers at once
// with the replies a model gives (the plan in a code fence after a sentence
// of prose), and a three-step plan whose steps are plain Go functions, each
// reading the one before: find → read → stats, then respond. Seven node
// steps, eight checkpoints (the turn's input and one per step).
const (
	turnTask     = `{"task": "What is the mean beam current over the last hour?", "depends_on_chat_history": false}`
	turnSelected = `{"capabilities": ["find_channel", "read_archive", "statistics"]}`
	turnPlan     = "Here is the plan.\n```json\n" + `{"steps": [
	 {"context_key": "ch", "capability": "find_channel", "task_objective": "find the beam current channel", "expected_output": "CHANNEL"},
	 {"context_key": "hist", "capability": "read_archive", "task_objective": "read the last hour", "expected_output": "HISTORY", "inputs": [{"CHANNEL": "ch"}]},
	 {"context_key": "mean", "capability": "statistics", "task_objective": "mean of the history", "expected_output": "STATS", "inputs": [{"HISTORY": "hist"}]},
	 {"context_key": "answer", "capability": "respond", "task_objective": "answer with the mean"}]}` + "\n```"
	turnAnswer = "The mean beam current over the last hour was 500.2 mA."
	turnSteps  = 7
)

// turnSetup varies the scripted turn: the model's latency per call and the
// checkpoints' durability mode (zero: none, the default).
type turnSetup struct {
	delay      time.Duration
	durability graph.Durability
	onCall     func() // called as each model call starts
}

// turnAgent builds the agent of that turn over store.
func turnAgent(tb testing.TB, store checkpoint.Store, setup ...turnSetup) (*agent.Agent, *llmtest.Model) {
	tb.Helper()
	return scriptedAgent(tb, store, turnSelected, turnPlan, turnCapabilities, setup...)
}

// turnCapabilities are the three steps of that turn.
var turnCapabilities = []capabilities.Definition{
	{Name: "find_channel", Description: "Finds a control-system channel by description.", Provides: []string{"CHANNEL"},
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("CHANNEL", "SR:DCCT:current", "the beam current channel"), nil
		}},
	{Name: "read_archive", Description: "Reads a channel's archived history.", Provides: []string{"HISTORY"},
		Requires: []capabilities.Requirement{{Type: "CHANNEL"}},
		Run: func(_ context.Context, s capabilities.Step) (capabilities.Output, error) {
			if len(s.Resolved) != 1 || s.Resolved[0].Type != "CHANNEL" {
				return capabilities.Output{}, fmt.Errorf("inputs %+v, want the channel", s.Resolved)
			}
			return capabilities.Result("HISTORY", []float64{500.1, 500.3, 500.2}, "60 minutes of the beam current"), nil
		}},
	{Name: "statistics", Description: "Computes statistics of a history.", Provides: []string{"STATS"},
		Requires: []capabilities.Requirement{{Type: "HISTORY"}},
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("STATS", map[string]float64{"mean": 500.2}, "mean 500.2 mA"), nil
		}},
}

// scriptedAgent builds an agent over store with the real infrastructure
// nodes, the capabilities defs, and the scripted model answering at once:
// the task of turnTask, the selection and plan given, and turnAnswer.
func scriptedAgent(tb testing.TB, store checkpoint.Store, selected, plan string, defs []capabilities.Definition, setup ...turnSetup) (*agent.Agent, *llmtest.Model) {
	tb.Helper()
	var ts turnSetup
	if len(setup) > 0 {
		ts = setup[0]
	}
	reg := capabilities.NewRegistry()
	for _, d := range defs {
		c := capabilities.Define(d)
		if err := reg.Register(c); err != nil {
			tb.Fatal(err)
		}
	}
	reply := func(s string) func(llm.Request) llmtest.Reply {
		return func(llm.Request) llmtest.Reply {
			if ts.onCall != nil {
				ts.onCall()
			}
			r := llmtest.Text(s)
			r.Delay = ts.delay
			return r
		}
	}
	m := llmtest.New().NoLog().
		On(llmtest.RoleIs(llm.RoleTaskExtraction), reply(turnTask)).
		On(llmtest.RoleIs(llm.RoleClassifier), reply(selected)).
		On(llmtest.RoleIs(llm.RoleOrchestrator), reply(plan)).
		On(llmtest.RoleIs(llm.RoleResponse), reply(turnAnswer))
	// Every node asks its model, as the turn of docs/performance.md ("A
	// turn without the model") does: the default path leaves task
	// extraction and the classifier out of this turn (nodes.Config).
	a, err := agent.New(agent.Config{Registry: reg, Models: m.Only(llm.RoleTaskExtraction, llm.RoleClassifier, llm.RoleOrchestrator, llm.RoleResponse), Store: store, Durability: ts.durability,
		Nodes: nodes.Config{TaskExtraction: nodes.TaskAlways, SelectAllWithinTokens: -1, SeparateTaskAndSelection: true}})
	if err != nil {
		tb.Fatal(err)
	}
	return a, m
}

// oneTurn runs a turn on a new thread and checks, from its events, that it
// was the turn meant: seven node steps, a plan of four steps, the scripted
// answer, answered.
func oneTurn(tb testing.TB, a *agent.Agent, thread string) {
	tb.Helper()
	checkTurn(tb, a, thread, turnSteps, 4)
}

// checkTurn runs a turn on a new thread and checks, from its events, that
// it made the node steps and the plan of the size given and ended with the
// scripted answer.
func checkTurn(tb testing.TB, a *agent.Agent, thread string, wantSteps, wantPlan int) {
	tb.Helper()
	checkTurnAsking(tb, a, thread, turnQuestion, wantSteps, wantPlan)
}

// askedQuestions numbers the new questions of memory-new-questions.
var askedQuestions atomic.Int64

// turnQuestion is what the benchmarked turns ask.
const turnQuestion = "whats the avg beam current last hr?"

// checkTurnAsking is checkTurn asking input.
func checkTurnAsking(tb testing.TB, a *agent.Agent, thread, input string, wantSteps, wantPlan int) {
	tb.Helper()
	checkTurnIn(context.Background(), tb, a, thread, input, wantSteps, wantPlan)
}

// checkTurnIn is checkTurnAsking with the turn's context.
func checkTurnIn(ctx context.Context, tb testing.TB, a *agent.Agent, thread, input string, wantSteps, wantPlan int) {
	tb.Helper()
	var (
		answered     bool
		steps, total int
		status       agent.RunStatus
	)
	for ev, err := range a.Run(ctx, agent.TurnRequest{Thread: thread, Input: input}) {
		if err != nil {
			tb.Fatalf("turn: %v", err)
		}
		switch ev.Type {
		case agent.EventNodeEnd:
			steps++
		case agent.EventPlan:
			total = ev.Total
		case agent.EventMessage:
			answered = ev.Message.Kind == state.KindAnswer && ev.Message.Content == turnAnswer
		case agent.EventDone:
			status = ev.Status
		}
	}
	if !answered || steps != wantSteps || total != wantPlan || status != agent.RunAnswered {
		tb.Fatalf("turn: answered %v, %d node steps, a plan of %d, %s; want the scripted answer after %d node steps and a plan of %d",
			answered, steps, total, status, wantSteps, wantPlan)
	}
}

// BenchmarkTurnScriptedModel measures that turn end to end (agent.Run to
// its last event) on a new thread each time, on the memory store (also
// reporting the process's CPU time per turn) and on SQLite (a file in a
// temporary directory, the embedded default), where it also reports the
// durable commits per node step.
func BenchmarkTurnScriptedModel(b *testing.B) {
	memoryTurns := func(newQuestions bool) func(b *testing.B) {
		return func(b *testing.B) {
			a, _ := turnAgent(b, memory.New())
			b.ReportAllocs()
			i := 0
			cpu0, ok := cpuTime()
			for b.Loop() {
				i++
				thread := fmt.Sprint("bench-", i)
				if newQuestions {
					// Numbered across the benchmark's rounds too: a question
					// asked before in this process is remembered.
					q := fmt.Sprintf("%s (question %d)", turnQuestion, askedQuestions.Add(1))
					checkTurnAsking(b, a, thread, q, turnSteps, 4)
				} else {
					oneTurn(b, a, thread)
				}
			}
			if cpu1, ok1 := cpuTime(); ok && ok1 {
				// CPU time, garbage collection on the other core included: a
				// loaded machine inflates it much less than the wall time.
				b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(i), "cpu-µs/turn")
			}
		}
	}
	b.Run("memory", memoryTurns(false))
	// The same question every turn is read by the intent rules once and
	// remembered (intent.FromMessage); an operator's questions differ.
	b.Run("memory-new-questions", memoryTurns(true))
	b.Run("sqlite", func(b *testing.B) {
		store, err := sqlite.New(sqlite.Config{Path: filepath.Join(b.TempDir(), "turn.db")})
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		a, _ := turnAgent(b, store)
		b.ReportAllocs()
		before := store.Stats()
		i := 0
		for b.Loop() {
			i++
			oneTurn(b, a, fmt.Sprint("bench-", i))
		}
		after := store.Stats()
		b.ReportMetric(float64(after.Commits-before.Commits)/float64(i*turnSteps), "commits/step")
	})
}

// TestTurnCommitsOncePerStep holds the agent to one durable commit per node
// step on SQLite: a turn of seven sequential steps writes its input
// checkpoint and one checkpoint per step, each one commit, and nothing else
// (no pending writes, no second commit at the end of the turn: pruning its
// intermediate checkpoints rides on the last).
//
// Under graph.DurabilityAsync the turn, which has no side effect and asks
// no approval, writes two: its input checkpoint and its last; a step's
// checkpoint the last would prune at once is written only when a barrier
// needs it (graph's TestAsyncWritesOnlyTheCheckpointsABarrierNeeds), and
// those two are not waited for one by one (TestTurnCommitWaits). When the
// caller keeps the turn's input (agent.WithInputKept, as the server does),
// the input checkpoint is held too, and the turn writes only its last.
func TestTurnCommitsOncePerStep(t *testing.T) {
	for _, mode := range graph.Durabilities {
		t.Run(string(mode), func(t *testing.T) { turnCommitsOncePerStep(t, mode) })
	}
}

func turnCommitsOncePerStep(t *testing.T, mode graph.Durability) {
	store, err := sqlite.New(sqlite.Config{Path: filepath.Join(t.TempDir(), "turn.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	a, m := turnAgent(t, store, turnSetup{durability: mode})
	for i := range 4 {
		// The last turn's caller keeps its input, as the server does.
		inputKept := i == 3
		ctx := context.Background()
		if inputKept {
			ctx = agent.WithInputKept(ctx)
		}
		before := store.Stats()
		checkTurnIn(ctx, t, a, fmt.Sprint("t", i), turnQuestion, turnSteps, 4)
		got := store.Stats()
		want, what := int64(turnSteps+1), "the input checkpoint and one per step"
		switch {
		case mode == graph.DurabilityAsync && inputKept:
			want, what = 1, "the last: the input, kept by the caller, is held like a step's"
		case mode == graph.DurabilityAsync:
			want, what = 2, "the input checkpoint and the last"
		}
		if c, w := got.Commits-before.Commits, got.Writes-before.Writes; c != want || w != want {
			t.Errorf("turn %d: %d commits holding %d writes, want %d each: %s", i, c, w, want, what)
		}
		// The turn's intermediate checkpoints were pruned, in its last commit.
		if cps, err := store.List(context.Background(), fmt.Sprint("t", i), checkpoint.ListOptions{}); err != nil || len(cps) != 1 {
			t.Errorf("turn %d: %d checkpoints kept (%v), want the one it ended with", i, len(cps), err)
		}
	}
	if m.Count() != 4*4 {
		t.Errorf("%d model calls for 4 turns, want 16 (task, classifier, orchestrator, respond)", m.Count())
	}
}

// lagStore is a store whose every checkpoint takes lag to write, as a
// commit on a busy disk does, and that keeps when each write ran.
type lagStore struct {
	checkpoint.Store
	lag  time.Duration
	mu   sync.Mutex
	puts [][2]time.Time
}

func (l *lagStore) Put(ctx context.Context, cp checkpoint.Checkpoint) error {
	start := time.Now()
	time.Sleep(l.lag)
	err := l.Store.Put(ctx, cp)
	l.mu.Lock()
	l.puts = append(l.puts, [2]time.Time{start, time.Now()})
	l.mu.Unlock()
	return err
}

// TestTurnCommitWaits counts the commits the turn of TestTurnCommitsOncePerStep
// waits for, with a model that takes 100 ms per call and commits that take
// 5 ms: a commit is waited for when no model call was under way while it
// ran (the turn had nothing else to do). Under sync every one of its eight
// checkpoints is; under async only the input checkpoint (written before the
// turn starts) and the last (written before the turn's end is reported) —
// the others are written while the next model call runs.
func TestTurnCommitWaits(t *testing.T) {
	const delay, lag = 100 * time.Millisecond, 5 * time.Millisecond
	for _, tc := range []struct {
		mode  graph.Durability
		waits int
	}{{graph.DurabilitySync, turnSteps + 1}, {graph.DurabilityAsync, 2}} {
		t.Run(string(tc.mode), func(t *testing.T) {
			store := &lagStore{Store: memory.New(), lag: lag}
			var (
				mu    sync.Mutex
				calls []time.Time
			)
			a, _ := turnAgent(t, store, turnSetup{delay: delay, durability: tc.mode, onCall: func() {
				mu.Lock()
				calls = append(calls, time.Now())
				mu.Unlock()
			}})
			start := time.Now()
			oneTurn(t, a, "t")
			took := time.Since(start)
			waited := 0
			for _, p := range store.puts {
				overlapped := false
				for _, c := range calls {
					overlapped = overlapped || (c.Before(p[1]) && c.Add(delay).After(p[0]))
				}
				if !overlapped {
					waited++
				}
			}
			if len(store.puts) != turnSteps+1 || waited != tc.waits {
				t.Errorf("%d commits, %d waited for; want %d, %d", len(store.puts), waited, turnSteps+1, tc.waits)
			}
			t.Logf("%s: %d of %d commits waited for, turn %v", tc.mode, waited, len(store.puts), took.Round(time.Millisecond))
		})
	}
}

// The turn of docs/performance.md ("Parallel steps"): a plan of four
// independent steps of 200 ms each (a real sleep: the step's own time is
// what the overhead is measured against), then respond.
const (
	parallelSelected = `{"capabilities": ["slow_a", "slow_b", "slow_c", "slow_d"]}`
	parallelPlan     = `{"steps": [
	 {"context_key": "a", "capability": "slow_a", "task_objective": "read a", "expected_output": "A"},
	 {"context_key": "b", "capability": "slow_b", "task_objective": "read b", "expected_output": "B"},
	 {"context_key": "c", "capability": "slow_c", "task_objective": "read c", "expected_output": "C"},
	 {"context_key": "d", "capability": "slow_d", "task_objective": "read d", "expected_output": "D"},
	 {"context_key": "answer", "capability": "respond", "task_objective": "answer"}]}`
	parallelStep = 200 * time.Millisecond
)

// BenchmarkParallelSteps runs that turn (task extraction, classifier and
// orchestrator with the scripted model answering at once, the four steps,
// respond) and reports its wall time divided by the slowest step's own
// time (wall/slowest; goal ≤ 1.1): 1 would mean the steps ran fully in
// parallel and everything else took no time.
func BenchmarkParallelSteps(b *testing.B) {
	for _, name := range []string{"memory", "sqlite"} {
		b.Run(name, func(b *testing.B) {
			var store checkpoint.Store = memory.New()
			if name == "sqlite" {
				s, err := sqlite.New(sqlite.Config{Path: filepath.Join(b.TempDir(), "parallel.db")})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				store = s
			}
			var (
				mu      sync.Mutex
				slowest time.Duration // of the current turn
			)
			var defs []capabilities.Definition
			for _, n := range []string{"a", "b", "c", "d"} {
				defs = append(defs, capabilities.Definition{Name: "slow_" + n, Description: "Reads " + n + " slowly.", Provides: []string{strings.ToUpper(n)},
					Run: func(ctx context.Context, _ capabilities.Step) (capabilities.Output, error) {
						start := time.Now()
						select {
						case <-time.After(parallelStep):
						case <-ctx.Done():
							return capabilities.Output{}, ctx.Err()
						}
						took := time.Since(start)
						mu.Lock()
						slowest = max(slowest, took)
						mu.Unlock()
						return capabilities.Result(strings.ToUpper(n), n, n+" read"), nil
					}})
			}
			a, _ := scriptedAgent(b, store, parallelSelected, parallelPlan, defs)
			var ratio float64
			i := 0
			for b.Loop() {
				i++
				mu.Lock()
				slowest = 0
				mu.Unlock()
				start := time.Now()
				checkTurn(b, a, fmt.Sprint("parallel-", i), 8, 5)
				wall := time.Since(start)
				mu.Lock()
				ratio += float64(wall) / float64(slowest)
				mu.Unlock()
			}
			b.ReportMetric(ratio/float64(i), "wall/slowest")
		})
	}
}
