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
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/internal/killtest"
)

// threads waiting for approval per round; their answers are sent at once.
const threads = 40

// envRounds sets the number of rounds (default 3, about 10 s each on a
// busy machine); a soak runs more: CAPGRAPH_ANSWERCRASH_ROUNDS=50.
const envRounds = "CAPGRAPH_ANSWERCRASH_ROUNDS"

func TestMain(m *testing.M) {
	if os.Getenv(envChild) == "1" {
		os.Exit(childMain())
	}
	os.Exit(m.Run())
}

// approval is one thread waiting for the approval of its write, and what
// became of its answer.
type approval struct {
	n     int
	proto string  // native, chat, responses
	value float64 // the value the thread writes: unique, names it in the journal and audit log
	// How the answer names the approval: the native thread and approval id,
	// the chat transcript (its last assistant message holds the token), the
	// response id.
	thread, approvalID string
	chat               []map[string]any
	responseID         string
	// acked: the answer was acknowledged (a 2xx status line).
	acked bool
}

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

// TestKill9WhileAnswering: forty threads wait for the approval of a write;
// forty answers (native API, Chat Completions, Responses) arrive at once;
// SIGKILL after a random 10–25 of them were acknowledged; a server started
// again on the same SQLite file recovers (RecoverAllRuns, as `capgraph
// serve` does). Every acknowledged answer is carried out, nobody is asked
// a second time, and every approved write happens exactly once (the
// answers the kill cut off unacknowledged are given again afterwards).
func TestKill9WhileAnswering(t *testing.T) {
	start := time.Now()
	var acked, total int
	for round := 1; round <= rounds(t); round++ {
		dir := t.TempDir()
		db, journalPath := filepath.Join(dir, "capgraph.db"), filepath.Join(dir, "journal.txt")
		aps, killed := killRound(t, round, db, journalPath)
		if t.Failed() {
			return
		}
		if !killed {
			t.Fatalf("round %d: the kill did not land", round)
		}
		a := checkRound(t, round, db, journalPath, aps)
		acked += a
		total += len(aps)
	}
	t.Logf("%d rounds, %d answers, %d acknowledged before the kill: none lost, nobody asked twice, every write once; %s",
		rounds(t), total, acked, time.Since(start).Round(time.Millisecond))
}

// killRound starts the child, makes the threads wait for approval, sends
// every answer at once and kills the child after a random number of
// acknowledgements.
func killRound(t *testing.T, round int, db, journalPath string) ([]*approval, bool) {
	t.Helper()
	var (
		aps    []*approval
		wg     sync.WaitGroup
		acks   int
		killAt = threads/4 + rand.IntN(threads*5/8-threads/4+1) // 10–25 of 40
	)
	r := killtest.Run(t, killtest.Child{
		Name:         fmt.Sprintf("round %d", round),
		Env:          []string{envChild + "=1", envDB + "=" + db, envJournal + "=" + journalPath},
		Kill:         true,
		AfterTrigger: 3 * time.Millisecond,
		Deadline:     2 * time.Minute,
		Line: func(line string) bool {
			switch {
			case strings.HasPrefix(line, "LISTEN "):
				base := "http://" + strings.TrimPrefix(line, "LISTEN ")
				for i := range threads {
					aps = append(aps, &approval{n: i, proto: []string{"native", "chat", "responses"}[i%3], value: float64(100 + i)})
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := ask(base, round, aps); err != nil {
						t.Errorf("round %d: %v", round, err)
						_, _ = http.Post(base+"/test/exit", "application/json", nil)
						return
					}
					answer(base, aps, &wg)
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
	return aps, r.Killed
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
// asks for its approval.
func ask(base string, round int, aps []*approval) error {
	client := &http.Client{Timeout: time.Minute}
	sem := make(chan struct{}, 8)
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for _, ap := range aps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := askOne(client, base, round, ap); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s thread %d: %w", ap.proto, ap.n, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func askOne(client *http.Client, base string, round int, ap *approval) error {
	input := fmt.Sprintf("Set the Q1 current to %g A", ap.value)
	switch ap.proto {
	case "native":
		ap.thread = fmt.Sprintf("r%d-t%d", round, ap.n)
		if err := postJSON(client, base+"/api/threads", map[string]any{"id": ap.thread}, nil); err != nil {
			return err
		}
		resp, err := post(client, base+"/api/threads/"+ap.thread+"/runs", map[string]any{"input": input, "stream": true}, false)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "approval_required") {
			return fmt.Errorf("turn: %d %s", resp.StatusCode, b)
		}
		req, _ := http.NewRequest("GET", base+"/api/threads/"+ap.thread+"/plan", nil)
		req.Header.Set("Authorization", "Bearer "+keyClient)
		resp, err = client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var plan struct {
			Pending *struct {
				ID string `json:"id"`
			} `json:"pending_approval"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&plan); err != nil || plan.Pending == nil {
			return fmt.Errorf("no pending approval (%v)", err)
		}
		ap.approvalID = plan.Pending.ID
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
		ap.chat = []map[string]any{user, {"role": "assistant", "content": out.Choices[0].Message.Content}, {"role": "user", "content": "yes"}}
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
		ap.responseID = out.ID
	}
	return nil
}

// answer sends every approval's answer at once, each noting whether it was
// acknowledged, and reads the answers until the kill ends them.
func answer(base string, aps []*approval, wg *sync.WaitGroup) {
	client := &http.Client{Timeout: time.Minute}
	for _, ap := range aps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var (
				resp *http.Response
				err  error
			)
			switch ap.proto {
			case "native":
				resp, err = post(client, base+"/api/threads/"+ap.thread+"/approval", map[string]any{"approval_id": ap.approvalID, "approved": true}, true)
			case "chat":
				resp, err = post(client, base+"/v1/chat/completions", map[string]any{"model": "capgraph", "stream": true, "messages": ap.chat}, true)
			case "responses":
				resp, err = post(client, base+"/v1/responses", map[string]any{"model": "capgraph", "stream": true, "input": "yes", "previous_response_id": ap.responseID}, true)
			}
			if err != nil {
				return
			}
			defer resp.Body.Close()
			// The status line is the acknowledgement; the answer's stream
			// may die now.
			ap.acked = resp.StatusCode/100 == 2
			_, _ = io.Copy(io.Discard, resp.Body)
		}()
	}
}

// checkRound starts a server on the file the killed one left, recovers,
// and checks every approval: an acknowledged answer is carried out without
// asking again; an answer the kill cut off is given again; each write
// happens once. It returns the number of acknowledged answers.
func checkRound(t *testing.T, round int, db, journalPath string, aps []*approval) (acked int) {
	t.Helper()
	a, err := newApp(db, journalPath)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := a.srv.RecoverAllRuns(ctx); err != nil {
		t.Fatalf("round %d: RecoverAllRuns: %v", round, err)
	}
	// Which internal thread asked for which write, and how often.
	asked, err := agent.ListAudit(ctx, a.store, agent.AuditFilter{Event: agent.AuditAsked})
	if err != nil {
		t.Fatal(err)
	}
	threadOf := map[float64]string{}
	askedBefore := map[float64]int{}
	for _, r := range asked {
		if len(r.Changes) == 1 {
			v, _ := r.Changes[0].Value.(float64)
			threadOf[v] = r.Thread
			askedBefore[v]++
		}
	}
	for _, ap := range aps {
		if threadOf[ap.value] == "" {
			t.Fatalf("round %d: %s thread %d (%g A) was never asked", round, ap.proto, ap.n, ap.value)
		}
		if ap.acked {
			acked++
		}
	}
	// The recovered runs go on in the background: wait until every thread
	// has settled — answered, or waiting for approval with no run of its
	// answer left to recover.
	settled := func(ap *approval) (agent.RunStatus, bool) {
		th := threadOf[ap.value]
		_, status, err := a.agent.State(ctx, th)
		if err != nil {
			t.Fatalf("round %d: state of %s: %v", round, th, err)
		}
		switch status {
		case agent.RunAnswered, agent.RunFailed:
			return status, true
		case agent.RunInterrupted:
			recs, err := a.store.ListRuns(ctx, checkpoint.RunFilter{Thread: th, Limit: 1})
			return status, err == nil && (len(recs) == 0 || recs[0].Status.Terminal())
		}
		return status, false
	}
	progress := time.Now()
	open := aps
	for len(open) > 0 && time.Since(progress) < 20*time.Second {
		left := open[:0:0]
		for _, ap := range open {
			if _, ok := settled(ap); !ok {
				left = append(left, ap)
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
	for _, ap := range open {
		st, _ := settled(ap)
		t.Errorf("round %d: %s thread %d (%g A, acknowledged %v) did not settle after the restart: %s", round, ap.proto, ap.n, ap.value, ap.acked, st)
	}
	// An acknowledged answer is never asked for again; an answer the kill
	// cut off before it was stored is given again now, as a human would.
	for _, ap := range aps {
		th := threadOf[ap.value]
		status, _ := settled(ap)
		switch {
		case status == agent.RunAnswered:
		case status == agent.RunInterrupted && ap.acked:
			t.Errorf("round %d: LOST: the %s answer to thread %d (%g A) was acknowledged, and after the restart the approval is pending again", round, ap.proto, ap.n, ap.value)
		case status == agent.RunInterrupted:
			pend, err := a.agent.PendingApprovals(ctx, th)
			if err != nil || len(pend) != 1 {
				t.Fatalf("round %d: %s: pending %+v %v", round, th, pend, err)
			}
			for _, err := range a.agent.Resume(ctx, th, agent.Answer{ApprovalID: pend[0].ID, Approved: new(true), By: "operator"}) {
				if err != nil {
					t.Errorf("round %d: answering %s again: %v", round, th, err)
				}
			}
		default:
			t.Errorf("round %d: %s thread %d (%g A, acknowledged %v) ended %s", round, ap.proto, ap.n, ap.value, ap.acked, status)
		}
	}
	// Nobody was asked twice, and each write happened once.
	asked, err = agent.ListAudit(ctx, a.store, agent.AuditFilter{Event: agent.AuditAsked})
	if err != nil {
		t.Fatal(err)
	}
	askedAll := map[float64]int{}
	for _, r := range asked {
		if len(r.Changes) == 1 {
			v, _ := r.Changes[0].Value.(float64)
			askedAll[v]++
		}
	}
	written, err := a.journal.lines()
	if err != nil {
		t.Fatal(err)
	}
	for _, ap := range aps {
		if n := askedAll[ap.value]; n != 1 {
			t.Errorf("round %d: ASKED %d TIMES: %s thread %d (%g A, answer acknowledged %v)", round, n, ap.proto, ap.n, ap.value, ap.acked)
		}
		if n := len(written[ap.value]); n != 1 {
			t.Errorf("round %d: WRITTEN %d TIMES: %s thread %d (%g A, answer acknowledged %v): %v", round, n, ap.proto, ap.n, ap.value, ap.acked, written[ap.value])
		}
	}
	return acked
}
