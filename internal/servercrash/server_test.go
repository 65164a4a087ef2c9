package servercrash

import (
	"context"
	"fmt"
	"github.com/capgraph/capgraph/graph"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/internal/killtest"
	"github.com/capgraph/capgraph/server"
)

// Environment of the child process.
const (
	envChild = "CAPGRAPH_SERVERCRASH_CHILD" // "1" selects child mode in TestMain
	envDB    = "CAPGRAPH_SERVERCRASH_DB"
	envBusy  = "CAPGRAPH_SERVERCRASH_BUSY" // "BUSY" once a third of this many runs are acknowledged
	// envDurability is the agent's checkpoint durability
	// (graph.Durability): the rounds alternate sync and async.
	envDurability = "CAPGRAPH_SERVERCRASH_DURABILITY"
)

// The keys of the two principals: an API client and a trusted frontend
// (Open WebUI) forwarding chat ids.
const (
	keyClient = "sk-crash-client-0123456789"
	keyWebUI  = "sk-crash-webui-0123456789"
)

// newServer builds the server every process of the test runs — the child
// before the kill, the parent after it — as `capgraph serve` builds it: the
// offline agent on the SQLite file, its run records in the same file.
func newServer(path string, durability graph.Durability) (*server.Server, func(), error) {
	store, err := sqlite.New(sqlite.Config{Path: path})
	if err != nil {
		return nil, nil, err
	}
	read := capabilities.Define(capabilities.Definition{
		Name: "read_beam_current", Description: "Read the beam current of the storage ring", Provides: []string{"BEAM_CURRENT"},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			// Long enough that runs are in flight when the kill lands.
			select {
			case <-time.After(time.Duration(50+rand.IntN(250)) * time.Millisecond):
			case <-ctx.Done():
				return capabilities.Output{}, ctx.Err()
			}
			return capabilities.Result("BEAM_CURRENT", 401.5, "beam current is 401.5 mA"), nil
		},
	})
	reg := capabilities.NewRegistry()
	if err := reg.Register(read); err != nil {
		return nil, nil, err
	}
	a, err := agent.New(agent.Config{Registry: reg, Store: store, MaxConcurrency: 32, Durability: durability})
	if err != nil {
		return nil, nil, err
	}
	srv, err := server.New(server.Config{
		Runner: a,
		Limits: server.Limits{
			MaxConcurrentRuns: 400,
			MaxTotalRuns:      400,
			DetachGrace:       time.Minute,
		},
		Auth: server.Auth{
			Principals: []server.Principal{
				{Name: "client", KeySHA256: server.HashKey(keyClient), Tenant: "lab"},
				{Name: "webui", KeySHA256: server.HashKey(keyWebUI), Tenant: "lab", TrustedFrontend: true},
			},
		},
	})
	if err != nil {
		_ = store.Close()
		return nil, nil, err
	}
	return srv, func() { _ = store.Close() }, nil
}

// ackCounter calls ack when a 2xx status line is written (the run is
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

// childMain serves until it is killed: "LISTEN addr" once it listens,
// "BUSY" once a third of BUSY requests that start a run are acknowledged.
func childMain() int {
	say := killtest.NewSayer(os.Stdout)
	srv, closeStore, err := newServer(os.Getenv(envDB), graph.Durability(os.Getenv(envDurability)))
	if err != nil {
		say.Say("ERR open: %v", err)
		return 1
	}
	defer closeStore()
	busy, _ := strconv.Atoi(os.Getenv(envBusy))
	var acked atomic.Int64
	h := srv.Handler()
	counting := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && (r.URL.Path == "/v1/chat/completions" || r.URL.Path == "/agui" || len(r.URL.Path) > len("/api/threads/") && r.URL.Path[len(r.URL.Path)-5:] == "/runs") {
			// BUSY once a third of busy requests are acknowledged: the kill
			// then cuts acknowledged runs and runs not yet acknowledged
			// alike, however loaded the machine is.
			w = &ackCounter{ResponseWriter: w, ack: func() {
				if acked.Add(1) == int64(busy/3) {
					say.Say("BUSY")
				}
			}}
		}
		h.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		say.Say("ERR listen: %v", err)
		return 1
	}
	say.Say("LISTEN %s", ln.Addr())
	hs := &http.Server{Handler: counting, ReadHeaderTimeout: 10 * time.Second}
	if err := hs.Serve(ln); err != nil {
		say.Say("ERR serve: %v", fmt.Sprint(err))
		return 1
	}
	return 0
}
