package crashtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/internal/killtest"
)

// Environment of the child process.
const (
	envChild   = "CAPGRAPH_CRASHTEST_CHILD" // "1" selects child mode in TestMain
	envDB      = "CAPGRAPH_CRASHTEST_DB"
	envMarker  = "CAPGRAPH_CRASHTEST_MARKER"
	envThreads = "CAPGRAPH_CRASHTEST_THREADS" // comma-separated
	envRound   = "CAPGRAPH_CRASHTEST_ROUND"
)

// The graph: eight steps; step 4 routes with a durable wait (NotBefore) and
// step 5 runs two nodes concurrently.
//
//	n1 → n2 → n3 → n4 ─(wait)→ {n5a, n5b} → n6 → n7 → n8 → end
var stepNodes = [][]string{1: {"n1"}, 2: {"n2"}, 3: {"n3"}, 4: {"n4"}, 5: {"n5a", "n5b"}, 6: {"n6"}, 7: {"n7"}, 8: {"n8"}}

const waitAfterN4 = 25 * time.Millisecond

type runState struct {
	Thread    string    `json:"thread"`
	Done      []string  `json:"done"`
	WaitUntil time.Time `json:"wait_until,omitzero"`
}

type runUpdate struct {
	Node      string    `json:"node"`
	WaitUntil time.Time `json:"wait_until,omitzero"`
}

func applyUpdate(s runState, u runUpdate) (runState, error) {
	s.Done = append(append([]string(nil), s.Done...), u.Node)
	if !u.WaitUntil.IsZero() {
		s.WaitUntil = u.WaitUntil
	}
	return s, nil
}

// buildGraph returns the test graph; each node works for a few milliseconds
// and then appends "thread node round" to the marker file: a line in the file
// means the node's work was done.
func buildGraph(store checkpoint.Store, marker *os.File, round string) (*graph.Compiled[runState, runUpdate], error) {
	g := graph.New(graph.Config[runState, runUpdate]{Apply: applyUpdate, Store: store})
	node := func(name string) graph.NodeFunc[runState, runUpdate] {
		return func(ctx context.Context, s runState) (runUpdate, error) {
			select {
			case <-time.After(time.Duration(1+rand.IntN(8)) * time.Millisecond):
			case <-ctx.Done():
				return runUpdate{}, ctx.Err()
			}
			if _, err := fmt.Fprintf(marker, "%s %s %s\n", s.Thread, name, round); err != nil {
				return runUpdate{}, err
			}
			u := runUpdate{Node: name}
			if name == "n4" {
				u.WaitUntil = time.Now().Add(waitAfterN4)
			}
			return u, nil
		}
	}
	for _, nodes := range stepNodes[1:] {
		for _, n := range nodes {
			g.AddNode(n, node(n))
		}
	}
	g.SetEntry("n1")
	g.AddEdge("n1", "n2").AddEdge("n2", "n3").AddEdge("n3", "n4")
	g.AddConditionalEdges("n4", func(s runState) graph.Route {
		return graph.Route{To: []string{"n5a", "n5b"}, NotBefore: s.WaitUntil}
	}, "n5a", "n5b")
	g.AddEdge("n5a", "n6").AddEdge("n5b", "n6").AddEdge("n6", "n7").AddEdge("n7", "n8").AddEdge("n8", graph.End)
	return g.Compile()
}

// childMain runs (or resumes) every thread of envThreads concurrently and
// prints, on stdout, "ACK thread step checkpoint" after each checkpoint Put
// returned, "WAIT thread" when a run starts a durable wait, "DONE thread" when
// a thread's run is finished, and "ERR ..." on any failure (then exits 1).
func childMain() int {
	store, err := sqlite.New(sqlite.Config{Path: os.Getenv(envDB)})
	if err != nil {
		fmt.Printf("ERR open store: %v\n", err)
		return 1
	}
	defer store.Close()
	marker, err := os.OpenFile(os.Getenv(envMarker), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Printf("ERR open marker: %v\n", err)
		return 1
	}
	defer marker.Close()
	c, err := buildGraph(store, marker, os.Getenv(envRound))
	if err != nil {
		fmt.Printf("ERR compile: %v\n", err)
		return 1
	}
	var wg sync.WaitGroup
	sayer := killtest.NewSayer(os.Stdout)
	say := sayer.Say
	ctx := context.Background()
	for _, thread := range strings.Split(os.Getenv(envThreads), ",") {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := runThread(ctx, c, store, thread, say); err != nil {
				say("ERR %s: %v", thread, err)
			}
		}()
	}
	wg.Wait()
	if sayer.Failed() {
		return 1
	}
	return 0
}

func runThread(ctx context.Context, c *graph.Compiled[runState, runUpdate], store checkpoint.Store, thread string, say func(string, ...any)) error {
	var events func(func(graph.Event, error) bool)
	t, err := store.Get(ctx, thread, uuid.Nil)
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		events = c.Stream(ctx, thread, runState{Thread: thread})
	case err != nil:
		return err
	case graph.StatusOf(t) == graph.StatusDone:
		say("DONE %s", thread)
		return nil
	default:
		events = c.ResumeStream(ctx, thread, nil)
	}
	for e, err := range events {
		if err != nil {
			return err
		}
		switch e.Kind {
		case graph.EventCheckpoint:
			say("ACK %s %d %s", thread, e.Step, e.Checkpoint)
		case graph.EventWait:
			say("WAIT %s", thread)
		}
	}
	t, err = store.Get(ctx, thread, uuid.Nil)
	if err != nil {
		return err
	}
	if st := graph.StatusOf(t); st != graph.StatusDone {
		return fmt.Errorf("run ended with status %s", st)
	}
	say("DONE %s", thread)
	return nil
}

func TestMain(m *testing.M) {
	if os.Getenv(envChild) == "1" {
		os.Exit(childMain())
	}
	os.Exit(m.Run())
}
