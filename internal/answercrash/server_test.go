package answercrash

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/internal/killtest"
	"github.com/capgraph/capgraph/server"
	"github.com/capgraph/capgraph/state"
)

// Environment of the child process.
const (
	envChild   = "CAPGRAPH_ANSWERCRASH_CHILD" // "1" selects child mode in TestMain
	envDB      = "CAPGRAPH_ANSWERCRASH_DB"
	envJournal = "CAPGRAPH_ANSWERCRASH_JOURNAL"
	// envDurability is the agent's checkpoint durability
	// (graph.Durability): the rounds alternate sync and async.
	envDurability = "CAPGRAPH_ANSWERCRASH_DURABILITY"
)

// keyClient is the API key of the one principal: an API client using
// every protocol.
const keyClient = "sk-answer-client-0123456789"

// headerAnswer marks the requests that answer an approval, so the child
// reports their acknowledgements ("ACK") and nothing else's.
const headerAnswer = "X-Test-Answer"

// journal is the plant: set_q1 and set_q2 append one line per write they
// carry out, "target value idempotency-key", to a file that outlives the
// process.
type journal struct {
	path string
	mu   sync.Mutex
}

// stepValue reads the value the user gave for target ("… the Q2 current
// to 80 A").
func stepValue(target string, st capabilities.Step) (float64, error) {
	re := regexp.MustCompile(`(?i)\b` + target + `\b[^0-9]*?\bto\s+([0-9]+(?:\.[0-9]+)?)`)
	for _, s := range []string{st.TaskObjective, st.Task} {
		if m := re.FindStringSubmatch(s); m != nil {
			return strconv.ParseFloat(m[1], 64)
		}
	}
	return 0, fmt.Errorf(`no value for %s (say "the %s current to <number>")`, target, target)
}

// write appends a line with one write(2): it is in the file the moment the
// call returns, whatever happens to the process next.
func (j *journal) write(w write, key string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	f, err := os.OpenFile(j.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%s %g %s\n", w.target, w.value, key)
	return errors.Join(err, f.Close())
}

// write is one setpoint a thread asks for: unique in a round, it names
// the thread's approval in the journal and the audit log.
type write struct {
	target string
	value  float64
}

func (w write) String() string { return fmt.Sprintf("%s=%g A", w.target, w.value) }

// lines reads the journal: each write → the idempotency keys it was
// carried out with.
func (j *journal) lines() (map[write][]string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := map[write][]string{}
	f, err := os.Open(j.path)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			return nil, fmt.Errorf("journal line %q", sc.Text())
		}
		n, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return nil, fmt.Errorf("journal line %q", sc.Text())
		}
		w := write{f[0], n}
		out[w] = append(out[w], f[2])
	}
	return out, sc.Err()
}

// capability is set_<target> (set_q1, set_q2): a write the human
// approves, carried out by appending to the journal after a short while
// (so that kills land during writes too). It reconciles an attempt a crash
// cut by looking its idempotency key up in the journal, as a message
// system would. A request naming both targets plans both writes, in
// parallel, each with its own approval.
func (j *journal) capability(target string) (capabilities.Capability, error) {
	return capabilities.Define(capabilities.Definition{
		Name: "set_" + strings.ToLower(target), Description: "Set the " + target + " quadrupole current to a value", Provides: []string{target + "_WRITE"}, SideEffects: true,
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use to set the " + target + " current.",
			Examples: []capabilities.ClassifierExample{{Query: "Set the " + target + " current to 105 A", Result: true, Reason: "a setpoint change"}}},
		Action: func(st capabilities.Step) (capabilities.Action, error) {
			v, err := stepValue(target, st)
			return capabilities.Action{Changes: []capabilities.Change{{Target: target, Value: v, Unit: "A"}}, Summary: fmt.Sprintf("set %s to %g A", target, v)}, err
		},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			v, err := stepValue(target, st)
			if err != nil {
				return capabilities.Output{}, capabilities.NotApplied(err)
			}
			select {
			case <-time.After(time.Duration(rand.IntN(40)) * time.Millisecond):
			case <-ctx.Done():
				return capabilities.Output{}, capabilities.NotApplied(ctx.Err())
			}
			if err := j.write(write{target, v}, st.IdempotencyKey); err != nil {
				return capabilities.Output{}, err
			}
			return capabilities.Result(target+"_WRITE", map[string]any{"new": v}, fmt.Sprintf("%s set to %g A", target, v)), nil
		},
		Reconcile: func(ctx context.Context, st capabilities.Step, _ capabilities.Action) (capabilities.Outcome, error) {
			all, err := j.lines()
			if err != nil {
				return capabilities.OutcomeUnconfirmed, err
			}
			for _, keys := range all {
				for _, k := range keys {
					if k == st.IdempotencyKey {
						return capabilities.OutcomeConfirmed, nil
					}
				}
			}
			return capabilities.OutcomeFailed, nil
		},
	}), nil
}

// app is what every process of the test runs — the child before the kill,
// the parent after it — as `capgraph serve` builds it: the offline agent on
// the SQLite file with writes enabled, its run records and audit log in the
// same file.
type app struct {
	srv     *server.Server
	agent   *agent.Agent
	store   *sqlite.Store
	journal *journal
}

func newApp(db, journalPath string, durability graph.Durability) (*app, error) {
	store, err := sqlite.New(sqlite.Config{Path: db})
	if err != nil {
		return nil, err
	}
	j := &journal{path: journalPath}
	reg := capabilities.NewRegistry()
	for _, target := range []string{"Q1", "Q2"} {
		c, err := j.capability(target)
		if err == nil {
			err = reg.Register(c)
		}
		if err != nil {
			_ = store.Close()
			return nil, err
		}
	}
	a, err := agent.New(agent.Config{Registry: reg, Store: store, MaxConcurrency: 64, Durability: durability,
		Options: state.Options{WritesEnabled: true, ApprovalMode: state.ApprovalModeSelective}})
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	srv, err := server.New(server.Config{
		Runner: a,
		Limits: server.Limits{
			MaxConcurrentRuns: 400,
			MaxTotalRuns:      400,
			DetachGrace:       time.Minute,
		},
		Auth: server.Auth{
			Principals: []server.Principal{{Name: "client", KeySHA256: server.HashKey(keyClient), Tenant: "lab"}},
		},
	})
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	return &app{srv: srv, agent: a, store: store, journal: j}, nil
}

func (a *app) close() { _ = a.store.Close() }

// ackCounter calls ack when a 2xx status line is written (the answer is
// acknowledged); Unwrap keeps http.ResponseController's Flush working.
type ackCounter struct {
	http.ResponseWriter
	ack  func()
	once bool
}

func (a *ackCounter) WriteHeader(code int) {
	if !a.once && code/100 == 2 {
		a.once = true
		a.ack()
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *ackCounter) Write(b []byte) (int, error) {
	if !a.once {
		a.WriteHeader(http.StatusOK)
	}
	return a.ResponseWriter.Write(b)
}

func (a *ackCounter) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// childMain serves until it is killed: "LISTEN addr" once it listens, and
// "ACK" for every answer it acknowledged. POST /test/exit ends it (the
// parent gives up on a round).
func childMain() int {
	say := killtest.NewSayer(os.Stdout)
	a, err := newApp(os.Getenv(envDB), os.Getenv(envJournal), graph.Durability(os.Getenv(envDurability)))
	if err != nil {
		say.Say("ERR open: %v", err)
		return 1
	}
	defer a.close()
	h := a.srv.Handler()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /test/exit", func(http.ResponseWriter, *http.Request) { os.Exit(3) })
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(headerAnswer) != "" {
			w = &ackCounter{ResponseWriter: w, ack: func() { say.Say("ACK") }}
		}
		h.ServeHTTP(w, r)
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		say.Say("ERR listen: %v", err)
		return 1
	}
	say.Say("LISTEN %s", ln.Addr())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if err := hs.Serve(ln); err != nil {
		say.Say("ERR serve: %v", err)
		return 1
	}
	return 0
}
