package agentcrash

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/internal/killtest"
	"github.com/capgraph/capgraph/state"
)

// Environment of the child process.
const (
	envChild   = "CAPGRAPH_AGENTCRASH_CHILD" // "1" selects child mode in TestMain
	envDB      = "CAPGRAPH_AGENTCRASH_DB"
	envMarker  = "CAPGRAPH_AGENTCRASH_MARKER"
	envAnswers = "CAPGRAPH_AGENTCRASH_ANSWERS"
	envThreads = "CAPGRAPH_AGENTCRASH_THREADS" // comma-separated
	envRound   = "CAPGRAPH_AGENTCRASH_ROUND"
)

// retryDelay is flaky_b's durable retry delay (its first attempt fails).
const retryDelay = 40 * time.Millisecond

// The plan of every turn: read_a and flaky_b run together; write_x needs
// both and a human's approval; read_c runs after it; respond answers.
func plan() []state.PlanStep {
	st := func(c, key string, deps ...int) state.PlanStep {
		return state.PlanStep{PlannedStep: capabilities.PlannedStep{Capability: c, ContextKey: key, TaskObjective: "do " + key},
			DependsOn: deps, Status: state.StepPending}
	}
	return []state.PlanStep{st("read_a", "a"), st("flaky_b", "b"), st("write_x", "x", 0, 1), st("read_c", "c", 2), st(state.NodeRespond, "r", 0, 1, 2, 3)}
}

// infra is a scripted infrastructure node.
type infra struct {
	name string
	run  func(s state.State) state.Update
}

func (n infra) Name() string { return n.name }
func (n infra) Run(ctx context.Context, s state.State) (state.Update, error) {
	if err := work(ctx); err != nil {
		return state.Update{}, err
	}
	return n.run(s), nil
}

// work takes a few milliseconds, so kills land inside nodes too.
func work(ctx context.Context) error {
	select {
	case <-time.After(time.Duration(1+rand.IntN(6)) * time.Millisecond):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// newAgent builds the agent every child runs: scripted infrastructure nodes,
// four capabilities that append "thread capability idempotency-key round
// approved" to the marker file once their work is done (a line is an
// execution that took effect), over store.
func newAgent(store checkpoint.Store, marker *os.File, round string) (*agent.Agent, error) {
	var mu sync.Mutex
	record := func(st capabilities.Step, name string) error {
		mu.Lock()
		defer mu.Unlock()
		thread := strings.SplitN(st.IdempotencyKey, "/", 2)[0]
		_, err := fmt.Fprintf(marker, "%s %s %s %s %v\n", thread, name, st.IdempotencyKey, round, st.Approved)
		return err
	}
	reg := capabilities.NewRegistry()
	def := func(name string, d capabilities.Definition) error {
		d.Name, d.Description, d.Provides = name, "test "+name, []string{"OUT"}
		run := d.Run
		d.Run = func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			if err := work(ctx); err != nil {
				return capabilities.Output{}, err
			}
			if run != nil {
				if _, err := run(ctx, st); err != nil {
					return capabilities.Output{}, err
				}
			}
			if err := record(st, name); err != nil {
				return capabilities.Output{}, err
			}
			return capabilities.Result("OUT", st.IdempotencyKey, name+" ok").With(artifactsOf(name)...), nil
		}
		c := capabilities.Define(d)
		return reg.Register(c)
	}
	err := errors.Join(
		def("read_a", capabilities.Definition{}),
		def("flaky_b", capabilities.Definition{
			Retry: capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: retryDelay, Jitter: capabilities.JitterNone},
			Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
				if st.Attempt == 1 {
					return capabilities.Output{}, capabilities.NewError(capabilities.Retriable, capabilities.KindTimeout, "flaky_b timed out", nil)
				}
				return capabilities.Output{}, nil
			}}),
		def("write_x", capabilities.Definition{
			Approval: func(capabilities.Step) (bool, string) { return true, "set X from 1 to 2" },
			Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
				if !st.WritesEnabled {
					return capabilities.Output{}, capabilities.ErrWritesDisabled
				}
				return capabilities.Output{}, nil
			}}),
		def("read_c", capabilities.Definition{}),
	)
	if err != nil {
		return nil, err
	}
	return agent.New(agent.Config{
		Registry: reg,
		Store:    store,
		Options:  state.Options{WritesEnabled: true},
		Limits:   agent.Limits{MaxExecutionTime: 10 * time.Minute},
		TaskExtraction: infra{state.NodeTaskExtraction, func(s state.State) state.Update {
			t := s.Turn
			t.Task = &state.Task{Text: s.Turn.Input}
			return state.Update{Turn: &t}
		}},
		Classifier: infra{state.NodeClassifier, func(s state.State) state.Update {
			t := s.Turn
			t.ActiveCapabilities = append(reg.Names(), state.NodeRespond)
			return state.Update{Turn: &t}
		}},
		Orchestrator: infra{state.NodeOrchestrator, func(s state.State) state.Update {
			t := s.Turn
			t.Plan = &state.Plan{Steps: plan()}
			return state.Update{Turn: &t}
		}},
		Respond: infra{state.NodeRespond, func(s state.State) state.Update {
			return state.Update{Messages: []state.Message{{Role: state.RoleAssistant, Content: "done: " + s.Turn.Input}}}
		}},
		Clarify: infra{state.NodeClarify, func(s state.State) state.Update {
			return state.Update{Messages: []state.Message{{Role: state.RoleAssistant, Content: "which?", Kind: state.KindClarification}}}
		}},
	})
}

// artifactsOf is what a capability returns beside its value: read_a a
// time series of artifactPoints samples, read_c a table; checkFinal finds
// them in every finished thread's state, whatever the kills interrupted.
func artifactsOf(name string) []capabilities.Artifact {
	switch name {
	case "read_a":
		s := capabilities.Series{Name: "A", Units: "mA"}
		for i := range artifactPoints {
			s.Add(time.UnixMilli(int64(i)*1000), float64(i)/2)
		}
		return []capabilities.Artifact{capabilities.NewTimeSeries("A history", s)}
	case "read_c":
		return []capabilities.Artifact{capabilities.NewTable("C", []capabilities.Column{{Name: "channel"}, {Name: "value", Units: "A"}}, []any{"C", 2.0})}
	}
	return nil
}

const artifactPoints = 50

// ackStore reports what became durable: "ACK thread step id" after a Put
// returned, "WAIT thread" when that checkpoint delays the next step, "ASK
// thread" after an interrupt (an approval question) was written.
// It forwards the store's checkpoint.Leaser, so the agent runs under
// SQLite's leases and their fencing, as it does without the wrapper.
type ackStore struct {
	leasingStore
	say func(string, ...any)
}

type leasingStore interface {
	checkpoint.Store
	checkpoint.Leaser
}

var (
	_ checkpoint.Leaser      = ackStore{}
	_ checkpoint.TuplePutter = ackStore{}
)

func (s ackStore) Put(ctx context.Context, cp checkpoint.Checkpoint) error {
	if err := s.leasingStore.Put(ctx, cp); err != nil {
		return err
	}
	s.say("ACK %s %d %s", cp.ThreadID, cp.Step, cp.ID)
	if cp.NotBefore.After(time.Now()) {
		s.say("WAIT %s", cp.ThreadID)
	}
	return nil
}

// PutTuple stores an answer with its checkpoint in one transaction, as
// the SQLite store does under the agent; the checkpoint is acknowledged
// once both are.
func (s ackStore) PutTuple(ctx context.Context, t checkpoint.Tuple) error {
	if err := s.leasingStore.(checkpoint.TuplePutter).PutTuple(ctx, t); err != nil {
		return err
	}
	s.say("ACK %s %d %s", t.Checkpoint.ThreadID, t.Checkpoint.Step, t.Checkpoint.ID)
	return nil
}

func (s ackStore) PutWrites(ctx context.Context, thread string, id uuid.UUID, ws []checkpoint.Write) error {
	if err := s.leasingStore.PutWrites(ctx, thread, id, ws); err != nil {
		return err
	}
	for _, w := range ws {
		if w.Kind == checkpoint.WriteInterrupt {
			s.say("ASK %s", thread)
			break
		}
	}
	return nil
}

// readAnswers reads the parent's answers: "thread approval-id yes|no".
func readAnswers(path string) map[string]bool {
	out := map[string]bool{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 {
			out[f[0]+" "+f[1]] = f[2] == "yes"
		}
	}
	return out
}

// childMain recovers the runs a kill cut (RecoverRuns), then, for each
// thread of envThreads, starts its turn if it has none, or answers its
// pending approval if the parent has. It prints "DONE thread" for every
// thread whose turn ended, and "ERR ..." on any failure (then exits 1).
func childMain() int {
	sayer := killtest.NewSayer(os.Stdout)
	say := sayer.Say
	sq, err := sqlite.New(sqlite.Config{Path: os.Getenv(envDB)})
	if err != nil {
		say("ERR open store: %v", err)
		return 1
	}
	defer sq.Close()
	marker, err := os.OpenFile(os.Getenv(envMarker), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		say("ERR open marker: %v", err)
		return 1
	}
	defer marker.Close()
	a, err := newAgent(ackStore{leasingStore: sq, say: say}, marker, os.Getenv(envRound))
	if err != nil {
		say("ERR agent: %v", err)
		return 1
	}
	ctx := context.Background()
	if _, err := a.RecoverRuns(ctx); err != nil {
		say("ERR recover: %v", err)
	}
	answers := readAnswers(os.Getenv(envAnswers))
	threads := strings.Split(os.Getenv(envThreads), ",")
	var wg sync.WaitGroup
	for _, th := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := step(ctx, a, th, answers); err != nil {
				say("ERR %s: %v", th, err)
			}
		}()
	}
	wg.Wait()
	for _, th := range threads {
		s, st, err := a.State(ctx, th)
		switch {
		case err != nil:
			say("ERR %s: %v", th, err)
		case st == agent.RunAnswered && s.Turn.Done:
			say("DONE %s", th)
		case st != agent.RunInterrupted:
			say("ERR %s: run stopped with status %s", th, st)
		}
	}
	if sayer.Failed() {
		return 1
	}
	return 0
}

func step(ctx context.Context, a *agent.Agent, th string, answers map[string]bool) error {
	_, st, err := a.State(ctx, th)
	var events func(func(agent.Event, error) bool)
	switch {
	case errors.Is(err, agent.ErrUnknownThread):
		events = a.Run(ctx, agent.TurnRequest{Thread: th, Input: "go " + th})
	case err != nil:
		return err
	case st == agent.RunInterrupted:
		pend, err := a.PendingApprovals(ctx, th)
		if err != nil || len(pend) == 0 {
			return fmt.Errorf("interrupted without a pending approval (%v)", err)
		}
		yes, ok := answers[th+" "+pend[0].ID]
		if !ok {
			return nil // the parent has not answered yet
		}
		events = a.Resume(ctx, th, agent.Answer{ApprovalID: pend[0].ID, Approved: &yes})
	default:
		return nil
	}
	for _, err := range events {
		if err != nil {
			return err
		}
	}
	return nil
}

func TestMain(m *testing.M) {
	if os.Getenv(envChild) == "1" {
		os.Exit(childMain())
	}
	os.Exit(m.Run())
}
