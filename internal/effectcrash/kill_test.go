package effectcrash

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint/postgres"
	"github.com/capgraph/capgraph/graph/checkpoint/postgres/pgtest"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/internal/killtest"
	"github.com/capgraph/capgraph/mcp/mcptest"
	"github.com/capgraph/capgraph/state"
)

const (
	// defaultRounds: every round kills a child once, with one attempt at
	// every point for every variant, so each point is killed this often
	// per variant and store. envRounds asks for more.
	defaultRounds = 20
	envRounds     = "CAPGRAPH_EFFECTCRASH_ROUNDS"
	childDeadline = 60 * time.Second
	// pgLeaseTTL is the replicas' lease (the lease_ttl: 2s): a
	// killed replica's turns are taken over about this long after the
	// kill. envLeaseTTL in the test's environment changes it.
	pgLeaseTTL = 2 * time.Second
	// maxLeaseTTL bounds how far a scenario lengthens its lease when its
	// children start too late to find a killed one's leases held (a
	// machine under load): well within the child's recoverWithin.
	maxLeaseTTL = 8 * time.Second
)

func rounds(t *testing.T) int {
	t.Helper()
	v := os.Getenv(envRounds)
	if v == "" {
		return defaultRounds
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a number of rounds ≥ 1", envRounds, v)
	}
	return n
}

// scenario is one store under the crash test.
type scenario struct {
	// env names the store to the children.
	env []string
	// open opens the store in the parent, for the checks.
	open func(t *testing.T) (leasingStore, func())
	// variants run in every round, each cut at every one of points
	// (default: all).
	variants []string
	points   []string
	// rounds of kills (default: rounds(t)).
	rounds int
	// takeover: the store is shared by replicas (PostgreSQL), and the
	// child after a kill must wait for the dead one's leases, which last
	// leaseTTL (lengthened when the children start too late to see them
	// held; see runScenario).
	takeover bool
	leaseTTL time.Duration
}

// childRun is what one child printed.
type childRun struct {
	stopped   map[string]string // target → point it stopped at
	recovered []string
	finished  []string
	held      int
	// claimed is when the child said what its first claim found (HELD or
	// RECOVERED), and ended when it was killed or exited.
	claimed, ended time.Time
	done           bool
	errs           []string
	killed         bool
	exit           error
}

// runChild starts a child that recovers await (cutting again the turns of
// again at their Point2) and starts specs; it is killed once every planned
// stop was said and every other awaited thread finished, or at once when it
// reports an error.
func runChild(t *testing.T, sc scenario, dir string, round int, specs, again []turnSpec, await []string, ttl time.Duration) childRun {
	t.Helper()
	cr := childRun{stopped: map[string]string{}}
	start := make([]string, len(specs))
	for i, s := range specs {
		start[i] = s.String()
	}
	second := killPlan{}
	for _, s := range again {
		second[targetOf(s.N)] = s.Point2
	}
	marker := mcptest.Marker(t)
	env := append(slices.Clone(sc.env),
		mcptest.MarkerVar+"="+marker,
		envChild+"=1",
		envJournal+"="+filepath.Join(dir, "journal.log"),
		envCalls+"="+filepath.Join(dir, "calls.log"),
		envSignals+"="+filepath.Join(dir, fmt.Sprintf("signals-%d.log", round)),
		envStart+"="+strings.Join(start, ","),
		envAgain+"="+second.String(),
		envAwait+"="+strings.Join(await, ","),
	)
	if ttl > 0 {
		env = append(env, envLeaseTTL+"="+ttl.String())
	}
	stops, finishing := len(specs)+len(again), len(await)-len(again)
	ready := func() bool { return len(cr.stopped) == stops && len(cr.finished) == finishing }
	var lines []string
	defer func() {
		if t.Failed() {
			t.Logf("round %d: the child printed:\n%s", round, strings.Join(lines, "\n"))
		}
	}()
	r := killtest.Run(t, killtest.Child{
		Name:     fmt.Sprintf("round %d", round),
		Env:      env,
		Kill:     stops > 0,
		Deadline: childDeadline,
		// Every stopped attempt blocks for good: the kill lands where it stopped.
		AfterTrigger: 0,
		Line: func(line string) bool {
			lines = append(lines, line)
			f := strings.Fields(line)
			switch {
			case len(f) == 3 && f[0] == "POINT":
				if prev, ok := cr.stopped[f[2]]; ok {
					cr.errs = append(cr.errs, fmt.Sprintf("%s stopped twice (%s, %s)", f[2], prev, f[1]))
					return true
				}
				cr.stopped[f[2]] = f[1]
				return ready()
			case len(f) == 2 && f[0] == "RECOVERED":
				cr.recovered = append(cr.recovered, f[1])
				if cr.claimed.IsZero() {
					cr.claimed = time.Now()
				}
			case len(f) == 2 && f[0] == "FINISHED":
				cr.finished = append(cr.finished, f[1])
				return ready()
			case len(f) == 2 && f[0] == "HELD":
				cr.held, _ = strconv.Atoi(f[1])
				if cr.claimed.IsZero() {
					cr.claimed = time.Now()
				}
			case len(f) == 1 && f[0] == "DONE":
				cr.done = true
			default:
				cr.errs = append(cr.errs, line)
				return true // no use waiting: kill it
			}
			return false
		},
	})
	cr.killed, cr.exit, cr.ended = r.Killed, r.Exit, time.Now()
	// The MCP server dies with the child (its parent-death signal): a
	// server left running could finish a call after the restart.
	if left := mcptest.Gone(marker, 10*time.Second); len(left) > 0 {
		t.Errorf("round %d: processes of the child's MCP server outlived it: %v", round, left)
	}
	return cr
}

// reruns reports whether an attempt of variant cut before its effect runs
// again after the restart (so that its recovery can be cut too).
func reruns(variant string) bool {
	switch variant {
	case variantReadback, variantReconcile, variantIdempotent, variantMCPIdem:
		return true
	}
	return false
}

// runScenario kills children round after round at every point of an
// attempt and checks every turn once a later child has recovered it. The
// turns cut before their effect whose attempt runs again are cut a second
// time, in the next round, while that attempt runs (at each point in turn,
// round after round). It returns the directory of the journal and the
// turns that ran.
func runScenario(t *testing.T, sc scenario) (string, []turnSpec) {
	t.Helper()
	start := time.Now()
	dir := t.TempDir()
	n := 0
	var (
		all []turnSpec
		// prev: started last round; carried: cut a second time last round.
		prev, carried []turnSpec
		held, seconds int
		// ttl is the lease of the children started now; killedTTL and
		// killedAt the killed child's, and when it was killed.
		ttl, killedTTL = sc.leaseTTL, time.Duration(0)
		killedAt       time.Time
	)
	total, cut := sc.rounds, sc.points
	if total == 0 {
		total = rounds(t)
	}
	if cut == nil {
		cut = points
	}
	for round := 1; round <= total+1; round++ {
		var specs []turnSpec
		if round <= total {
			for _, p := range cut {
				for _, v := range sc.variants {
					n++
					s := turnSpec{N: n, Point: p, Variant: v}
					if round < total && p == pointBeforeEffect && reruns(v) {
						s.Point2 = points[(round-1)%len(points)]
					}
					specs = append(specs, s)
				}
			}
		}
		var again, final []turnSpec
		for _, s := range prev {
			if s.Point2 != "" {
				again = append(again, s)
			} else {
				final = append(final, s)
			}
		}
		final = append(final, carried...)
		var await []string
		for _, s := range append(slices.Clone(prev), carried...) {
			await = append(await, threadOf(s.N))
		}
		used := ttl
		cr := runChild(t, sc, dir, round, specs, again, await, used)
		// A child that claimed only after half the killed one's lease had
		// passed could not find it held (the lease is renewed before it
		// runs out): on a machine this slow, the next children lease for
		// longer, so that the takeover is exercised.
		if sc.takeover && held == 0 && cr.held == 0 && !killedAt.IsZero() && !cr.claimed.IsZero() &&
			cr.claimed.Sub(killedAt) >= killedTTL/2 && ttl < maxLeaseTTL {
			ttl = min(2*ttl, maxLeaseTTL)
			t.Logf("round %d: the child claimed %s after the kill, with a lease of %s: the next children lease for %s",
				round, cr.claimed.Sub(killedAt).Round(time.Millisecond), killedTTL, ttl)
		}
		if cr.killed {
			killedAt, killedTTL = cr.ended, used
		}
		for _, e := range cr.errs {
			t.Errorf("round %d: child said: %s", round, e)
		}
		switch {
		case len(specs)+len(again) > 0 && !cr.killed:
			t.Fatalf("round %d: the child was not killed (exit %v)", round, cr.exit)
		case len(specs)+len(again) == 0 && (cr.exit != nil || !cr.done):
			t.Fatalf("final round: the child failed: %v", cr.exit)
		}
		for _, s := range specs {
			if got := cr.stopped[targetOf(s.N)]; got != s.Point {
				t.Errorf("round %d: %s (%s) stopped at %q, want %s", round, threadOf(s.N), s.Variant, got, s.Point)
			}
		}
		for _, s := range again {
			if got := cr.stopped[targetOf(s.N)]; got != s.Point2 {
				t.Errorf("round %d: the recovery of %s (%s) stopped at %q, want %s", round, threadOf(s.N), s.Variant, got, s.Point2)
			}
		}
		if !slices.Equal(slices.Sorted(slices.Values(cr.recovered)), slices.Sorted(slices.Values(await))) {
			t.Errorf("round %d: recovered %v, want %v", round, cr.recovered, await)
		}
		if cr.held > 0 {
			held++
		}
		if t.Failed() {
			t.FailNow()
		}
		checkTurns(t, sc, dir, final)
		if t.Failed() {
			t.FailNow()
		}
		all = append(all, specs...)
		seconds += len(again)
		prev, carried = specs, again
	}
	checkJournal(t, dir, all)
	if sc.takeover && held == 0 {
		t.Errorf("no child found the killed replica's leases still held: the takeover was never exercised")
	}
	t.Logf("%d rounds, %d kills, each cutting one attempt of each of %v at each of %v: %d attempts cut, %d per point and variant, "+
		"and %d recoveries cut again; %d takeovers waited for a lease; %s",
		total+1, total, sc.variants, cut, len(all), total, seconds, held, time.Since(start).Round(time.Millisecond))
	return dir, all
}

// want is what a turn cut at a point must come to.
type want struct {
	// ended lists the outcomes of the attempt's ended records, in order;
	// a "*" suffix marks a reconciled one.
	ended []string
	// effects in the journal, calls of the capability (or tool).
	effects, calls int
	// unconfirmed: the turn ends in the error report saying the change may
	// or may not have happened.
	unconfirmed bool
	// rerun: an idempotent attempt in doubt that was called again. Only
	// its last ended record is checked here (confirmed); whether the cut
	// call gets an ended record of its own is TestCutIdempotentAttemptHasItsEnd's.
	rerun bool
}

// expected is the outcome of a turn of variant cut at point:
//   - before the started record, nothing happened: the attempt runs once;
//   - during the call (before or after the effect), an attempt in doubt is
//     reconciled: by readback (applied → confirmed, unchanged → not applied
//     and run once more), by the capability's key lookup, or not at all
//     (unconfirmed, never called again); an idempotent one is called again
//     with the same key and deduplicates;
//   - after the ended record, the recorded outcome is replayed.
//
// A turn cut again while its attempt ran once more (Point2) adds what that
// second cut leaves to settle.
func expected(s turnSpec) want {
	switch s.Point {
	case pointBeforeStart:
		return want{ended: []string{"confirmed"}, effects: 1, calls: 1}
	case pointAfterEnd:
		return want{ended: []string{"confirmed"}, effects: 1, calls: 1}
	}
	applied := 0
	if s.Point == pointAfterEffect {
		applied = 1
	}
	switch s.Variant {
	case variantReadback, variantReconcile:
		if s.Point == pointAfterEffect {
			return want{ended: []string{"confirmed*"}, effects: 1, calls: 1}
		}
		// Found not applied, and run again: as a turn cut at Point2.
		switch s.Point2 {
		case pointBeforeEffect:
			return want{ended: []string{"failed*", "failed*", "confirmed"}, effects: 1, calls: 3}
		case pointAfterEffect:
			return want{ended: []string{"failed*", "confirmed*"}, effects: 1, calls: 2}
		}
		return want{ended: []string{"failed*", "confirmed"}, effects: 1, calls: 2}
	case variantBlind, variantMCPOnce:
		return want{ended: []string{"unconfirmed*"}, effects: applied, calls: 1, unconfirmed: true}
	case variantIdempotent, variantMCPIdem:
		calls := 2
		if s.Point2 == pointBeforeEffect || s.Point2 == pointAfterEffect {
			calls = 3 // the second call was cut too, and runs a third time
		}
		return want{ended: []string{"confirmed"}, effects: 1, calls: calls, rerun: true}
	}
	panic("unknown variant " + s.Variant)
}

// checkTurns checks every turn of specs, recovered by the last child.
func checkTurns(t *testing.T, sc scenario, dir string, specs []turnSpec) {
	t.Helper()
	if len(specs) == 0 {
		return
	}
	store, closeStore := sc.open(t)
	defer closeStore()
	journal, err := readLines(filepath.Join(dir, "journal.log"))
	if err != nil {
		t.Fatal(err)
	}
	calls, err := readLines(filepath.Join(dir, "calls.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		checkTurn(t, store, s, journal, calls)
	}
}

func checkTurn(t *testing.T, store leasingStore, s turnSpec, journal, calls []entry) {
	t.Helper()
	ctx := context.Background()
	th, target := threadOf(s.N), targetOf(s.N)
	w := expected(s)
	what := fmt.Sprintf("%s (%s cut %s)", th, s.Variant, s.Point)
	if s.Point2 != "" {
		what = fmt.Sprintf("%s (%s cut %s, then %s)", th, s.Variant, s.Point, s.Point2)
	}

	count := func(lines []entry) (n int) {
		for _, e := range lines {
			if e.Target == target {
				n++
			}
		}
		return n
	}
	if got := count(journal); got != w.effects {
		t.Errorf("%s: %d effects in the journal, want %d", what, got, w.effects)
	}
	if got := count(calls); got != w.calls {
		t.Errorf("%s: called %d times, want %d", what, got, w.calls)
	}

	recs, err := agent.ListAudit(ctx, store, agent.AuditFilter{Thread: th, Forward: true})
	if err != nil {
		t.Fatalf("%s: audit: %v", what, err)
	}
	events := map[string]int{}
	var ended []string
	var keys []string
	for _, r := range recs {
		events[r.Event]++
		if r.IdempotencyKey != "" && !slices.Contains(keys, r.IdempotencyKey) && (r.Event == agent.AuditStarted || r.Event == agent.AuditEnded) {
			keys = append(keys, r.IdempotencyKey)
		}
		if r.Event == agent.AuditEnded {
			o := string(r.Outcome)
			if r.Reconciled {
				o += "*"
			}
			ended = append(ended, o)
		}
	}
	var trail []string
	last := ""
	for _, r := range recs {
		trail = append(trail, r.Event+":"+string(r.Outcome))
		if r.Event == agent.AuditStarted || r.Event == agent.AuditEnded {
			last = r.Event
		}
	}
	if last != agent.AuditEnded {
		t.Errorf("%s: the attempt's last record is %q, want ended (audit %v)", what, last, trail)
	}
	if events[agent.AuditAsked] != 1 || events[agent.AuditApproved] != 1 || events[agent.AuditRefused] != 0 || events[agent.AuditRejected] != 0 {
		t.Errorf("%s: audit %v; want asked and approved once each, nothing refused or rejected", what, trail)
	}
	if w.rerun && len(ended) > 0 {
		ended = ended[len(ended)-1:]
	}
	if !slices.Equal(ended, w.ended) {
		t.Errorf("%s: ended outcomes %v, want %v (audit %v)", what, ended, w.ended, trail)
	}
	if len(keys) != 1 {
		t.Errorf("%s: the attempts ran under keys %v, want one key", what, keys)
	}
	if got := events[agent.AuditStarted]; got != w.calls {
		t.Errorf("%s: %d started records for %d calls (audit %v)", what, got, w.calls, trail)
	}

	st, status := finalState(t, store, th)
	if status != graph.StatusDone || !st.Turn.Done {
		t.Errorf("%s: status %s, turn done %v; want a finished turn", what, status, st.Turn.Done)
		return
	}
	var msgs []state.Message
	for _, m := range st.Messages {
		if m.Role == state.RoleAssistant {
			msgs = append(msgs, m)
		}
	}
	if len(msgs) != 1 {
		t.Errorf("%s: %d assistant messages, want 1: %+v", what, len(msgs), msgs)
		return
	}
	m := msgs[0]
	switch {
	case w.unconfirmed && (m.Kind != state.KindErrorReport || !strings.Contains(m.Content, "may or may not have been carried out")):
		t.Errorf("%s: the user was told (%s) %q; want an error report saying the change may or may not have been carried out", what, m.Kind, m.Content)
	case !w.unconfirmed && m.Kind != state.KindAnswer:
		t.Errorf("%s: the user was told (%s) %q; want an answer", what, m.Kind, m.Content)
	}
	if w.unconfirmed {
		if e := st.Turn.Control.Error; e == nil || e.Classification.Kind != string(capabilities.OutcomeUnconfirmed) {
			t.Errorf("%s: the turn's error is %+v, want kind unconfirmed", what, e)
		}
	}
}

// finalState reads a thread's latest checkpoint.
func finalState(t *testing.T, store leasingStore, th string) (state.State, graph.Status) {
	t.Helper()
	tu, err := store.Get(context.Background(), th, uuid.Nil)
	if err != nil {
		t.Fatalf("%s: %v", th, err)
	}
	var st state.State
	if err := json.Unmarshal(tu.Checkpoint.State, &st); err != nil {
		t.Fatalf("%s: decode state: %v", th, err)
	}
	return st, graph.StatusOf(tu)
}

// checkJournal: across every round, no idempotency key has two effects,
// and no target (one per turn, so one per step) more than one.
func checkJournal(t *testing.T, dir string, specs []turnSpec) {
	t.Helper()
	journal, err := readLines(filepath.Join(dir, "journal.log"))
	if err != nil {
		t.Fatal(err)
	}
	byKey, byTarget := map[string]int{}, map[string]int{}
	for _, e := range journal {
		if e.Key != "" {
			byKey[e.Key]++
		}
		byTarget[e.Target]++
	}
	for k, n := range byKey {
		if n > 1 {
			t.Errorf("idempotency key %s: %d effects in the journal", k, n)
		}
	}
	for tg, n := range byTarget {
		if n > 1 {
			t.Errorf("%s: %d effects in the journal", tg, n)
		}
	}
	if len(specs) == 0 {
		t.Error("no turns ran")
	}
}

func sqliteScenario(t *testing.T, variants []string) scenario {
	path := filepath.Join(t.TempDir(), "capgraph.db")
	return scenario{
		env:      []string{envSQLite + "=" + path},
		variants: variants,
		open: func(t *testing.T) (leasingStore, func()) {
			s, err := sqlite.New(sqlite.Config{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			return s, func() { s.Close() }
		},
	}
}

// pgScenario makes a schema of the test's own, dropped when it ends.
func pgScenario(t *testing.T, variants []string) scenario {
	dsn := pgtest.DSN(t)
	schema := fmt.Sprintf("effectcrash_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	open := func(t *testing.T) (leasingStore, func()) {
		s, err := postgres.New(context.Background(), postgres.Config{DSN: dsn, Schema: schema, MaxConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		return s, func() { s.Close() }
	}
	_, closeStore := open(t) // creates the schema
	closeStore()
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Error(err)
		}
	})
	ttl := pgLeaseTTL
	if v := os.Getenv(envLeaseTTL); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive duration", envLeaseTTL, v)
		}
		ttl = d
	}
	return scenario{
		env:      []string{envPGDSN + "=" + dsn, envPGSchema + "=" + schema},
		variants: variants,
		open:     open,
		takeover: true,
		leaseTTL: ttl,
	}
}

var allVariants = append(slices.Clone(journalVariants), mcpVariants...)

// lanes: the rounds run in this many independent deployments (an SQLite
// file, or a PostgreSQL schema, each) at once, sharing the rounds, so that
// one lane's child works while another's waits for the disk or for a
// killed replica's leases.
const lanes = 2

// inLanes runs the rounds in lanes, each on the store open makes.
func inLanes(t *testing.T, open func(t *testing.T) scenario) {
	total := rounds(t)
	for lane := range lanes {
		n := total / lanes
		if lane < total%lanes {
			n++
		}
		if n == 0 {
			continue
		}
		// The lanes alternate the checkpoint durability modes: every
		// promise holds in both (docs/reliability.md).
		mode := graph.Durabilities[lane%len(graph.Durabilities)]
		t.Run(fmt.Sprintf("lane%d-%s", lane+1, mode), func(t *testing.T) {
			t.Parallel()
			sc := open(t)
			sc.rounds = n
			sc.env = append(slices.Clone(sc.env), envDurability+"="+string(mode))
			runScenario(t, sc)
		})
	}
}

// TestKill9DuringEffects: one process on SQLite, restarted after every
// kill, recovering the cut turns as it starts.
func TestKill9DuringEffects(t *testing.T) {
	inLanes(t, func(t *testing.T) scenario { return sqliteScenario(t, allVariants) })
}

// TestKill9DuringEffectsReplicaTakeover: replicas on PostgreSQL; the one
// killed leaves its turns leased, and the next takes them over once the
// leases expire, through the agent's normal claim of unfinished runs
// (agent.ClaimUnfinished, which RecoverRuns and the server's recovery use).
func TestKill9DuringEffectsReplicaTakeover(t *testing.T) {
	inLanes(t, func(t *testing.T) scenario { return pgScenario(t, allVariants) })
}
