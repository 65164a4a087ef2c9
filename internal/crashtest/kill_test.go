package crashtest

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

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/internal/killtest"
)

const (
	wantKills     = 20
	maxRounds     = 80
	liveThreads   = 3 // threads a child works on at once
	childDeadline = 20 * time.Second
)

type ack = killtest.Ack

// childResult is what one child run printed and how it ended.
type childResult struct {
	*killtest.Report
	killed bool
	// inWait: when the kill was sent, some thread had announced a durable
	// wait and not yet acknowledged the checkpoint after it.
	inWait bool
	exit   error
}

// runChild starts a child on threads; when kill is true it SIGKILLs it at a
// random moment: usually a random 0–80 ms after its first acknowledged
// checkpoint (mid-step, mid-write or mid-wait), sometimes 0–40 ms after start
// (while it opens the store or writes the first checkpoint).
func runChild(t *testing.T, dir string, round int, threads []string, kill bool) childResult {
	t.Helper()
	res := childResult{Report: killtest.NewReport(round, "WAIT")}
	r := killtest.Run(t, killtest.Child{
		Name: fmt.Sprintf("round %d", round),
		Env: []string{
			envChild + "=1",
			envDB + "=" + filepath.Join(dir, "cp.db"),
			envMarker + "=" + filepath.Join(dir, "marker.log"),
			envThreads + "=" + strings.Join(threads, ","),
			envRound + "=" + strconv.Itoa(round),
		},
		Kill:         kill,
		EarlyOneIn:   5,
		EarlyWithin:  40 * time.Millisecond,
		AfterTrigger: 80 * time.Millisecond,
		Deadline:     childDeadline,
		Line:         res.Line,
		BeforeKill:   func() { res.inWait = res.Pending("WAIT") },
	})
	res.killed, res.exit = r.Killed, r.Exit
	return res
}

func TestKill9Resume(t *testing.T) {
	start := time.Now()
	dir := t.TempDir()
	var (
		allThreads []string
		pending    []string // started or to start, not yet DONE
		done       = map[string]bool{}
		acks       []ack
		kills      int
		waitKills  int
		round      int
	)
	next := func() string {
		th := fmt.Sprintf("t%03d", len(allThreads))
		allThreads = append(allThreads, th)
		return th
	}
	record := func(res childResult) {
		acks = append(acks, res.Acks...)
		for _, th := range res.Done {
			done[th] = true
		}
		pending = slices.DeleteFunc(pending, func(th string) bool { return done[th] })
		for _, e := range res.Errs {
			t.Errorf("round %d: child said: %s", round, e)
		}
	}

	for kills < wantKills && round < maxRounds {
		round++
		for len(pending) < liveThreads {
			pending = append(pending, next())
		}
		res := runChild(t, dir, round, slices.Clone(pending), true)
		record(res)
		if res.killed {
			kills++
			if res.inWait {
				waitKills++
			}
		} else if res.exit != nil {
			t.Fatalf("round %d: child failed: %v", round, res.exit)
		}
		checkAcked(t, dir, acks) // after every kill: nothing acknowledged is missing
		if t.Failed() {
			t.FailNow()
		}
	}
	if kills < wantKills {
		t.Fatalf("only %d kills landed in %d rounds; want %d", kills, round, wantKills)
	}
	// Final round without a kill finishes every run.
	round++
	if len(pending) > 0 {
		res := runChild(t, dir, round, slices.Clone(pending), false)
		record(res)
		if res.exit != nil {
			t.Fatalf("final round: child failed: %v", res.exit)
		}
	}
	for _, th := range allThreads {
		if !done[th] {
			t.Errorf("thread %s never finished", th)
		}
	}
	checkAcked(t, dir, acks)
	checkFinalStates(t, dir, allThreads)
	reruns := checkNoCompletedStepReran(t, dir, acks)
	t.Logf("%d rounds, %d kills (%d while a run waited), %d threads, %d acknowledged checkpoints, %d re-runs of in-flight steps, %s",
		round, kills, waitKills, len(allThreads), len(acks), reruns, time.Since(start).Round(time.Millisecond))
}

func checkAcked(t *testing.T, dir string, acks []ack) {
	t.Helper()
	s, err := sqlite.New(sqlite.Config{Path: filepath.Join(dir, "cp.db")})
	if err != nil {
		t.Fatalf("reopen store: %v", err)
	}
	defer s.Close()
	killtest.CheckAcked(t, s, acks)
}

func checkFinalStates(t *testing.T, dir string, threads []string) {
	t.Helper()
	s, err := sqlite.New(sqlite.Config{Path: filepath.Join(dir, "cp.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var want []string
	for _, nodes := range stepNodes[1:] {
		want = append(want, nodes...)
	}
	for _, th := range threads {
		tu, err := s.Get(context.Background(), th, uuid.Nil)
		if err != nil {
			t.Errorf("%s: %v", th, err)
			continue
		}
		if st := graph.StatusOf(tu); st != graph.StatusDone {
			t.Errorf("%s: status %s, want done", th, st)
		}
		var rs runState
		if err := json.Unmarshal(tu.Checkpoint.State, &rs); err != nil {
			t.Errorf("%s: state: %v", th, err)
			continue
		}
		// Every node's update applied exactly once, in step order.
		if !slices.Equal(rs.Done, want) {
			t.Errorf("%s: applied updates %v, want %v", th, rs.Done, want)
		}
	}
}

// checkNoCompletedStepReran reads the marker file: a node of step k that ran
// in a round after the round that acknowledged step k's checkpoint is a
// completed step running again. It returns how many node executions repeated
// an earlier one (in-flight steps cut by a kill: allowed, at-least-once).
func checkNoCompletedStepReran(t *testing.T, dir string, acks []ack) int {
	t.Helper()
	stepOf := map[string]int{}
	for k, nodes := range stepNodes {
		for _, n := range nodes {
			stepOf[n] = k
		}
	}
	ackRound := map[string]int{} // "thread/step" → round of its first acknowledgement
	ackID := map[string]uuid.UUID{}
	for _, a := range acks {
		key := fmt.Sprint(a.Thread, "/", a.Step)
		if id, ok := ackID[key]; ok {
			// A step is checkpointed once; a second checkpoint for it means it ran again.
			t.Errorf("%s step %d acknowledged twice: %s (round %d) and %s (round %d)", a.Thread, a.Step, id, ackRound[key], a.ID, a.Round)
			continue
		}
		ackRound[key], ackID[key] = a.Round, a.ID
	}
	b, err := os.ReadFile(filepath.Join(dir, "marker.log"))
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	reruns := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Errorf("marker line %q", line)
			continue
		}
		thread, node := f[0], f[1]
		round, err := strconv.Atoi(f[2])
		if err != nil {
			t.Errorf("marker line %q", line)
			continue
		}
		if runs[thread+"/"+node]++; runs[thread+"/"+node] > 1 {
			reruns++
		}
		key := fmt.Sprint(thread, "/", stepOf[node])
		if r, ok := ackRound[key]; ok && round > r {
			t.Errorf("%s: node %s ran in round %d although its step's checkpoint was acknowledged in round %d", thread, node, round, r)
		}
	}
	return reruns
}
