package replicas

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/capgraph/capgraph/graph/checkpoint/postgres/pgtest"
)

const (
	conversations = 200
	// killAfter: the replica is killed once this many runs were
	// acknowledged and killStreams clients stream from it (an observed
	// state, not a time, so that a loaded machine cuts streams too).
	killAfter   = 70
	killStreams = 5
	// parallel clients at once.
	parallel = 40
)

// replica is one `serve` process.
type replica struct {
	n    int
	cmd  *exec.Cmd
	base string
	dead atomic.Bool
	out  *bytes.Buffer
	mu   sync.Mutex
}

func (r *replica) logs() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

type lockedWriter struct{ r *replica }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	return w.r.out.Write(p)
}

// schemaDSN makes a schema of its own for the test (dropped at the end)
// and returns the URL that selects it.
func schemaDSN(t *testing.T) string {
	t.Helper()
	dsn := pgtest.DSN(t)
	schema := fmt.Sprintf("replicas_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{"CREATE SCHEMA " + schema,
		"CREATE TABLE " + schema + ".exec_log (key text NOT NULL, pid integer NOT NULL, started timestamptz NOT NULL, ended timestamptz NOT NULL)"} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Error(err)
		}
	})
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}

var listenRE = regexp.MustCompile(`web page:\s+(http://127\.0\.0\.1:\d+)/`)

// startReplicas builds the application once and starts n replicas of
// `serve` on loopback ports chosen by the system.
func startReplicas(t *testing.T, dsn string, n int) []*replica {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "capgraph")
	build := exec.Command("go", "build", "-o", bin, "./replicaapp")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfg := fmt.Sprintf("store: %q\nserver:\n  lease_ttl: 3s\n  limits:\n    max_concurrent_runs: 1000\n    requests_per_minute: 100000\n", dsn)
	if err := os.WriteFile(filepath.Join(dir, "capgraph.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var reps []*replica
	for i := range n {
		r := &replica{n: i, out: &bytes.Buffer{}}
		r.cmd = exec.Command(bin, "serve", "--addr", "127.0.0.1:0")
		r.cmd.Dir = dir
		r.cmd.Env = append(os.Environ(), "CAPGRAPH_REPLICAS_LOG="+dsn)
		r.cmd.Stderr = lockedWriter{r}
		stdout, err := r.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		found := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lockedWriter{r}.Write([]byte(sc.Text() + "\n"))
				if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
					select {
					case found <- m[1]:
					default:
					}
				}
			}
		}()
		t.Cleanup(func() {
			if !r.dead.Load() {
				_ = r.cmd.Process.Signal(syscall.SIGTERM)
				done := make(chan struct{})
				go func() { _ = r.cmd.Wait(); close(done) }()
				select {
				case <-done:
				case <-time.After(20 * time.Second):
					_ = r.cmd.Process.Kill()
				}
			}
		})
		select {
		case r.base = <-found:
		case <-time.After(2 * time.Minute):
			t.Fatalf("replica %d did not start:\n%s", i, r.logs())
		}
		reps = append(reps, r)
	}
	return reps
}

// client talks to the replicas as a client behind a plain load balancer
// would: a request that cannot reach its replica goes to the next one.
type client struct {
	reps []*replica
	http *http.Client
	// streaming, when set, counts per replica the streams that have
	// received an event and not yet ended.
	streaming []atomic.Int32
}

func (c *client) do(ctx context.Context, prefer int, method, path string, body any, hdr ...string) (*http.Response, int, error) {
	var lastErr error
	for k := range len(c.reps) * 3 {
		i := (prefer + k) % len(c.reps)
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequestWithContext(ctx, method, c.reps[i].base+path, rd)
		req.Header.Set("Content-Type", "application/json")
		for j := 0; j+1 < len(hdr); j += 2 {
			req.Header.Set(hdr[j], hdr[j+1])
		}
		resp, err := c.http.Do(req)
		if err != nil {
			lastErr = err
			time.Sleep(50 * time.Millisecond)
			continue
		}
		return resp, i, nil
	}
	return nil, -1, lastErr
}

func (c *client) json(ctx context.Context, prefer int, method, path string, body, out any, hdr ...string) (int, error) {
	resp, _, err := c.do(ctx, prefer, method, path, body, hdr...)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, nil
}

// follow streams a run's events from replica prefer, reconnecting to the
// next replica with Last-Event-ID when the stream breaks, until the end
// frame; it returns the end status, the answer's text, and the replicas
// it streamed from.
func (c *client) follow(ctx context.Context, prefer int, thread, run string) (status, answer string, from []int, err error) {
	last := ""
	var text strings.Builder
	// Bounded by ctx (a loaded machine answers slowly); the count only
	// stops a client that never gets anywhere.
	for attempt := 0; attempt < 400 && ctx.Err() == nil; attempt++ {
		hdr := []string{}
		if last != "" {
			hdr = []string{"Last-Event-ID", last}
		}
		resp, i, derr := c.do(ctx, prefer, "GET", "/api/threads/"+thread+"/runs/"+run+"/events", nil, hdr...)
		if derr != nil {
			return "", "", from, derr
		}
		from = append(from, i)
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusConflict {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			return "", "", from, fmt.Errorf("events from replica %d: %d %s", i, resp.StatusCode, b)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var id, event string
		counted := false
		uncount := func() {
			if counted {
				c.streaming[i].Add(-1)
				counted = false
			}
		}
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data := strings.TrimPrefix(line, "data: ")
				if id != "" {
					last = id
				}
				if !counted && c.streaming != nil {
					c.streaming[i].Add(1)
					counted = true
				}
				switch event {
				case "token", "answer":
					var ev struct{ Text string }
					_ = json.Unmarshal([]byte(data), &ev)
					text.WriteString(ev.Text)
				case "message":
					// The whole answer, as the page shows it: also what a
					// run taken over after its answer gives its followers.
					var ev struct{ Message struct{ Content string } }
					if json.Unmarshal([]byte(data), &ev) == nil && ev.Message.Content != "" {
						text.Reset()
						text.WriteString(ev.Message.Content)
					}
				case "end":
					var end struct{ Status string }
					_ = json.Unmarshal([]byte(data), &end)
					uncount()
					resp.Body.Close()
					return end.Status, text.String(), from, nil
				}
			case line == "":
				id, event = "", ""
			}
		}
		uncount()
		resp.Body.Close()
		prefer = i + 1 // the replica went away: the next one
	}
	return "", "", from, fmt.Errorf("no end frame after %d connections (%v)", len(from), ctx.Err())
}

type conv struct {
	n                 int
	thread, run       string
	start, streamFrom int
	acked             bool
	status, answer    string
	streamedFrom      []int
	err               error
}

// TestThreeReplicasSIGKILL: three `capgraph serve` replicas on one
// PostgreSQL; 200 conversations started on one replica and streamed from
// another (every second one) or the same; one replica killed with SIGKILL
// once 70 runs were acknowledged. Every run completes, every client gets
// its answer (reconnecting elsewhere when its replica died), no completed
// step ran twice, no turn ran on two replicas at once, and a cancel sent
// to a replica that does not run the run stops it.
func TestThreeReplicasSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three server processes")
	}
	dsn := schemaDSN(t)
	reps := startReplicas(t, dsn, 3)
	c := &client{reps: reps, http: &http.Client{Timeout: 2 * time.Minute}, streaming: make([]atomic.Int32, len(reps))}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := time.Now()

	// The replica to kill: the one the most runs were started on by then.
	const victim = 0
	var (
		acked    atomic.Int32
		killOnce sync.Once
		killed   atomic.Bool
		killedAt time.Time
		killPid  int
	)
	var kill func()
	// killWhenStreamed kills the victim once killStreams clients stream
	// from it (or, should that never happen, after a minute, and the
	// reconnection check below says so).
	killWhenStreamed := func() {
		for wait := time.Now(); !killed.Load() && c.streaming[victim].Load() < killStreams && time.Since(wait) < time.Minute; {
			time.Sleep(5 * time.Millisecond)
		}
		kill()
	}
	kill = func() {
		killOnce.Do(func() {
			killPid = reps[victim].cmd.Process.Pid
			reps[victim].dead.Store(true)
			_ = reps[victim].cmd.Process.Kill() // SIGKILL
			_ = reps[victim].cmd.Wait()
			killedAt = time.Now()
			killed.Store(true)
		})
	}
	convs := make([]*conv, conversations)
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range conversations {
		cv := &conv{n: i, thread: fmt.Sprintf("conv-%03d", i), start: i % 3}
		cv.streamFrom = cv.start
		if i%2 == 0 {
			cv.streamFrom = (cv.start + 1) % 3 // streamed from another replica
		}
		convs[i] = cv
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			cv.err = converse(ctx, c, cv, func() {
				if acked.Add(1) == killAfter {
					go killWhenStreamed()
				}
			})
		}()
	}
	wg.Wait()
	kill()
	t.Logf("200 conversations in %s; replica %d (pid %d) killed %s after the start", time.Since(start).Round(time.Millisecond),
		victim, killPid, killedAt.Sub(start).Round(time.Millisecond))

	crossed, reconnected := 0, 0
	for _, cv := range convs {
		if cv.err != nil {
			t.Errorf("conversation %d: %v", cv.n, cv.err)
			continue
		}
		if cv.status != "answered" || !strings.Contains(cv.answer, "401.5") {
			t.Errorf("conversation %d (run %s, streamed from %v): ended %q with answer %q; want answered with 401.5", cv.n, cv.run, cv.streamedFrom, cv.status, cv.answer)
		}
		var info struct{ Status, Error string }
		if _, err := c.json(ctx, 1, "GET", "/api/threads/"+cv.thread+"/runs/"+cv.run, nil, &info); err != nil || info.Status != "answered" {
			t.Errorf("conversation %d: run %s record %q (%s), %v; want answered", cv.n, cv.run, info.Status, info.Error, err)
			for _, r := range reps {
				for _, line := range strings.Split(r.logs(), "\n") {
					if strings.Contains(line, cv.run) {
						t.Logf("replica %d: %s", r.n, line)
					}
				}
			}
		}
		if cv.streamedFrom[0] != cv.start {
			crossed++
		}
		if len(cv.streamedFrom) > 1 {
			reconnected++
		}
	}
	t.Logf("%d conversations streamed from a replica other than the one they started on; %d reconnected to another replica", crossed, reconnected)
	if reconnected == 0 {
		t.Errorf("no client had to reconnect: the kill proved little")
	}
	checkExecutions(t, dsn, killPid)
	checkCancel(t, ctx, c, reps)
	if t.Failed() {
		for _, r := range reps {
			t.Logf("replica %d log (last 4 KB):\n%s", r.n, tail(r.logs(), 4096))
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// converse creates the thread and starts its run on cv.start (202), then
// follows it from cv.streamFrom. A request that fails before its answer
// is made again with the same Idempotency-Key (on the next replica).
func converse(ctx context.Context, c *client, cv *conv, ack func()) error {
	// 409 while a replica killed mid-creation still holds the thread.
	for try := 0; ; try++ {
		code, err := c.json(ctx, cv.start+try, "POST", "/api/threads", map[string]any{"id": cv.thread}, nil)
		if err == nil && (code == http.StatusCreated || code == http.StatusOK) {
			break
		}
		if try >= 20 || code != http.StatusConflict {
			return fmt.Errorf("create thread: %d %v", code, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	var out struct {
		Run struct{ ID string } `json:"run"`
	}
	for try := 0; ; try++ {
		code, err := c.json(ctx, cv.start+try, "POST", "/api/threads/"+cv.thread+"/runs",
			map[string]any{"input": fmt.Sprintf("What is the beam current? [%s]", cv.thread)}, &out, "Idempotency-Key", cv.thread+"-turn-1")
		if err == nil && code == http.StatusAccepted && out.Run.ID != "" {
			break
		}
		if try >= 5 {
			return fmt.Errorf("start run: %d %v", code, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	cv.run, cv.acked = out.Run.ID, true
	ack()
	var err error
	cv.status, cv.answer, cv.streamedFrom, err = c.follow(ctx, cv.streamFrom, cv.thread, cv.run)
	return err
}

// checkExecutions reads exec_log: a step that completed (its row written)
// runs again only when the killed replica ran it and the kill cut it
// before its checkpoint; and no turn ran on two replicas at once.
func checkExecutions(t *testing.T, dsn string, killPid int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT key, pid, started, ended FROM exec_log ORDER BY started`)
	if err != nil {
		t.Fatal(err)
	}
	type ex struct {
		pid          int
		started, end time.Time
	}
	byKey := map[string][]ex{}
	byTurn := map[string][]ex{}
	total := 0
	for rows.Next() {
		var (
			key string
			e   ex
		)
		if err := rows.Scan(&key, &e.pid, &e.started, &e.end); err != nil {
			t.Fatal(err)
		}
		total++
		byKey[key] = append(byKey[key], e)
		parts := strings.Split(key, "/")
		turn := strings.Join(parts[:max(1, len(parts)-3)], "/") // thread/turn
		byTurn[turn] = append(byTurn[turn], e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if total < conversations {
		t.Errorf("exec_log holds %d executions for %d conversations", total, conversations)
	}
	redone := 0
	for key, es := range byKey {
		if len(es) == 1 {
			continue
		}
		for _, e := range es[:len(es)-1] {
			if e.pid != killPid {
				t.Errorf("step %s completed on pid %d (alive) and ran again: %+v", key, e.pid, es)
			}
		}
		redone++
	}
	for turn, es := range byTurn {
		for i := range es {
			for j := i + 1; j < len(es); j++ {
				a, b := es[i], es[j]
				if a.pid != b.pid && a.started.Before(b.end) && b.started.Before(a.end) {
					t.Errorf("turn %s ran on pids %d and %d at once: %+v %+v", turn, a.pid, b.pid, a, b)
				}
			}
		}
	}
	t.Logf("%d step executions; %d steps completed on the killed replica without their checkpoint and ran again", total, redone)
}

// checkCancel starts slow runs on each live replica and cancels each from
// another live replica: the run stops (canceled) within seconds.
func checkCancel(t *testing.T, ctx context.Context, c *client, reps []*replica) {
	t.Helper()
	var live []int
	for i, r := range reps {
		if !r.dead.Load() {
			live = append(live, i)
		}
	}
	for k, on := range live {
		by := live[(k+1)%len(live)]
		thread := fmt.Sprintf("cancel-%d", on)
		direct := &client{reps: []*replica{reps[on]}, http: c.http}
		other := &client{reps: []*replica{reps[by]}, http: c.http}
		if code, err := direct.json(ctx, 0, "POST", "/api/threads", map[string]any{"id": thread}, nil); err != nil || code != http.StatusCreated {
			t.Fatalf("create %s: %d %v", thread, code, err)
		}
		var out struct {
			Run struct{ ID string } `json:"run"`
		}
		if code, err := direct.json(ctx, 0, "POST", "/api/threads/"+thread+"/runs", map[string]any{"input": "What is the beam current? [slow]"}, &out); err != nil || code != http.StatusAccepted {
			t.Fatalf("start slow run: %d %v", code, err)
		}
		time.Sleep(500 * time.Millisecond) // into its step
		sent := time.Now()
		if code, err := other.json(ctx, 0, "POST", "/api/threads/"+thread+"/runs/"+out.Run.ID+"/cancel", nil, nil); err != nil || code != http.StatusAccepted {
			t.Fatalf("cancel on replica %d: %d %v", by, code, err)
		}
		status, _, _, err := other.follow(ctx, 0, thread, out.Run.ID)
		if err != nil || status != "canceled" {
			t.Errorf("run on replica %d canceled through replica %d: ended %q, %v; want canceled", on, by, status, err)
		}
		// Canceled (not answered) proves the cancel stopped the 30 s
		// step; how long it took is logged, not asserted (load).
		t.Logf("the cancel through replica %d stopped the run on replica %d in %s", by, on, time.Since(sent).Round(time.Millisecond))
	}
}
