package agentcrash

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

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/internal/killtest"
	"github.com/capgraph/capgraph/state"
)

const (
	wantKills     = 20
	maxRounds     = 90
	liveThreads   = 3
	childDeadline = 20 * time.Second
)

type ack = killtest.Ack

type childResult struct {
	*killtest.Report
	killed bool
	// What some thread was doing when the kill was sent.
	inWait, inApproval bool
	exit               error
}

// runChild runs one child on threads; with kill it SIGKILLs the child at a
// random moment, usually 0–100 ms after its first acknowledged checkpoint,
// sometimes 0–30 ms after start.
func runChild(t *testing.T, dir string, round int, threads []string, kill bool) childResult {
	t.Helper()
	res := childResult{Report: killtest.NewReport(round, "WAIT", "ASK")}
	r := killtest.Run(t, killtest.Child{
		Name: fmt.Sprintf("round %d", round),
		Env: []string{
			envChild + "=1",
			envDB + "=" + filepath.Join(dir, "cp.db"),
			envMarker + "=" + filepath.Join(dir, "marker.log"),
			envAnswers + "=" + filepath.Join(dir, "answers.txt"),
			envThreads + "=" + strings.Join(threads, ","),
			envRound + "=" + strconv.Itoa(round),
		},
		Kill:         kill,
		EarlyOneIn:   6,
		EarlyWithin:  30 * time.Millisecond,
		AfterTrigger: 100 * time.Millisecond,
		Deadline:     childDeadline,
		Line:         res.Line,
		BeforeKill:   func() { res.inWait, res.inApproval = res.Pending("WAIT"), res.Pending("ASK") },
	})
	res.killed, res.exit = r.Killed, r.Exit
	return res
}

// rejects: every fourth thread's approval is answered no.
func rejects(thread string) bool {
	n, _ := strconv.Atoi(strings.TrimPrefix(thread, "t"))
	return n%4 == 3
}

// TestKill9AgentRuns kills a child running agent turns (steps, a durable
// retry wait, an approval) at random moments, answers approvals between
// restarts, and checks that every turn finishes, that no acknowledged
// checkpoint is lost and that no completed step runs again.
func TestKill9AgentRuns(t *testing.T) {
	start := time.Now()
	dir := t.TempDir()
	var (
		all                                []string
		pending                            []string
		done                               = map[string]bool{}
		acks                               []ack
		kills, waitKills, approvalKills, r int
	)
	record := func(res childResult) {
		acks = append(acks, res.Acks...)
		for _, th := range res.Done {
			done[th] = true
		}
		pending = slices.DeleteFunc(pending, func(th string) bool { return done[th] })
		for _, e := range res.Errs {
			t.Errorf("round %d: child said: %s", r, e)
		}
	}
	// Go on until the kills also covered a retry wait and an approval wait.
	for (kills < wantKills || waitKills == 0 || approvalKills == 0) && r < maxRounds {
		r++
		for len(pending) < liveThreads {
			th := fmt.Sprintf("t%03d", len(all))
			all = append(all, th)
			pending = append(pending, th)
		}
		res := runChild(t, dir, r, slices.Clone(pending), true)
		record(res)
		if res.killed {
			kills++
			if res.inWait {
				waitKills++
			}
			if res.inApproval {
				approvalKills++
			}
		} else if res.exit != nil {
			t.Fatalf("round %d: child failed: %v", r, res.exit)
		}
		answerApprovals(t, dir, pending)
		checkAcked(t, dir, acks)
		if t.Failed() {
			t.FailNow()
		}
	}
	if kills < wantKills || waitKills == 0 || approvalKills == 0 {
		t.Fatalf("%d kills landed in %d rounds (%d during a retry wait, %d while a run waited for approval); want %d, including each kind",
			kills, r, waitKills, approvalKills, wantKills)
	}
	// Rounds without kills finish everything (a run may stop at its
	// approval once more before the answer is given).
	for i := 0; len(pending) > 0 && i < 3; i++ {
		r++
		res := runChild(t, dir, r, slices.Clone(pending), false)
		record(res)
		if res.exit != nil {
			t.Fatalf("final round %d: child failed: %v", r, res.exit)
		}
		answerApprovals(t, dir, pending)
	}
	for _, th := range all {
		if !done[th] {
			t.Errorf("thread %s never finished", th)
		}
	}
	checkAcked(t, dir, acks)
	checkFinal(t, dir, all)
	reruns := checkEffects(t, dir, acks)
	t.Logf("%d rounds, %d kills (%d during a retry wait, %d while a run waited for approval), %d threads, %d acknowledged checkpoints, %d repeated in-flight executions, %s",
		r, kills, waitKills, approvalKills, len(all), len(acks), reruns, time.Since(start).Round(time.Millisecond))
}

// answerApprovals opens the store as a second process would and answers
// every pending approval of threads by appending to the answers file.
func answerApprovals(t *testing.T, dir string, threads []string) {
	t.Helper()
	a, closeStore := openAgent(t, dir)
	defer closeStore()
	f, err := os.OpenFile(filepath.Join(dir, "answers.txt"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, th := range threads {
		pend, err := a.PendingApprovals(context.Background(), th)
		if err != nil {
			continue // no turn yet
		}
		for _, ap := range pend {
			if ap.Kind != state.ApprovalStep || ap.Capability != "write_x" {
				t.Errorf("%s: unexpected approval %+v", th, ap)
			}
			word := "yes"
			if rejects(th) {
				word = "no"
			}
			fmt.Fprintf(f, "%s %s %s\n", th, ap.ID, word)
		}
	}
}

func openAgent(t *testing.T, dir string) (*agent.Agent, func()) {
	t.Helper()
	s, err := sqlite.New(sqlite.Config{Path: filepath.Join(dir, "cp.db")})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	a, err := newAgent(s, os.Stderr, "parent")
	if err != nil {
		t.Fatal(err)
	}
	return a, func() { s.Close() }
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

// checkFinal: every turn ended with its one message, an answer or (for the
// threads whose approval was rejected) the rejection.
func checkFinal(t *testing.T, dir string, threads []string) {
	t.Helper()
	a, closeStore := openAgent(t, dir)
	defer closeStore()
	for _, th := range threads {
		s, st, err := a.State(context.Background(), th)
		if err != nil {
			t.Errorf("%s: %v", th, err)
			continue
		}
		want := state.KindAnswer
		if rejects(th) {
			want = state.KindRejected
		}
		var msgs []state.Message
		for _, m := range s.Messages {
			if m.Role == state.RoleAssistant {
				msgs = append(msgs, m)
			}
		}
		if st != agent.RunAnswered || !s.Turn.Done || len(msgs) != 1 || msgs[0].Kind != want {
			t.Errorf("%s: status %s, done %v, messages %+v; want one %s", th, st, s.Turn.Done, msgs, want)
		}
		checkArtifacts(t, th, s)
	}
}

// checkArtifacts: the artifacts of the steps that ran are in the finished
// turn's state, whole: read_a's time series (step 0) always, read_c's table
// (step 3) when the write was approved.
func checkArtifacts(t *testing.T, th string, s state.State) {
	t.Helper()
	byID := map[string]capabilities.Artifact{}
	for _, r := range s.Turn.Results {
		for _, a := range r.Artifacts {
			byID[a.ID] = a
		}
	}
	ts, ok := byID[agent.ArtifactID(1, 1, 0, 0)]
	if !ok || ts.TimeSeries == nil || len(ts.TimeSeries.Series) != 1 || len(ts.TimeSeries.Series[0].Values) != artifactPoints ||
		ts.TimeSeries.Series[0].Values[artifactPoints-1] != float64(artifactPoints-1)/2 {
		t.Errorf("%s: read_a's time series is not in the final state whole: %+v", th, ts)
	}
	if _, ok := byID[agent.ArtifactID(1, 1, 3, 0)]; ok == rejects(th) {
		t.Errorf("%s: read_c's table present %v, write rejected %v", th, ok, rejects(th))
	}
}

// checkEffects reads the marker file (one line per execution that took
// effect) against the acknowledged checkpoints: an execution of a step in a
// round after a checkpoint acknowledging the step as done is a completed
// step running again. Repeats of an in-flight step (cut by a kill before its
// checkpoint) are allowed and counted; they carry the same idempotency key.
// Rejected writes never take effect.
func checkEffects(t *testing.T, dir string, acks []ack) int {
	t.Helper()
	s, err := sqlite.New(sqlite.Config{Path: filepath.Join(dir, "cp.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	doneRound := map[string]int{} // "thread/turn/plan/step" → first round a checkpoint showed it done
	for _, a := range acks {
		tu, err := s.Get(context.Background(), a.Thread, a.ID)
		if err != nil {
			continue // reported by checkAcked
		}
		var st state.State
		if err := json.Unmarshal(tu.Checkpoint.State, &st); err != nil {
			t.Fatalf("%s: decode state: %v", a.ID, err)
		}
		if st.Turn.Plan == nil {
			continue
		}
		for i, ps := range st.Turn.Plan.Steps {
			if ps.Status != state.StepDone {
				continue
			}
			key := fmt.Sprintf("%s/%d/%d/%d", a.Thread, st.Turn.Number, st.Turn.Plan.Number, i)
			if r, ok := doneRound[key]; !ok || a.Round < r {
				doneRound[key] = a.Round
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "marker.log"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{} // step → idempotency key of its executions
	reruns := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 5 {
			t.Errorf("marker line %q", line)
			continue
		}
		thread, capability, key, approved := f[0], f[1], f[2], f[4] == "true"
		round, err := strconv.Atoi(f[3])
		if err != nil {
			t.Errorf("marker line %q", line)
			continue
		}
		parts := strings.Split(key, "/") // thread/turn/plan/step/attempt
		if len(parts) != 5 {
			t.Errorf("idempotency key %q", key)
			continue
		}
		stepKey := strings.Join(parts[:4], "/")
		if r, ok := doneRound[stepKey]; ok && round > r {
			t.Errorf("%s: %s (%s) took effect in round %d although a checkpoint of round %d had the step done", thread, capability, key, round, r)
		}
		if prev, ok := seen[stepKey]; ok {
			reruns++
			if prev != key {
				t.Errorf("%s: %s took effect under two idempotency keys %s and %s", thread, capability, prev, key)
			}
		}
		seen[stepKey] = key
		if capability == "write_x" && (rejects(thread) || !approved) {
			t.Errorf("%s: write_x took effect without an approval (%s)", thread, line)
		}
	}
	return reruns
}
