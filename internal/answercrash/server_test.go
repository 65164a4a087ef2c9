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
)

// keyClient is the API key of the one principal: an API client using
// every protocol.
const keyClient = "sk-answer-client-0123456789"

// headerAnswer marks the requests that answer an approval, so the child
// reports their acknowledgements ("ACK") and nothing else's.
const headerAnswer = "X-Test-Answer"

// journal is the plant: set_q1 appends one line per write it carries out,
// "value idempotency-key", to a file that outlives the process.
type journal struct {
	path string
	mu   sync.Mutex
}

var toValue = regexp.MustCompile(`(?i)\bto\s+([0-9]+(?:\.[0-9]+)?)`)

func stepValue(st capabilities.Step) (float64, error) {
	for _, s := range []string{st.TaskObjective, st.Task} {
		if m := toValue.FindStringSubmatch(s); m != nil {
			return strconv.ParseFloat(m[1], 64)
		}
	}
	return 0, errors.New(`no value (say "to <number>")`)
}

// write appends a line with one write(2): it is in the file the moment the
// call returns, whatever happens to the process next.
func (j *journal) write(v float64, key string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	f, err := os.OpenFile(j.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%g %s\n", v, key)
	return errors.Join(err, f.Close())
}

// lines reads the journal: value → the idempotency keys written with it.
func (j *journal) lines() (map[float64][]string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := map[float64][]string{}
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
		v, key, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			return nil, fmt.Errorf("journal line %q", sc.Text())
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("journal line %q", sc.Text())
		}
		out[n] = append(out[n], key)
	}
	return out, sc.Err()
}

// capability is set_q1: a write the human approves, carried out by
// appending to the journal after a short while (so that kills land during
// writes too). It reconciles an attempt a crash cut by looking its
// idempotency key up in the journal, as a message system would.
func (j *journal) capability() (capabilities.Capability, error) {
	return capabilities.Define(capabilities.Definition{
		Name: "set_q1", Description: "Set the Q1 quadrupole current to a value", Provides: []string{"Q1_WRITE"}, SideEffects: true,
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use to set the Q1 current.",
			Examples: []capabilities.ClassifierExample{{Query: "Set the Q1 current to 105 A", Result: true, Reason: "a setpoint change"}}},
		Action: func(st capabilities.Step) (capabilities.Action, error) {
			v, err := stepValue(st)
			return capabilities.Action{Changes: []capabilities.Change{{Target: "Q1", Value: v, Unit: "A"}}, Summary: fmt.Sprintf("set Q1 to %g A", v)}, err
		},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			v, err := stepValue(st)
			if err != nil {
				return capabilities.Output{}, capabilities.NotApplied(err)
			}
			select {
			case <-time.After(time.Duration(rand.IntN(40)) * time.Millisecond):
			case <-ctx.Done():
				return capabilities.Output{}, capabilities.NotApplied(ctx.Err())
			}
			if err := j.write(v, st.IdempotencyKey); err != nil {
				return capabilities.Output{}, err
			}
			return capabilities.Result("Q1_WRITE", map[string]any{"new": v}, fmt.Sprintf("Q1 set to %g A", v)), nil
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
	})
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

func newApp(db, journalPath string) (*app, error) {
	store, err := sqlite.New(sqlite.Config{Path: db})
	if err != nil {
		return nil, err
	}
	j := &journal{path: journalPath}
	c, err := j.capability()
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	reg := capabilities.NewRegistry()
	if err := reg.Register(c); err != nil {
		_ = store.Close()
		return nil, err
	}
	a, err := agent.New(agent.Config{Registry: reg, Store: store, MaxConcurrency: 64,
		Options: state.Options{WritesEnabled: true, ApprovalMode: state.ApprovalModeSelective}})
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	srv, err := server.New(server.Config{Runner: a, MaxConcurrentRuns: 400, MaxTotalRuns: 400, DetachGrace: time.Minute,
		Principals: []server.Principal{{Name: "client", KeySHA256: server.HashKey(keyClient), Tenant: "lab"}}})
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
	a, err := newApp(os.Getenv(envDB), os.Getenv(envJournal))
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
