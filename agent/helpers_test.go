package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/state"
)

// script hands out scripted errors, one per call; nil means succeed. After
// the script runs out every call succeeds.
type script struct {
	mu    sync.Mutex
	errs  []error
	calls int
}

func (sc *script) next() error {
	if sc == nil {
		return nil
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.calls++
	if len(sc.errs) == 0 {
		return nil
	}
	e := sc.errs[0]
	sc.errs = sc.errs[1:]
	return e
}

func (sc *script) count() int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.calls
}

// fnNode is a scripted infrastructure node.
type fnNode struct {
	name string
	sc   *script
	run  func(ctx context.Context, s state.State) (state.Update, error)
}

func (n *fnNode) Name() string { return n.name }
func (n *fnNode) Run(ctx context.Context, s state.State) (state.Update, error) {
	if err := n.sc.next(); err != nil {
		if errors.Is(err, errPanic) {
			panic("scripted panic in " + n.name)
		}
		return state.Update{}, err
	}
	return n.run(ctx, s)
}

var errPanic = errors.New("panic please")

// world is a scripted agent: infrastructure nodes and capabilities whose
// failures come from scripts, with fast retry policies.
type world struct {
	task, classify, orchestrate, respond, clarify *script
	caps                                          map[string]*script
	// plan returns the steps of the plan with the given number.
	plan     func(n int, s state.State) []state.PlanStep
	fallback map[string][]string
	policy   capabilities.RetryPolicy
	tokens   int // tokens each infra node reports
	// approval gives capabilities a RequiresApproval function.
	approval map[string]func(capabilities.Step) (bool, string)
	// writes marks side-effecting capabilities: they refuse when writes are
	// disabled and record every execution in done.
	writes map[string]bool
	mu     sync.Mutex
	done   []capabilities.Step // executions of writing capabilities that took effect
}

// effects returns the executions of writing capabilities that took effect.
func (w *world) effects() []capabilities.Step {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]capabilities.Step(nil), w.done...)
}

func fastPolicy() capabilities.RetryPolicy {
	return capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond,
		MaxInterval: 4 * time.Millisecond, Jitter: capabilities.JitterNone}
}

func step(capability, key string, deps ...int) state.PlanStep {
	return state.PlanStep{PlannedStep: capabilities.PlannedStep{Capability: capability, ContextKey: key, TaskObjective: "do " + key}, DependsOn: deps, Status: state.StepPending}
}

func newWorld(capNames ...string) *world {
	w := &world{task: &script{}, classify: &script{}, orchestrate: &script{}, respond: &script{}, clarify: &script{},
		caps: map[string]*script{}, fallback: map[string][]string{}, policy: fastPolicy()}
	for _, c := range capNames {
		w.caps[c] = &script{}
	}
	w.plan = func(n int, s state.State) []state.PlanStep {
		var steps []state.PlanStep
		for i, c := range capNames {
			steps = append(steps, step(c, fmt.Sprintf("%s_out", c)))
			_ = i
		}
		return append(steps, step(state.NodeRespond, "answer"))
	}
	return w
}

func (w *world) usage(u state.Update, role string) state.Update {
	if w.tokens > 0 {
		u.Tokens = map[string]int{role: w.tokens}
	}
	return u
}

func (w *world) config(t tb, capNames ...string) agent.Config {
	t.Helper()
	reg := capabilities.NewRegistry()
	for name, sc := range w.caps {
		sc := sc
		name := name
		c := capabilities.Define(capabilities.Definition{
			Name: name, Description: "scripted " + name, Provides: []string{"OUT"},
			Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
				if w.writes[name] && !st.WritesEnabled {
					return capabilities.Output{}, fmt.Errorf("%s: %w", name, capabilities.ErrWritesDisabled)
				}
				if err := sc.next(); err != nil {
					if errors.Is(err, errPanic) {
						panic("scripted capability panic")
					}
					if errors.Is(err, errHang) {
						<-ctx.Done()
						return capabilities.Output{}, ctx.Err()
					}
					if !errors.Is(err, errFreeze) {
						return capabilities.Output{}, err
					}
					freeze() // a frozen process: ignores its ctx, then succeeds
				}
				if w.writes[name] {
					w.mu.Lock()
					w.done = append(w.done, st)
					w.mu.Unlock()
				}
				return capabilities.Result("OUT", map[string]any{"by": name, "attempt": st.Attempt}, name+" ok"), nil
			},
			Fallbacks: w.fallback[name],
			Approval:  w.approval[name],
		})
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	infra := func(name string, sc *script, run func(ctx context.Context, s state.State) (state.Update, error)) nodes.Node {
		return &fnNode{name: name, sc: sc, run: run}
	}
	return agent.Config{
		Registry: reg,
		Store:    memory.New(),
		TaskExtraction: infra(state.NodeTaskExtraction, w.task, func(ctx context.Context, s state.State) (state.Update, error) {
			t := s.Turn
			t.Task = &state.Task{Text: "task: " + s.Turn.Input}
			return w.usage(state.Update{Turn: &t}, "task_extraction"), nil
		}),
		Classifier: infra(state.NodeClassifier, w.classify, func(ctx context.Context, s state.State) (state.Update, error) {
			t := s.Turn
			t.ActiveCapabilities = append(reg.Names(), state.NodeRespond, state.NodeClarify)
			return w.usage(state.Update{Turn: &t}, "classifier"), nil
		}),
		Orchestrator: infra(state.NodeOrchestrator, w.orchestrate, func(ctx context.Context, s state.State) (state.Update, error) {
			t := s.Turn
			t.Plan = &state.Plan{Steps: w.plan(s.Turn.Control.PlansCreated+1, s)}
			return w.usage(state.Update{Turn: &t}, "orchestrator"), nil
		}),
		Respond: infra(state.NodeRespond, w.respond, func(ctx context.Context, s state.State) (state.Update, error) {
			var parts []string
			for _, e := range s.Context.Entries() {
				parts = append(parts, e.Summary)
			}
			return w.usage(state.Update{Messages: []state.Message{{Role: state.RoleAssistant, Content: "answer: " + strings.Join(parts, "; ")}}}, "response"), nil
		}),
		Clarify: infra(state.NodeClarify, w.clarify, func(ctx context.Context, s state.State) (state.Update, error) {
			return state.Update{Messages: []state.Message{{Role: state.RoleAssistant, Content: "which one do you mean?", Kind: state.KindClarification}}}, nil
		}),
		RetryPolicy: w.policy,
		InfraRetry: map[string]capabilities.RetryPolicy{
			state.NodeTaskExtraction: w.policy, state.NodeClassifier: w.policy, state.NodeOrchestrator: w.policy,
			state.NodeRespond: w.policy, state.NodeClarify: w.policy,
		},
	}
}

var errHang = errors.New("hang until the deadline")

// errFreeze makes a capability call freeze() and then succeed.
var (
	errFreeze = errors.New("freeze, then succeed")
	freeze    func()
)

var listAll = checkpoint.ListOptions{}

// outcome collects a turn's events.
type outcome struct {
	events []agent.Event
	err    error
}

func run(t tb, a *agent.Agent, thread, input string) outcome {
	t.Helper()
	var o outcome
	for ev, err := range a.Run(context.Background(), agent.TurnRequest{Thread: thread, Input: input}) {
		o.events = append(o.events, ev)
		if err != nil {
			o.err = err
		}
	}
	return o
}

func (o outcome) last() agent.Event { return o.events[len(o.events)-1] }

func (o outcome) message() *state.Message {
	for _, e := range o.events {
		if e.Type == agent.EventMessage {
			return e.Message
		}
	}
	return nil
}

func (o outcome) count(typ agent.EventType) int {
	n := 0
	for _, e := range o.events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// mustAgent builds the agent of cfg; a test that can clean up closes it
// when it ends, and fails if that does not stop everything the agent runs.
func mustAgent(t tb, cfg agent.Config) *agent.Agent {
	t.Helper()
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := t.(cleaner); ok {
		c.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := a.Close(ctx); err != nil {
				c.Errorf("closing the agent: %v", err)
			}
		})
	}
	return a
}

// cleaner is what mustAgent needs to close the agent when the test ends.
type cleaner interface {
	Cleanup(func())
	Errorf(format string, args ...any)
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// tb is what the helpers need from *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}
