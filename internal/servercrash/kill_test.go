package servercrash

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/capgraph/capgraph/graph"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/internal/killtest"
)

const (
	// streams per round, all started at once; the kill lands 0–300 ms
	// after the busy-th of them has reached the server.
	streams = 120
	busy    = 100
	rounds  = 3
)

// request is one client's run: how it asks, and what it got.
type request struct {
	n      int
	proto  string // native (SSE), native-202, chat (SSE), agui
	thread string // the client's thread id
	input  string // unique: how the answer is found again
	// acked: the server acknowledged the input (a 2xx status line).
	acked bool
	// threadAcked: POST /api/threads answered 201 (the thread is durable).
	threadAcked bool
}

func TestMain(m *testing.M) {
	if os.Getenv(envChild) == "1" {
		os.Exit(childMain())
	}
	os.Exit(m.Run())
}

// TestKill9DuringStreams: SIGKILL a server while more than a hundred clients
// stream runs from it (native SSE, native 202, Chat Completions SSE through
// a trusted frontend, AG-UI), start a server again on the same SQLite file
// (RecoverAllRuns, as `capgraph serve` does at start), and check every
// acknowledged input: answered, or its run failed with a reason. Lost: 0.
func TestKill9DuringStreams(t *testing.T) {
	start := time.Now()
	var total, acked, answered, failed, threads, recovered int
	for round := 1; round <= rounds; round++ {
		dir := t.TempDir()
		db := filepath.Join(dir, "capgraph.db")
		reqs, killed := killRound(t, db, round)
		if !killed {
			t.Fatalf("round %d: the kill did not land", round)
		}
		a, an, f, th, rec := checkRound(t, db, durabilityOf(round), reqs)
		total += len(reqs)
		acked, answered, failed, threads, recovered = acked+a, answered+an, failed+f, threads+th, recovered+rec
	}
	t.Logf("%d rounds, %d streams, %d acknowledged inputs: %d answered, %d marked failed, %d lost; %d acknowledged threads, none lost; %d runs recovered after the restarts (unacknowledged inputs among them); %s",
		rounds, total, acked, answered, failed, acked-answered-failed, threads, recovered, time.Since(start).Round(time.Millisecond))
	if acked < busy/2 || recovered == 0 {
		t.Errorf("%d inputs were acknowledged and %d runs recovered; the kills proved little", acked, recovered)
	}
}

// killRound starts the child, sends the streams, and kills it once busy
// of them have arrived.
func killRound(t *testing.T, db string, round int) ([]*request, bool) {
	t.Helper()
	var (
		mu   sync.Mutex
		reqs []*request
		wg   sync.WaitGroup
	)
	r := killtest.Run(t, killtest.Child{
		Name:         fmt.Sprintf("round %d (%s)", round, durabilityOf(round)),
		Env:          []string{envChild + "=1", envDB + "=" + db, fmt.Sprintf("%s=%d", envBusy, busy), envDurability + "=" + string(durabilityOf(round))},
		Kill:         true,
		AfterTrigger: 20 * time.Millisecond, // soon after BUSY: some runs acknowledged, others not yet
		Deadline:     2 * time.Minute,
		Line: func(line string) bool {
			switch {
			case strings.HasPrefix(line, "LISTEN "):
				base := "http://" + strings.TrimPrefix(line, "LISTEN ")
				for i := range streams {
					rq := &request{n: i, proto: []string{"native", "native-202", "chat", "agui"}[i%4],
						thread: fmt.Sprintf("r%d-t%d", round, i), input: fmt.Sprintf("What is the beam current? [r%d-%d]", round, i)}
					mu.Lock()
					reqs = append(reqs, rq)
					mu.Unlock()
					wg.Add(1)
					go func() {
						defer wg.Done()
						send(base, rq)
					}()
				}
				return false
			case line == "BUSY":
				return true
			case strings.HasPrefix(line, "ERR"):
				t.Errorf("child: %s", line)
			}
			return false
		},
	})
	wg.Wait() // every connection ended with the child
	return reqs, r.Killed
}

// send makes one client's requests and notes what was acknowledged. The
// request is made again, as an SDK retries, only when nothing of it was
// acknowledged; here it is not: the kill ends the round.
func send(base string, rq *request) {
	client := &http.Client{Timeout: time.Minute}
	post := func(path, key string, body any, hdr ...string) (*http.Response, error) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", base+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		return client.Do(req)
	}
	var (
		resp *http.Response
		err  error
	)
	switch rq.proto {
	case "native", "native-202":
		tr, terr := post("/api/threads", keyClient, map[string]any{"id": rq.thread})
		if terr != nil {
			return
		}
		io.Copy(io.Discard, tr.Body)
		tr.Body.Close()
		if tr.StatusCode != http.StatusCreated {
			return
		}
		rq.threadAcked = true
		resp, err = post("/api/threads/"+rq.thread+"/runs", keyClient, map[string]any{"input": rq.input, "stream": rq.proto == "native"})
	case "chat":
		resp, err = post("/v1/chat/completions", keyWebUI, map[string]any{"model": "capgraph", "stream": true,
			"messages": []any{map[string]any{"role": "user", "content": rq.input}}}, "X-OpenWebUI-Chat-Id", rq.thread, "X-OpenWebUI-User-Id", "u1")
	default:
		resp, err = post("/agui", keyClient, map[string]any{"threadId": rq.thread, "runId": "r1",
			"messages": []any{map[string]any{"id": "u1", "role": "user", "content": rq.input}}})
	}
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		// The status line is the acknowledgement; the stream may die now.
		rq.acked = true
	}
	_, _ = io.Copy(io.Discard, bufio.NewReader(resp.Body))
}

// checkRound starts a server on the file the killed one left, recovers,
// and checks every acknowledged input and thread. It returns the counts.
func checkRound(t *testing.T, db string, durability graph.Durability, reqs []*request) (acked, answered, failed, threads, recovered int) {
	t.Helper()
	srv, closeStore, err := newServer(db, durability)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h := srv.Handler()
	get := func(path, key string, hdr ...string) (int, []byte) {
		req := httptest.NewRequest("GET", "http://localhost"+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code, w.Body.Bytes()
	}
	// Acknowledged inputs the kill cut before their input checkpoint was
	// on disk: an input is acknowledged once its run record is, in either
	// mode (under async the checkpoint is written while the first step
	// runs); the record holds it, and recovery runs it.
	unwritten := 0
	for _, rq := range reqs {
		if key, hdr, thread := who(rq); rq.acked && !holdsInput(get, thread, key, hdr, rq.input) {
			unwritten++
		}
	}
	t.Logf("%d of the acknowledged inputs were not in the checkpoints at the restart", unwritten)
	started, err := srv.RecoverAllRuns(ctx)
	if err != nil {
		t.Fatalf("RecoverAllRuns: %v", err)
	}
	recovered = len(started)
	type pending struct {
		rq          *request
		key, thread string
		hdr         []string
	}
	var open []pending
	for _, rq := range reqs {
		key, hdr, thread := who(rq)
		if rq.threadAcked {
			threads++
			if code, body := get("/api/threads/"+thread, key, hdr...); code != http.StatusOK {
				t.Errorf("%s: the thread (201 before the kill) is gone: %d %s", rq.thread, code, body)
			}
		}
		if rq.acked {
			acked++
			open = append(open, pending{rq, key, thread, hdr})
		}
	}
	// The recovered runs go on in the background: look until every input
	// is answered or failed, or nothing changed for 15 s.
	progress := time.Now()
	for len(open) > 0 && time.Since(progress) < 15*time.Second {
		n := len(open)
		left := open[:0]
		for _, p := range open {
			switch outcome(get, p.thread, p.key, p.hdr, p.rq.input) {
			case "answered":
				answered++
			case "failed":
				failed++
			default:
				left = append(left, p)
			}
		}
		open = left
		if len(open) < n {
			progress = time.Now()
		}
		if len(open) > 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	for _, p := range open {
		t.Errorf("LOST: %s %s (%q) was acknowledged, and after the restart is neither answered nor marked failed", p.rq.proto, p.rq.thread, p.rq.input)
	}
	return acked, answered, failed, threads, recovered
}

// who is the key, headers and thread id rq was sent with.
func who(rq *request) (key string, hdr []string, thread string) {
	if rq.proto == "chat" {
		return keyWebUI, []string{"X-OpenWebUI-User-Id", "u1"}, "openwebui:" + rq.thread
	}
	return keyClient, nil, rq.thread
}

// message is a message of a thread's state.
type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// messages reads the thread's messages (none before its first checkpoint).
func messages(get func(path, key string, hdr ...string) (int, []byte), thread, key string, hdr []string) []message {
	_, body := get("/api/threads/"+thread+"/state", key, hdr...)
	var st struct {
		State *struct {
			Messages []message `json:"messages"`
		} `json:"state"`
	}
	if json.Unmarshal(body, &st) != nil || st.State == nil {
		return nil
	}
	return st.State.Messages
}

// holdsInput reports whether the thread's state holds input as a user's
// message.
func holdsInput(get func(path, key string, hdr ...string) (int, []byte), thread, key string, hdr []string, input string) bool {
	for _, m := range messages(get, thread, key, hdr) {
		if m.Role == "user" && m.Content == input {
			return true
		}
	}
	return false
}

// outcome says what became of an input: "answered" when the thread's
// messages hold it followed by an answer, "failed" when a run of the
// thread failed with a reason, "" otherwise (not yet, or lost).
func outcome(get func(path, key string, hdr ...string) (int, []byte), thread, key string, hdr []string, input string) string {
	msgs := messages(get, thread, key, hdr)
	for i, m := range msgs {
		if m.Role == "user" && m.Content == input && i+1 < len(msgs) && msgs[i+1].Role == "assistant" && strings.Contains(msgs[i+1].Content, "401.5") {
			return "answered"
		}
	}
	_, body := get("/api/threads/"+thread+"/runs?limit=50", key, hdr...)
	var runs struct {
		Runs []struct {
			Status string `json:"status"`
			Error  string `json:"error"`
		} `json:"runs"`
	}
	_ = json.Unmarshal(body, &runs)
	for _, r := range runs.Runs {
		if r.Status == "failed" && r.Error != "" {
			return "failed"
		}
	}
	return ""
}

// durabilityOf is the checkpoint durability of a round: the rounds
// alternate the modes, as every promise holds in both (docs/reliability.md;
// under async a turn's input checkpoint is written while its first step
// runs, its run record holding the input until then).
func durabilityOf(round int) graph.Durability {
	return graph.Durabilities[(round-1)%len(graph.Durabilities)]
}
