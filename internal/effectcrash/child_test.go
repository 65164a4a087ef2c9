package effectcrash

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/postgres"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/internal/killtest"
	"github.com/capgraph/capgraph/mcp"
	"github.com/capgraph/capgraph/mcp/mcptest"
	"github.com/capgraph/capgraph/state"
)

// Environment of the child (and of the MCP server it starts).
const (
	envChild     = "CAPGRAPH_EFFECTCRASH_CHILD"      // "1" selects child mode in TestMain
	envMCPServer = "CAPGRAPH_EFFECTCRASH_MCP_SERVER" // "1" selects MCP server mode
	envSQLite    = "CAPGRAPH_EFFECTCRASH_SQLITE"     // the SQLite file, or
	envPGDSN     = "CAPGRAPH_EFFECTCRASH_PG_DSN"     // a PostgreSQL database and
	envPGSchema  = "CAPGRAPH_EFFECTCRASH_PG_SCHEMA"  // the schema of the test
	envLeaseTTL  = "CAPGRAPH_EFFECTCRASH_LEASE_TTL"
	// envDurability is the agent's checkpoint durability (graph.Durability):
	// the lanes of a test alternate sync and async.
	envDurability = "CAPGRAPH_EFFECTCRASH_DURABILITY"
	envJournal    = "CAPGRAPH_EFFECTCRASH_JOURNAL"
	envCalls      = "CAPGRAPH_EFFECTCRASH_CALLS"
	envSignals    = "CAPGRAPH_EFFECTCRASH_SIGNALS"
	// envStart lists the turns to start, "n:point:variant" comma-separated:
	// thread tN sets QN, with variant's capability, and the child stops
	// dead at point of that attempt.
	envStart = "CAPGRAPH_EFFECTCRASH_START"
	// envAwait lists threads a kill left unfinished: the child recovers
	// them (waiting for the dead replica's leases to expire) before it
	// starts anything.
	envAwait = "CAPGRAPH_EFFECTCRASH_AWAIT"
	// envAgain plans second cuts, "QN=point,…": the awaited turn on QN is
	// cut again at point of the attempt its recovery runs.
	envAgain = "CAPGRAPH_EFFECTCRASH_AGAIN"
	// envKills is the kill plan the MCP server gets: "QN=point,…".
	envKills = "CAPGRAPH_EFFECTCRASH_KILLS"
)

// The points of an attempt where a child is killed.
const (
	// pointBeforeStart: the attempt was approved (the approved record is
	// written); its started record is about to be.
	pointBeforeStart = "before_start"
	// pointBeforeEffect: the started record is durable and the capability
	// (or MCP tool) was called; it has not acted yet.
	pointBeforeEffect = "before_effect"
	// pointAfterEffect: the effect is in the journal; the capability has
	// not returned, so no ended record.
	pointAfterEffect = "after_effect"
	// pointAfterEnd: the ended record is durable; the step's checkpoint
	// is not written yet.
	pointAfterEnd = "after_end"
)

var points = []string{pointBeforeStart, pointBeforeEffect, pointAfterEffect, pointAfterEnd}

// recoverWithin bounds a child's wait for the threads it must recover.
const recoverWithin = 20 * time.Second

func threadOf(n int) string { return "t" + strconv.Itoa(n) }
func targetOf(n int) string { return "Q" + strconv.Itoa(n) }

// turnSpec is one turn a child starts.
type turnSpec struct {
	N       int
	Point   string
	Variant string
	// Point2, when set, cuts the turn a second time: at that point of the
	// attempt its recovery runs (the parent's plan; the child gets it in
	// envAgain).
	Point2 string
}

func (s turnSpec) String() string { return fmt.Sprintf("%d:%s:%s", s.N, s.Point, s.Variant) }

func parseSpecs(v string) ([]turnSpec, error) {
	var out []turnSpec
	for _, f := range strings.Split(v, ",") {
		if f == "" {
			continue
		}
		p := strings.Split(f, ":")
		if len(p) != 3 {
			return nil, fmt.Errorf("bad turn %q", f)
		}
		n, err := strconv.Atoi(p[0])
		if err != nil || !slices.Contains(points, p[1]) || !slices.Contains(allVariants, p[2]) {
			return nil, fmt.Errorf("bad turn %q", f)
		}
		out = append(out, turnSpec{N: n, Point: p[1], Variant: p[2]})
	}
	return out, nil
}

// killPlan maps a target to the point where its attempt stops dead.
type killPlan map[string]string

func (k killPlan) String() string {
	var parts []string
	for t, p := range k {
		parts = append(parts, t+"="+p)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func parseKills(v string) (killPlan, error) {
	k := killPlan{}
	for _, f := range strings.Split(v, ",") {
		if f == "" {
			continue
		}
		t, p, ok := strings.Cut(f, "=")
		if !ok || !slices.Contains(points, p) {
			return nil, fmt.Errorf("bad kill %q", f)
		}
		k[t] = p
	}
	return k, nil
}

// hooks returns the hooks that stop at the plan's points, calling signal
// first.
func (k killPlan) hooks(signal func(point, target string)) hooks {
	return planHooks{k, signal}
}

type planHooks struct {
	plan   killPlan
	signal func(point, target string)
}

func (h planHooks) at(point, target string) {
	if h.plan[target] != point {
		return
	}
	h.signal(point, target)
	select {} // until the SIGKILL
}

// auditHooks wraps the store's audit log: it stops dead before a started
// record of a target planned to die at pointBeforeStart is appended, and
// after an ended record of one planned to die at pointAfterEnd is.
type auditHooks struct {
	checkpoint.RecordLog
	h hooks
}

var threadNum = regexp.MustCompile(`^t(\d+)$`)

func (a auditHooks) AppendRecords(ctx context.Context, recs ...checkpoint.Record) ([]checkpoint.Record, error) {
	targets := make([]string, len(recs))
	for i, r := range recs {
		if m := threadNum.FindStringSubmatch(r.Thread); m != nil && r.Kind == "audit" {
			n, _ := strconv.Atoi(m[1])
			targets[i] = targetOf(n)
			if r.Labels["event"] == agent.AuditStarted {
				a.h.at(pointBeforeStart, targets[i])
			}
		}
	}
	out, err := a.RecordLog.AppendRecords(ctx, recs...)
	if err != nil {
		return out, err
	}
	for i, r := range recs {
		if targets[i] != "" && r.Labels["event"] == agent.AuditEnded {
			a.h.at(pointAfterEnd, targets[i])
		}
	}
	return out, nil
}

// leasingStore is a store that leases threads (SQLite in its process,
// PostgreSQL across processes).
type leasingStore interface {
	checkpoint.Store
	checkpoint.Leaser
	checkpoint.RecordLog
	Close() error
}

// openStore opens the store the environment names.
func openStore() (leasingStore, error) {
	if path := os.Getenv(envSQLite); path != "" {
		return sqlite.New(sqlite.Config{Path: path})
	}
	return postgres.New(context.Background(), postgres.Config{DSN: os.Getenv(envPGDSN), Schema: os.Getenv(envPGSchema), MaxConns: 8})
}

// inputOf is what the user types for turn n: the change, and which
// capability the scripted classifier selects for it.
func inputOf(s turnSpec) string {
	return fmt.Sprintf("Set %s to 2 A (use %s)", targetOf(s.N), capabilityOf(s.Variant))
}

var inputRE = regexp.MustCompile(`^Set (Q\d+) to 2 A \(use (\w+)\)$`)

// node is a scripted infrastructure node.
type node struct {
	name string
	run  func(s state.State) (state.Update, error)
}

func (n node) Name() string                                               { return n.name }
func (n node) Run(_ context.Context, s state.State) (state.Update, error) { return n.run(s) }

// newAgent is the agent every child runs: the journal capabilities and the
// MCP server's tools; task extraction, classifier and planner scripted from
// the user's words (set QN to 2 A, with the capability named); the standard
// answer, clarification and error nodes, offline.
func newAgent(store leasingStore, auditLog checkpoint.RecordLog, caps []capabilities.Capability, ttl time.Duration, durability graph.Durability) (*agent.Agent, error) {
	reg := capabilities.NewRegistry()
	if err := reg.Register(caps...); err != nil {
		return nil, err
	}
	parse := func(s state.State) (target, capability string, err error) {
		m := inputRE.FindStringSubmatch(s.Turn.Input)
		if m == nil {
			return "", "", fmt.Errorf("unexpected input %q", s.Turn.Input)
		}
		return m[1], m[2], nil
	}
	two := 2.0
	return agent.New(agent.Config{
		Registry: reg, Store: store, AuditLog: auditLog,
		Options: state.Options{WritesEnabled: true},
		Leases:  agent.LeaseConfig{TTL: ttl}, Durability: durability,
		TaskExtraction: node{state.NodeTaskExtraction, func(s state.State) (state.Update, error) {
			target, _, err := parse(s)
			if err != nil {
				return state.Update{}, err
			}
			t := s.Turn
			t.Task = &state.Task{Text: s.Turn.Input, Intent: intent.Intent{Kind: intent.KindChange,
				Changes: []intent.RequestedChange{{Target: target, Value: &two, Unit: "A"}}}}
			return state.Update{Turn: &t}, nil
		}},
		Classifier: node{state.NodeClassifier, func(s state.State) (state.Update, error) {
			_, capability, err := parse(s)
			if err != nil {
				return state.Update{}, err
			}
			t := s.Turn
			t.ActiveCapabilities = []string{capability, state.NodeRespond}
			return state.Update{Turn: &t}, nil
		}},
		Orchestrator: node{state.NodeOrchestrator, func(s state.State) (state.Update, error) {
			target, capability, err := parse(s)
			if err != nil {
				return state.Update{}, err
			}
			t := s.Turn
			set := state.PlanStep{PlannedStep: capabilities.PlannedStep{Capability: capability, ContextKey: "set",
				TaskObjective: "set " + target + " to 2 A", Parameters: map[string]any{"target": target, "value": 2.0}}, Status: state.StepPending}
			answer := state.PlanStep{PlannedStep: capabilities.PlannedStep{Capability: state.NodeRespond, ContextKey: "answer",
				TaskObjective: "say what was done"}, DependsOn: []int{0}, Status: state.StepPending}
			t.Plan = &state.Plan{Steps: []state.PlanStep{set, answer}}
			return state.Update{Turn: &t}, nil
		}},
	})
}

// capabilitiesOf builds the journal capabilities and connects the MCP
// server; close ends the server.
func capabilitiesOf(dir files, plan killPlan, h hooks) (caps []capabilities.Capability, closeMCP func(), err error) {
	m := &machine{journal: dir.journal, calls: dir.calls}
	for _, v := range journalVariants {
		c, err := journalCapability(v, m, h)
		if err != nil {
			return nil, nil, err
		}
		caps = append(caps, c)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	set, err := mcp.Connect(context.Background(), []mcp.ServerConfig{{
		Name: mcpServerName, Command: exe, Args: []string{"-test.run=^$"},
		Env: map[string]string{envMCPServer: "1", envJournal: dir.journal, envCalls: dir.calls,
			envSignals: dir.signals, envKills: plan.String(), mcptest.MarkerVar: os.Getenv(mcptest.MarkerVar)},
	}}, mcp.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("connect the MCP server: %w", err)
	}
	return append(caps, set.Capabilities()...), func() { set.Close() }, nil
}

// files are the files a child and its MCP server share with the parent.
type files struct{ journal, calls, signals string }

func filesFromEnv() files {
	return files{journal: os.Getenv(envJournal), calls: os.Getenv(envCalls), signals: os.Getenv(envSignals)}
}

// childMain recovers the turns a kill left unfinished (envAwait: on
// PostgreSQL once the dead replica's leases have expired), stopping dead
// where envAgain says for a second cut; once it has claimed them all, it
// starts the turns of envStart, approves each with the human's "yes", and
// stops dead at each turn's kill point. It prints
//
//	HELD n          n awaited threads were still leased when it first looked
//	RECOVERED tN    it claimed thread tN and resumes it
//	FINISHED tN     the resumed run of tN ended
//	POINT point QN  the attempt on QN stopped at point (the parent kills once
//	                every planned stop was said and every other awaited
//	                thread finished)
//	DONE            nothing was planned to stop, and every awaited thread finished
//	ERR …           anything unexpected
func childMain() int {
	sayer := killtest.NewSayer(os.Stdout)
	say := sayer.Say
	specs, err := parseSpecs(os.Getenv(envStart))
	if err != nil {
		say("ERR %v", err)
		return 1
	}
	plan, err := parseKills(os.Getenv(envAgain))
	if err != nil {
		say("ERR %v", err)
		return 1
	}
	for _, s := range specs {
		plan[targetOf(s.N)] = s.Point
	}
	slots := newSlots(startAtOnce)
	stopped := func(point, target string) {
		say("POINT %s %s", point, target)
		slots.release(target)
	}
	h := plan.hooks(stopped)
	store, err := openStore()
	if err != nil {
		say("ERR open store: %v", err)
		return 1
	}
	defer store.Close()
	fs := filesFromEnv()
	go relaySignals(fs.signals, stopped)
	caps, closeMCP, err := capabilitiesOf(fs, plan, h)
	if err != nil {
		say("ERR %v", err)
		return 1
	}
	defer closeMCP()
	ttl, _ := time.ParseDuration(os.Getenv(envLeaseTTL))
	a, err := newAgent(store, auditHooks{RecordLog: store, h: h}, caps, ttl, graph.Durability(os.Getenv(envDurability)))
	if err != nil {
		say("ERR agent: %v", err)
		return 1
	}
	ctx := context.Background()
	var resumes sync.WaitGroup
	if err := claimAwaited(ctx, a, strings.Split(os.Getenv(envAwait), ","), say, &resumes); err != nil {
		say("ERR recover: %v", err)
		return 1
	}
	if len(plan) == 0 {
		resumes.Wait()
		if sayer.Failed() {
			return 1
		}
		say("DONE")
		return 0
	}
	for _, s := range specs {
		go func() {
			slots.take(targetOf(s.N))
			defer slots.release(targetOf(s.N))
			if err := startTurn(ctx, a, s); err != nil {
				say("ERR %s: %v", threadOf(s.N), err)
				return
			}
			_, st, err := a.State(ctx, threadOf(s.N))
			say("ERR %s: the turn ended (%s, %v) without stopping at %s", threadOf(s.N), st, err, s.Point)
		}()
	}
	select {} // until the SIGKILL
}

// startTurn runs turn s to its approval and answers it as the operator
// would; the answer's run stops dead at the kill point.
func startTurn(ctx context.Context, a *agent.Agent, s turnSpec) error {
	th := threadOf(s.N)
	var ap *state.Approval
	for ev, err := range a.Run(ctx, agent.TurnRequest{Thread: th, Input: inputOf(s)}) {
		if err != nil {
			return err
		}
		if ev.Type == agent.EventApprovalRequired {
			ap = ev.Approval
		}
	}
	if ap == nil {
		_, st, _ := a.State(ctx, th)
		return fmt.Errorf("no approval asked (status %s)", st)
	}
	for _, err := range a.Resume(ctx, th, agent.Answer{ApprovalID: ap.ID, Text: "yes", By: "operator"}) {
		if err != nil {
			return err
		}
	}
	return nil
}

// claimAwaited claims every thread of threads, as a replica's recovery
// does (agent.ClaimUnfinished, the claim under RecoverRuns and the
// server's recovery), and resumes each in the background: at once on
// SQLite (the killed process's leases died with it); on PostgreSQL once the
// dead replica's leases have expired. A resumed run may stop dead at a
// second kill point, so nothing waits for them here.
func claimAwaited(ctx context.Context, a *agent.Agent, threads []string, say func(string, ...any), resumes *sync.WaitGroup) error {
	threads = slices.DeleteFunc(threads, func(s string) bool { return s == "" })
	left := slices.Clone(threads)
	deadline := time.Now().Add(recoverWithin)
	for first := true; len(left) > 0; first = false {
		for cr, err := range a.ClaimUnfinished(ctx) {
			if err != nil {
				return err
			}
			if !slices.Contains(left, cr.Thread) {
				cr.Release()
				say("ERR %s: unfinished, and not a thread the parent left to recover", cr.Thread)
				continue
			}
			left = slices.DeleteFunc(left, func(th string) bool { return th == cr.Thread })
			say("RECOVERED %s", cr.Thread)
			resumes.Add(1)
			go func() {
				defer resumes.Done()
				for _, err := range cr.Resume(ctx) {
					if err != nil {
						say("ERR %s: resume: %v", cr.Thread, err)
					}
				}
				say("FINISHED %s", cr.Thread)
			}()
		}
		if first && len(left) > 0 {
			say("HELD %d", len(left))
		}
		if len(left) > 0 {
			if time.Now().After(deadline) {
				return fmt.Errorf("threads %v still not claimed after %s", left, recoverWithin)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// startAtOnce bounds the turns a child drives at once until they stop at
// their kill points: two dozen turns starting together on a loaded machine
// delay the lease renewals of all of them.
const startAtOnce = 4

// slots is a semaphore whose slots are named by target, released once.
type slots struct {
	sem  chan struct{}
	mu   sync.Mutex
	held map[string]bool
}

func newSlots(n int) *slots { return &slots{sem: make(chan struct{}, n), held: map[string]bool{}} }

func (s *slots) take(target string) {
	s.sem <- struct{}{}
	s.mu.Lock()
	s.held[target] = true
	s.mu.Unlock()
}

func (s *slots) release(target string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[target] {
		delete(s.held, target)
		<-s.sem
	}
}

// relaySignals forwards the MCP server's stops to stopped.
func relaySignals(path string, stopped func(point, target string)) {
	var off int64
	for {
		time.Sleep(5 * time.Millisecond)
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		if _, err := f.Seek(off, io.SeekStart); err == nil {
			r := bufio.NewReader(f)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					break // a partial line is read again next time
				}
				off += int64(len(line))
				point, target, _ := strings.Cut(strings.TrimSpace(line), " ")
				stopped(point, target)
			}
		}
		f.Close()
	}
}

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(envMCPServer) == "1":
		os.Exit(mcpServerMain())
	case os.Getenv(envChild) == "1":
		os.Exit(childMain())
	}
	os.Exit(m.Run())
}
