package answercrash

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/internal/killtest"
	"github.com/capgraph/capgraph/runstore"
)

// threads per round: thirty wait for the approval of one write (ten each
// over the native API, Chat Completions and Responses) and ten for two
// writes that run in parallel (native API); all fifty answers are sent at
// once.
const threads = 40

// envRounds sets the number of rounds (default 3, a few seconds each); a
// soak runs more: CAPGRAPH_ANSWERCRASH_ROUNDS=50.
const envRounds = "CAPGRAPH_ANSWERCRASH_ROUNDS"

func TestMain(m *testing.M) {
	if os.Getenv(envChild) == "1" {
		os.Exit(childMain())
	}
	os.Exit(m.Run())
}

// thread is one conversation waiting for approval, and what became of
// its answers.
type thread struct {
	n     int
	proto string // native, chat, responses, parallel (native, two approvals)
	// How the answers name their approvals: the native thread and approval
	// ids, the chat transcript (its last assistant message holds the
	// token), the response id.
	id         string
	chat       []map[string]any
	responseID string
	answers    []*answer
}

// answer is one approval of a thread and its answer.
type answer struct {
	write      write
	approvalID string // native
	// acked: the answer was acknowledged (a 2xx status line).
	acked bool
}

func (th *thread) String() string { return fmt.Sprintf("%s thread %d", th.proto, th.n) }

func rounds(t *testing.T) int {
	n := 3
	if v := os.Getenv(envRounds); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number of rounds", envRounds, v)
		}
	}
	return n
}

// TestKill9WhileAnswering: forty threads wait for approval (ten of them
// for two parallel writes); fifty answers (native API, Chat Completions,
// Responses) arrive at once, a parallel thread's second answer queued
// behind its first; SIGKILL after a random quarter to five eighths of
// them were acknowledged; a server started again on the same SQLite file
// recovers (RecoverAllRuns, as `capgraph serve` does). Every acknowledged
// answer is carried out without asking again, and every approved write
// happens exactly once (the answers the kill cut off unacknowledged are
// given again afterwards, as a human would).
func TestKill9WhileAnswering(t *testing.T) {
	start := time.Now()
	var acked, total int
	for round := 1; round <= rounds(t); round++ {
		dir := t.TempDir()
		db, journalPath := filepath.Join(dir, "capgraph.db"), filepath.Join(dir, "journal.txt")
		ths, killed := killRound(t, round, db, journalPath)
		if t.Failed() {
			return
		}
		if !killed {
			t.Fatalf("round %d: the kill did not land", round)
		}
		a, n := checkRound(t, round, db, journalPath, ths)
		acked += a
		total += n
	}
	t.Logf("%d rounds, %d answers, %d acknowledged before the kill: no acknowledged answer lost or asked again, every write once; %s",
		rounds(t), total, acked, time.Since(start).Round(time.Millisecond))
}

// killRound starts the child, makes the threads wait for approval, sends
// every answer at once and kills the child after a random number of
// acknowledgements.
func killRound(t *testing.T, round int, db, journalPath string) ([]*thread, bool) {
	t.Helper()
	var ths []*thread
	answers := 0
	for i := range threads {
		th := &thread{n: i, proto: []string{"native", "chat", "responses", "parallel"}[i%4]}
		th.answers = []*answer{{write: write{"Q1", float64(100 + i)}}}
		if th.proto == "parallel" {
			th.answers = append(th.answers, &answer{write: write{"Q2", float64(200 + i)}})
		}
		answers += len(th.answers)
		ths = append(ths, th)
	}
	var (
		wg     sync.WaitGroup
		acks   int
		killAt = answers/4 + rand.IntN(answers*5/8-answers/4+1)
	)
	r := killtest.Run(t, killtest.Child{
		Name:         fmt.Sprintf("round %d", round),
		Env:          []string{envChild + "=1", envDB + "=" + db, envJournal + "=" + journalPath, envDurability + "=" + string(durabilityOf(round))},
		Kill:         true,
		AfterTrigger: 3 * time.Millisecond,
		Deadline:     2 * time.Minute,
		Line: func(line string) bool {
			switch {
			case strings.HasPrefix(line, "LISTEN "):
				base := "http://" + strings.TrimPrefix(line, "LISTEN ")
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := ask(base, round, ths); err != nil {
						t.Errorf("round %d: %v", round, err)
						_, _ = http.Post(base+"/test/exit", "application/json", nil)
						return
					}
					sendAnswers(base, ths, &wg)
				}()
			case line == "ACK":
				acks++
				return acks == killAt
			case strings.HasPrefix(line, "ERR"):
				t.Errorf("child: %s", line)
			}
			return false
		},
	})
	wg.Wait() // every connection ended with the child
	return ths, r.Killed
}

// post sends a JSON request; answer marks it as an approval's answer.
func post(client *http.Client, url string, body any, answer bool) (*http.Response, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+keyClient)
	req.Header.Set("Content-Type", "application/json")
	if answer {
		req.Header.Set(headerAnswer, "1")
	}
	return client.Do(req)
}

func postJSON(client *http.Client, url string, body, out any) error {
	resp, err := post(client, url, body, false)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, b)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("POST %s: %v: %s", url, err, b)
	}
	return nil
}

var tokenRE = regexp.MustCompile(`\bAP-[A-Z2-7]{8}\b`)

// ask starts every thread's turn, a few at a time, and waits until each
// asks for its approvals.
func ask(base string, round int, ths []*thread) error {
	client := &http.Client{Timeout: time.Minute}
	sem := make(chan struct{}, 8)
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for _, th := range ths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := askOne(client, base, round, th); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", th, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func askOne(client *http.Client, base string, round int, th *thread) error {
	input := fmt.Sprintf("Set the Q1 current to %g A", th.answers[0].write.value)
	if len(th.answers) == 2 {
		input += fmt.Sprintf(" and the Q2 current to %g A", th.answers[1].write.value)
	}
	switch th.proto {
	case "native", "parallel":
		th.id = fmt.Sprintf("r%d-t%d", round, th.n)
		if err := postJSON(client, base+"/api/threads", map[string]any{"id": th.id}, nil); err != nil {
			return err
		}
		resp, err := post(client, base+"/api/threads/"+th.id+"/runs", map[string]any{"input": input, "stream": true}, false)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("turn: %d %s", resp.StatusCode, b)
		}
		// The approval_required events name the approvals.
		for _, line := range strings.Split(string(b), "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || !strings.Contains(data, `"approval_required"`) {
				continue
			}
			var ev struct {
				Approval struct {
					ID     string `json:"id"`
					Action struct {
						Changes []struct {
							Target string  `json:"target"`
							Value  float64 `json:"value"`
						} `json:"changes"`
					} `json:"action"`
				} `json:"approval"`
			}
			if err := json.Unmarshal([]byte(data), &ev); err != nil || len(ev.Approval.Action.Changes) != 1 {
				return fmt.Errorf("approval event %s: %v", data, err)
			}
			ch := ev.Approval.Action.Changes[0]
			for _, a := range th.answers {
				if a.write == (write{ch.Target, ch.Value}) {
					a.approvalID = ev.Approval.ID
				}
			}
		}
		for _, a := range th.answers {
			if a.approvalID == "" {
				return fmt.Errorf("no approval asked for %s: %s", a.write, b)
			}
		}
	case "chat":
		user := map[string]any{"role": "user", "content": input}
		var out struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := postJSON(client, base+"/v1/chat/completions", map[string]any{"model": "capgraph", "messages": []any{user}}, &out); err != nil {
			return err
		}
		if len(out.Choices) != 1 || !tokenRE.MatchString(out.Choices[0].Message.Content) {
			return fmt.Errorf("no approval token in %+v", out)
		}
		th.chat = []map[string]any{user, {"role": "assistant", "content": out.Choices[0].Message.Content}, {"role": "user", "content": "yes"}}
	case "responses":
		var out struct {
			ID     string `json:"id"`
			Output []struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"output"`
		}
		if err := postJSON(client, base+"/v1/responses", map[string]any{"model": "capgraph", "input": input}, &out); err != nil {
			return err
		}
		if out.ID == "" || len(out.Output) == 0 || len(out.Output[0].Content) == 0 || !tokenRE.MatchString(out.Output[0].Content[0].Text) {
			return fmt.Errorf("no approval asked: %+v", out)
		}
		th.responseID = out.ID
	}
	return nil
}

// sendAnswers sends every answer at once, each noting whether it was
// acknowledged, and reads the answers until the kill ends them.
func sendAnswers(base string, ths []*thread, wg *sync.WaitGroup) {
	client := &http.Client{Timeout: time.Minute}
	for _, th := range ths {
		for _, a := range th.answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var (
					resp *http.Response
					err  error
				)
				switch th.proto {
				case "native", "parallel":
					resp, err = post(client, base+"/api/threads/"+th.id+"/approval", map[string]any{"approval_id": a.approvalID, "approved": true}, true)
				case "chat":
					resp, err = post(client, base+"/v1/chat/completions", map[string]any{"model": "capgraph", "stream": true, "messages": th.chat}, true)
				case "responses":
					resp, err = post(client, base+"/v1/responses", map[string]any{"model": "capgraph", "stream": true, "input": "yes", "previous_response_id": th.responseID}, true)
				}
				if err != nil {
					return
				}
				defer resp.Body.Close()
				// The status line is the acknowledgement; the answer's
				// stream may die now.
				a.acked = resp.StatusCode/100 == 2
				_, _ = io.Copy(io.Discard, resp.Body)
			}()
		}
	}
}

// durabilityOf is the checkpoint durability of a round: the rounds
// alternate the modes, as every promise holds in both (docs/reliability.md).
func durabilityOf(round int) graph.Durability {
	return graph.Durabilities[(round-1)%len(graph.Durabilities)]
}

// checkRound starts a server on the file the killed one left, recovers,
// and checks every answer: an acknowledged answer is carried out without
// asking again; an answer the kill cut off is given again; each write
// happens once. It returns the numbers of acknowledged answers and of
// answers.
func checkRound(t *testing.T, round int, db, journalPath string, ths []*thread) (acked, total int) {
	t.Helper()
	a, err := newApp(db, journalPath, durabilityOf(round))
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := a.srv.RecoverAllRuns(ctx); err != nil {
		t.Fatalf("round %d: RecoverAllRuns: %v", round, err)
	}
	// Which internal thread and approval asked for which write.
	askedRecs, err := agent.ListAudit(ctx, a.store, agent.AuditFilter{Event: agent.AuditAsked})
	if err != nil {
		t.Fatal(err)
	}
	internal := map[*thread]string{}
	approvalOf := map[write]string{}
	for _, th := range ths {
		for _, an := range th.answers {
			total++
			if an.acked {
				acked++
			}
			for _, r := range askedRecs {
				if len(r.Changes) == 1 && r.Changes[0].Target == an.write.target && r.Changes[0].Value == an.write.value {
					internal[th], approvalOf[an.write] = r.Thread, r.ApprovalID
				}
			}
			if approvalOf[an.write] == "" {
				t.Fatalf("round %d: %s: %s was never asked", round, th, an.write)
			}
		}
	}
	// The recovered runs go on in the background: wait until every thread
	// has settled — answered, or waiting for approval with no recorded
	// run left to carry out.
	settled := func(th *thread) (agent.RunStatus, bool) {
		_, status, err := a.agent.State(ctx, internal[th])
		if err != nil {
			t.Fatalf("round %d: state of %s: %v", round, th, err)
		}
		switch status {
		case agent.RunAnswered, agent.RunFailed:
			return status, true
		case agent.RunInterrupted:
			recs, err := a.store.ListRuns(ctx, runstore.Filter{Thread: internal[th],
				Status: []runstore.Status{runstore.Queued, runstore.Running}, Limit: 1})
			return status, err == nil && len(recs) == 0
		}
		return status, false
	}
	waitSettled := func() {
		progress := time.Now()
		open := ths
		for len(open) > 0 && time.Since(progress) < 20*time.Second {
			left := open[:0:0]
			for _, th := range open {
				if _, ok := settled(th); !ok {
					left = append(left, th)
				}
			}
			if len(left) < len(open) {
				progress = time.Now()
			}
			open = left
			if len(open) > 0 {
				time.Sleep(50 * time.Millisecond)
			}
		}
		for _, th := range open {
			st, _ := settled(th)
			recs, _ := a.store.ListRuns(ctx, runstore.Filter{Thread: internal[th]})
			var rs []string
			for _, r := range recs {
				rs = append(rs, fmt.Sprintf("%s/%s/%s/%s", r.Status, r.Owner, r.Error, r.Input))
			}
			pend, _ := a.agent.PendingApprovals(ctx, internal[th])
			var ps []string
			for _, p := range pend {
				ps = append(ps, p.ID)
			}
			t.Errorf("round %d: %s did not settle after the restart: %s; DEBUG records %v pending %v", round, th, st, rs, ps)
		}
	}
	waitSettled()
	// An acknowledged answer is never asked for again; an answer the kill
	// cut off before it was stored is given again now, as a human would
	// (the second of a parallel thread after the first is carried out).
	for range 2 {
		for _, th := range ths {
			status, _ := settled(th)
			switch status {
			case agent.RunAnswered:
				continue
			case agent.RunInterrupted:
			default:
				t.Errorf("round %d: %s ended %s", round, th, status)
				continue
			}
			pend, err := a.agent.PendingApprovals(ctx, internal[th])
			if err != nil || len(pend) == 0 {
				t.Fatalf("round %d: %s: pending %+v %v", round, th, pend, err)
			}
			for _, an := range th.answers {
				if an.acked && pend[0].ID == approvalOf[an.write] || len(pend) > 1 && an.acked && pend[1].ID == approvalOf[an.write] {
					t.Errorf("round %d: LOST: the answer to %s of %s was acknowledged, and after the restart its approval is pending again", round, an.write, th)
				}
			}
			for _, err := range a.agent.Resume(ctx, internal[th], agent.Answer{ApprovalID: pend[0].ID, Approved: new(true), By: "operator"}) {
				if err != nil {
					t.Errorf("round %d: answering %s again: %v", round, th, err)
				}
			}
		}
	}
	// Nobody was asked again, and each write happened once.
	askedRecs, err = agent.ListAudit(ctx, a.store, agent.AuditFilter{Event: agent.AuditAsked})
	if err != nil {
		t.Fatal(err)
	}
	asked := map[write]int{}
	for _, r := range askedRecs {
		if len(r.Changes) == 1 {
			v, _ := r.Changes[0].Value.(float64)
			asked[write{r.Changes[0].Target, v}]++
		}
	}
	written, err := a.journal.lines()
	if err != nil {
		t.Fatal(err)
	}
	reasked := 0
	for _, th := range ths {
		n := 0
		for _, an := range th.answers {
			n += asked[an.write]
			if k := len(written[an.write]); k != 1 {
				t.Errorf("round %d: WRITTEN %d TIMES: %s of %s (answer acknowledged %v): %v", round, k, an.write, th, an.acked, written[an.write])
			}
		}
		if len(th.answers) == 1 && n != 1 {
			t.Errorf("round %d: ASKED %d TIMES: %s (answer acknowledged %v)", round, n, th, th.answers[0].acked)
		}
		// A parallel thread's other approval is asked once more when the
		// first answer is carried out (the agent re-enters both steps with
		// it), and again if the kill cut that step: the agent's doing, not
		// an answer lost (the LOST check above), so it is counted here.
		if len(th.answers) == 2 {
			reasked += n - 2
		}
	}
	t.Logf("round %d: %d acknowledged of %d answers; the parallel threads' other approval was asked %d more times", round, acked, total, reasked)
	return acked, total
}
