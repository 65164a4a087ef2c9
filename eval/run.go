package eval

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// Target is the agent under evaluation.
type Target struct {
	// Name names the configuration in reports and comparisons.
	Name string
	// Config is the agent's configuration. Every case run gets an agent
	// of its own over it, with a fresh in-memory store, the run's faults
	// injected into the registry and an observer of its own (which passes
	// every event on to Config.Observer).
	Config agent.Config
	// Registry, when set, builds a fresh registry for every case run, so
	// that one case's writes are not another's state; nil shares
	// Config.Registry.
	Registry func(ctx context.Context) (*capabilities.Registry, error)
	// ModelNames name the models under test ("openai/gpt-4o-mini"), so a
	// judge among them is refused.
	ModelNames []string
}

// Options say how to run a suite.
type Options struct {
	// Concurrency bounds the case runs at once (default 4).
	Concurrency int
	// Repeats, when positive, replaces the suite's and the cases' repeats.
	Repeats int
	// Tags, when set, runs only the cases with one of them.
	Tags []string
	// Judge grades rubrics; a rubric without one is an infrastructure error.
	Judge *Judge
	// Timeout bounds one case run (default 5 min); a run cut by it fails.
	Timeout time.Duration
	// Progress, when set, is told of every finished run, one call at a time.
	Progress func(p Progress)
}

// Progress is one finished run.
type Progress struct {
	Done, Total int
	Case        string
	Passed      bool
}

// DefaultConcurrency is Options.Concurrency's default.
const DefaultConcurrency = 4

// DefaultTimeout is Options.Timeout's default.
const DefaultTimeout = 5 * time.Minute

// Run runs every case of s against t and reports. The error is for a
// suite that cannot run at all (an invalid suite, a judge under test); a
// case run that cannot be carried out (its agent cannot be built, the
// judge fails) is an infrastructure error in its RunResult and counted in
// Report.Errors.
func Run(ctx context.Context, s *Suite, t Target, opts Options) (*Report, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if err := checkJudge(opts.Judge, t); err != nil {
		return nil, err
	}
	return run(ctx, s, t.Name, openInProcess(t), opts), nil
}

// run runs the suite's cases, each run in a session open starts.
func run(ctx context.Context, s *Suite, target string, open opener, opts Options) *Report {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	rep := &Report{Suite: s.Name, Target: target, Started: time.Now(), Thresholds: s.thresholds()}
	type job struct{ c, repeat int }
	var jobs []job
	for i, c := range s.Cases {
		if len(opts.Tags) > 0 && !slices.ContainsFunc(c.Tags, func(tag string) bool { return slices.Contains(opts.Tags, tag) }) {
			continue
		}
		n := c.Repeats
		if n == 0 {
			n = s.Repeats
		}
		if opts.Repeats > 0 {
			n = opts.Repeats
		}
		n = max(n, 1)
		rep.Cases = append(rep.Cases, CaseResult{ID: c.ID, Tags: c.Tags, Runs: make([]RunResult, n), index: i})
		for r := range n {
			jobs = append(jobs, job{len(rep.Cases) - 1, r})
		}
	}
	var (
		mu   sync.Mutex
		done int
		wg   sync.WaitGroup
		sem  = make(chan struct{}, opts.Concurrency)
	)
	for _, j := range jobs {
		cr := &rep.Cases[j.c]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			res := runCase(ctx, s.Cases[cr.index], j.repeat, open, opts)
			mu.Lock()
			defer mu.Unlock()
			cr.Runs[j.repeat] = res
			done++
			if opts.Progress != nil {
				opts.Progress(Progress{Done: done, Total: len(jobs), Case: cr.ID, Passed: res.Passed})
			}
		}()
	}
	wg.Wait()
	rep.Duration = time.Since(rep.Started)
	rep.score()
	return rep
}

// RunResult is one run of a case.
type RunResult struct {
	Repeat   int       `json:"repeat"`
	Passed   bool      `json:"passed"`
	Failures []Failure `json:"failures,omitempty"`
	// Error is an infrastructure error: the run could not be carried out
	// or checked.
	Error string `json:"error,omitempty"`
	// Turns are what each turn did.
	Turns      []*Trace      `json:"turns"`
	ModelCalls int           `json:"model_calls"`
	Tokens     int           `json:"tokens"`
	Duration   time.Duration `json:"duration"`
	// metrics are those the run had expectations of.
	metrics map[string]bool
}

// Last returns the last turn's trace (nil when no turn ran).
func (r *RunResult) Last() *Trace {
	if len(r.Turns) == 0 {
		return nil
	}
	return r.Turns[len(r.Turns)-1]
}

// evalUser is who answers approvals in a case: the case file's author,
// speaking through its turns.
const evalUser = "eval"

// session is one case run's conversation with the agent under test: in
// this process (inProcess) or on a server (remoteSession).
type session interface {
	// turn sends one user message and returns what the turn did; an error
	// is an infrastructure error.
	turn(ctx context.Context, say string) (*Trace, error)
	// sideEffects says whether a capability acts on the outside world.
	sideEffects(name string) bool
	close()
}

// opener starts the session of one case run.
type opener func(ctx context.Context, c Case, repeat int) (session, error)

func runCase(ctx context.Context, c Case, repeat int, open opener, opts Options) (res RunResult) {
	res = RunResult{Repeat: repeat, metrics: map[string]bool{}}
	start := time.Now()
	defer func() {
		res.Duration = time.Since(start)
		res.Passed = res.Error == "" && len(res.Failures) == 0
	}()
	infra := func(err error) RunResult {
		res.Error = err.Error()
		return res
	}
	rctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	sess, err := open(rctx, c, repeat)
	if err != nil {
		return infra(err)
	}
	defer sess.close()
	for i, turn := range c.Turns {
		tr, err := sess.turn(rctx, turn.Say)
		if tr != nil {
			res.Turns = append(res.Turns, tr)
			res.ModelCalls += tr.ModelCalls
			res.Tokens += tr.Tokens
		}
		if rctx.Err() != nil && ctx.Err() == nil {
			res.Failures = append(res.Failures, Failure{Field: "timeout", Metric: MetricLimits,
				Want: "the case ends within " + opts.Timeout.String(), Seen: fmt.Sprintf("turn %d still running", i+1)})
			return res
		}
		if err != nil {
			return infra(fmt.Errorf("turn %d: %w", i+1, err))
		}
		ck := &checker{ctx: rctx, t: tr, judge: opts.Judge, metrics: res.metrics, sideEffects: sess.sideEffects}
		ck.prefix = fmt.Sprintf("turns[%d].expect", i)
		ck.check(turn.Expect)
		if i == len(c.Turns)-1 {
			ck.prefix = "expect"
			ck.check(c.Expect)
		}
		res.Failures = append(res.Failures, ck.failures...)
		if ck.infra != nil {
			return infra(ck.infra)
		}
	}
	return res
}

// inProcess is a case run on an agent of its own in this process.
type inProcess struct {
	c      Case
	a      *agent.Agent
	reg    *capabilities.Registry
	obs    *observer
	thread string
}

// openInProcess builds the agent of one case run: t's configuration over
// a fresh memory store and registry, the case's faults injected.
func openInProcess(t Target) opener {
	return func(ctx context.Context, c Case, repeat int) (session, error) {
		reg := t.Config.Registry
		if t.Registry != nil {
			var err error
			if reg, err = t.Registry(ctx); err != nil {
				return nil, fmt.Errorf("registry: %w", err)
			}
		}
		if reg == nil {
			return nil, errors.New("the target has no registry")
		}
		reg, err := injectFaults(reg, c.Inject)
		if err != nil {
			return nil, err
		}
		cfg := t.Config
		cfg.Registry = reg
		cfg.Store = memory.New()
		cfg.AuditLog = nil
		if m := c.MaxExecutionTime.D(); m > 0 && (cfg.Limits.MaxExecutionTime == 0 || m < cfg.Limits.MaxExecutionTime) {
			cfg.Limits.MaxExecutionTime = m
		}
		obs := &observer{next: t.Config.Observer, traces: map[string]*Trace{}}
		cfg.Observer = obs
		a, err := agent.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		return &inProcess{c: c, a: a, reg: reg, obs: obs, thread: "eval:" + c.ID + ":" + strconv.Itoa(repeat+1)}, nil
	}
}

func (s *inProcess) turn(ctx context.Context, say string) (*Trace, error) {
	tr := &Trace{Input: say}
	s.obs.watch(s.thread, tr)
	began := time.Now()
	var runErr error
	for ev, err := range s.a.Run(ctx, agent.TurnRequest{Thread: s.thread, Input: say, By: evalUser,
		Options: s.c.Options, AllowedCapabilities: s.c.AllowedCapabilities}) {
		tr.add(ev)
		if err != nil {
			if errors.Is(err, agent.ErrFatal) {
				tr.Fatal, tr.Status = err.Error(), agent.RunFailed
			} else {
				runErr = err
			}
		}
	}
	tr.Duration = time.Since(began)
	if runErr != nil {
		return tr, runErr
	}
	if st, status, err := s.a.State(ctx, s.thread); err == nil {
		tr.finish(st)
		if tr.Status == "" {
			tr.Status = status
		}
	}
	return tr, nil
}

func (s *inProcess) sideEffects(name string) bool { return sideEffecting(s.reg, name) }

func (s *inProcess) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.a.Close(ctx)
}
