package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/postgres/pgtest"
)

type pstate struct {
	Log []string `json:"log"`
}

// TestPruneBesideReplicaRuns: one replica runs graphs (a chain, then two
// branches in one step, so pending writes too) on several threads, each
// thread three runs, the last of them stopped at an interrupt, while a
// second replica prunes the whole store over and over. Every run succeeds;
// afterwards each thread keeps the last checkpoint of its two finished runs
// and the whole interrupted run, which resumes and finishes as if nothing
// had been pruned.
func TestPruneBesideReplicaRuns(t *testing.T) {
	rs := pgtest.Replicas(t, 2)
	runner, pruner := rs[0], rs[1]
	ctx := context.Background()
	g := graph.New(graph.Config[pstate, pstate]{Store: runner, Apply: func(s, u pstate) (pstate, error) {
		s.Log = append(slices.Clip(s.Log), u.Log...)
		return s, nil
	}})
	node := func(name string) graph.NodeFunc[pstate, pstate] {
		return func(context.Context, pstate) (pstate, error) { return pstate{Log: []string{name}}, nil }
	}
	g.AddNode("a", node("a")).AddNode("b", node("b")).AddNode("c", node("c")).AddNode("d", node("d"))
	g.AddNode("ask", func(ctx context.Context, s pstate) (pstate, error) {
		if v, ok := graph.ResumeValue(ctx); ok {
			return pstate{Log: []string{"answer " + string(v)}}, nil
		}
		if len(s.Log) > 0 && s.Log[0] == "interrupt" {
			return pstate{}, graph.Interrupt("ok?")
		}
		return pstate{Log: []string{"ask"}}, nil
	})
	g.AddEdge("a", "b")
	g.AddConditionalEdges("b", func(pstate) graph.Route { return graph.Route{To: []string{"c", "d"}} }, "c", "d")
	g.AddEdge("c", "ask").AddEdge("d", "ask").AddEdge("ask", graph.End)
	c, err := g.SetEntry("a").Compile()
	if err != nil {
		t.Fatal(err)
	}

	const threads = 6
	done := make(chan struct{})
	var (
		wg     sync.WaitGroup
		pruned int64
		perr   error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			res, err := pruner.Prune(ctx, checkpoint.PruneOptions{})
			if err != nil {
				perr = err
				return
			}
			pruned += res.Checkpoints
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	var rwg sync.WaitGroup
	errs := make(chan error, threads)
	for i := range threads {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			th := fmt.Sprint("t", i)
			for run := range 3 {
				in := pstate{}
				if run == 2 {
					in.Log = []string{"interrupt"}
				}
				res, err := c.Run(ctx, th, in)
				want := graph.StatusDone
				if run == 2 {
					want = graph.StatusInterrupted
				}
				if err != nil || res.Status != want {
					errs <- fmt.Errorf("%s run %d: %v, %s", th, run, err, res.Status)
					return
				}
			}
		}()
	}
	rwg.Wait()
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if perr != nil {
		t.Fatalf("Prune on the other replica: %v", perr)
	}
	t.Logf("the second replica pruned %d checkpoints while the runs went on", pruned)
	if _, err := pruner.Prune(ctx, checkpoint.PruneOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range threads {
		th := fmt.Sprint("t", i)
		l, err := runner.List(ctx, th, checkpoint.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// 2 finished runs' last checkpoints + the interrupted run's 4
		// (input, a, b, the branches' step; ask's interrupt is a write).
		if len(l) != 2+4 {
			t.Errorf("%s keeps %d checkpoints, want 6", th, len(l))
		}
		res, err := c.Resume(ctx, th, "yes")
		if err != nil || res.Status != graph.StatusDone || !slices.Equal(res.State.Log, []string{"interrupt", "a", "b", "c", "d", `answer "yes"`}) {
			t.Errorf("%s resume after pruning: %v, %s, %v", th, err, res.Status, res.State.Log)
		}
	}
	res, err := pruner.Prune(ctx, checkpoint.PruneOptions{})
	if err != nil || res.Checkpoints != threads*(4+1) {
		t.Errorf("Prune after the interrupted runs finished: %+v, %v; want %d checkpoints (each run's 4 and the answer's)", res, err, threads*5)
	}
}
