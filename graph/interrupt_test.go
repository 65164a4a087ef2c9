package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

type question struct {
	Ask string `json:"ask"`
}

// asker interrupts with one question per entry of asks, in turn, and returns
// the last answer as its update once every question has an answer. It counts
// its executions under name.
func asker(cnt *counter, name string, asks ...string) graph.NodeFunc[tstate, tupd] {
	var answers []string
	return func(ctx context.Context, s tstate) (tupd, error) {
		cnt.inc(name)
		if v, ok := graph.ResumeValue(ctx); ok {
			var a string
			if err := json.Unmarshal(v, &a); err != nil {
				return tupd{}, err
			}
			answers = append(answers, a)
		}
		if len(answers) < len(asks) {
			return tupd{}, graph.Interrupt(question{Ask: asks[len(answers)]})
		}
		return tupd{Log: name, N: 1, Answer: answers[len(answers)-1]}, nil
	}
}

func TestInterruptThenResume(t *testing.T) {
	cnt := newCounter()
	c := chain(cnt, nil, asker(cnt, "b", "proceed?"))
	ctx := context.Background()

	res, err := c.Run(ctx, "t", tstate{})
	if err != nil || res.Status != graph.StatusInterrupted {
		t.Fatalf("run: %v, status %s", err, res.Status)
	}
	if len(res.Interrupts) != 1 || res.Interrupts[0].Node != "b" || string(res.Interrupts[0].Payload) != `{"ask":"proceed?"}` {
		t.Fatalf("interrupts %+v", res.Interrupts)
	}
	ev := eventsOf(res.Trace.Events(), graph.EventInterrupt)
	if len(ev) != 1 || ev[0].Node != "b" || ev[0].Step != 2 {
		t.Fatalf("interrupt events %+v", ev)
	}
	if tu := latest(t, c, "t"); graph.StatusOf(tu) != graph.StatusInterrupted || len(graph.Interrupts(tu)) != 1 {
		t.Fatalf("stored %+v", tu)
	}
	// Resume without a value only reports the pending question.
	res, err = c.Resume(ctx, "t", nil)
	if err != nil || res.Status != graph.StatusInterrupted || len(res.Interrupts) != 1 || cnt.get("b") != 1 {
		t.Fatalf("resume(nil): %v, %+v, b ran %d", err, res, cnt.get("b"))
	}

	res, err = c.Resume(ctx, "t", "yes")
	if err != nil || res.Status != graph.StatusDone {
		t.Fatalf("resume: %v, %+v", err, res)
	}
	if res.State.Answer != "yes" || !slices.Equal(res.State.Log, []string{"a", "b", "c"}) {
		t.Fatalf("state %+v", res.State)
	}
	if cnt.get("a") != 1 || cnt.get("b") != 2 || cnt.get("c") != 1 {
		t.Fatalf("executions %v", cnt.n)
	}
	if _, err := c.Resume(ctx, "t", "again"); !errors.Is(err, graph.ErrNotInterrupted) {
		t.Fatalf("answering a finished thread: %v", err)
	}
	// The answer was stored in its own checkpoint, with the step it answers.
	cps, err := c.Store().List(ctx, "t", checkpoint.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	steps := make([]int, len(cps))
	for i, cp := range cps {
		steps[i] = cp.Step
	}
	if !slices.Equal(steps, []int{3, 2, 1, 1, 0}) {
		t.Fatalf("checkpoint steps, newest first: %v", steps)
	}
}

func TestInterruptTwice(t *testing.T) {
	cnt := newCounter()
	c := chain(cnt, nil, asker(cnt, "b", "first?", "second?"))
	ctx := context.Background()
	if res, err := c.Run(ctx, "t", tstate{}); err != nil || res.Status != graph.StatusInterrupted {
		t.Fatalf("run: %v %+v", err, res)
	}
	res, err := c.Resume(ctx, "t", "one")
	if err != nil || res.Status != graph.StatusInterrupted || string(res.Interrupts[0].Payload) != `{"ask":"second?"}` {
		t.Fatalf("first answer: %v, %+v", err, res)
	}
	// The new question is pending, not mistaken for answered.
	if res, err := c.Resume(ctx, "t", nil); err != nil || res.Status != graph.StatusInterrupted || string(res.Interrupts[0].Payload) != `{"ask":"second?"}` {
		t.Fatalf("resume(nil) after the second question: %v %+v", err, res)
	}
	res, err = c.Resume(ctx, "t", "two")
	if err != nil || res.Status != graph.StatusDone || res.State.Answer != "two" {
		t.Fatalf("second answer: %v, %+v", err, res)
	}
	if cnt.get("b") != 3 || cnt.get("c") != 1 {
		t.Fatalf("executions %v", cnt.n)
	}
}

func TestAnswerSurvivesACrash(t *testing.T) {
	// The run is answered, then stops inside the re-entered node before it
	// finishes; Resume(nil) must re-enter it with the answer already given.
	cnt := newCounter()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen []string
	c := chain(cnt, nil, func(nctx context.Context, s tstate) (tupd, error) {
		cnt.inc("b")
		v, ok := graph.ResumeValue(nctx)
		if !ok {
			return tupd{}, graph.Interrupt("ok?")
		}
		seen = append(seen, string(v))
		if len(seen) == 1 {
			cancel()
			return tupd{}, nctx.Err()
		}
		return tupd{Log: "b", N: 1}, nil
	})
	if _, err := c.Run(context.Background(), "t", tstate{}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Resume(ctx, "t", "yes")
	if !errors.Is(err, context.Canceled) || res.Status != graph.StatusCanceled {
		t.Fatalf("answered run: %v, %+v", err, res)
	}
	if st := graph.StatusOf(latest(t, c, "t")); st != graph.StatusCanceled {
		t.Fatalf("stored status after the answer: %s", st)
	}
	res, err = c.Resume(context.Background(), "t", nil)
	if err != nil || res.Status != graph.StatusDone {
		t.Fatalf("resume after crash: %v, %+v", err, res)
	}
	if !slices.Equal(seen, []string{`"yes"`, `"yes"`}) || cnt.get("b") != 3 {
		t.Fatalf("b saw %v and ran %d times", seen, cnt.get("b"))
	}
}

func TestInterruptInOneOfSeveralBranches(t *testing.T) {
	cnt := newCounter()
	c := spokes(cnt, nil, asker(cnt, "y", "which?"))
	ctx := context.Background()
	res, err := c.Run(ctx, "t", tstate{})
	if err != nil || res.Status != graph.StatusInterrupted || len(res.Interrupts) != 1 || res.Interrupts[0].Node != "y" {
		t.Fatalf("run: %v, %+v", err, res)
	}
	res, err = c.Resume(ctx, "t", "blue")
	if err != nil || res.Status != graph.StatusDone {
		t.Fatalf("resume: %v, %+v", err, res)
	}
	// The finished siblings did not run again; their updates kept route order.
	if cnt.get("x") != 1 || cnt.get("z") != 1 || cnt.get("y") != 2 || cnt.get("join") != 1 {
		t.Fatalf("executions %v", cnt.n)
	}
	if want := []string{"hub", "x", "y", "z", "join"}; !slices.Equal(res.State.Log, want) || res.State.Answer != "blue" {
		t.Fatalf("state %+v", res.State)
	}
}

func TestInterruptInTwoBranches(t *testing.T) {
	// Both interrupted branches get the one answer; the third does not rerun.
	cnt := newCounter()
	g := newGraph(nil)
	g.AddNode("hub", nop)
	g.AddConditionalEdges("hub", func(tstate) graph.Route { return graph.Route{To: []string{"p", "q", "r"}} }, "p", "q", "r")
	g.AddNode("p", asker(cnt, "p", "p?")).AddEdge("p", graph.End)
	g.AddNode("q", logNode(cnt, "q")).AddEdge("q", graph.End)
	g.AddNode("r", asker(cnt, "r", "r?")).AddEdge("r", graph.End)
	c := compile(t, g.SetEntry("hub"))
	res, err := c.Run(context.Background(), "t", tstate{})
	if err != nil || len(res.Interrupts) != 2 || res.Interrupts[0].Node != "p" || res.Interrupts[1].Node != "r" {
		t.Fatalf("run: %v, %+v", err, res.Interrupts)
	}
	res, err = c.Resume(context.Background(), "t", "go")
	if err != nil || !slices.Equal(res.State.Log, []string{"p", "q", "r"}) {
		t.Fatalf("resume: %v, %+v", err, res)
	}
	if cnt.get("p") != 2 || cnt.get("q") != 1 || cnt.get("r") != 2 {
		t.Fatalf("executions %v", cnt.n)
	}
}

func TestInterruptPayloadMustEncode(t *testing.T) {
	cnt := newCounter()
	c := chain(cnt, nil, func(context.Context, tstate) (tupd, error) {
		return tupd{}, graph.Interrupt(make(chan int))
	})
	res, err := c.Run(context.Background(), "t", tstate{})
	if !errors.Is(err, graph.ErrNodeFailed) || res.Status != graph.StatusFailed {
		t.Fatalf("run: %v, %+v", err, res)
	}
	if _, ok := graph.IsInterrupt(err); ok {
		t.Fatal("an unencodable interrupt counts as an interrupt")
	}
}

// crashingStore is the memory store whose PutTuple crashes once: before
// its transaction commits (nothing stored) or after (all stored), the
// error being all the engine sees either way.
type crashingStore struct {
	*memory.Store
	crash       atomic.Bool
	afterCommit bool
}

var errCrash = errors.New("the process died")

func (s *crashingStore) PutTuple(ctx context.Context, t checkpoint.Tuple) error {
	if !s.crash.CompareAndSwap(true, false) {
		return s.Store.PutTuple(ctx, t)
	}
	if s.afterCommit {
		_ = s.Store.PutTuple(ctx, t)
	}
	return errCrash
}

// An answer is stored whole or not at all: a crash while it is written
// leaves the thread interrupted with its question (answer it again), or
// cut with the answer stored (Resume(nil) re-enters the node with it);
// never cut without the answer, which would re-enter the node as if
// nobody had answered.
func TestAnswerStoredWholeOrNotAtAll(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(map[bool]string{false: "before commit", true: "after commit"}[after], func(t *testing.T) {
			store := &crashingStore{Store: memory.New(), afterCommit: after}
			cnt := newCounter()
			c := chain(cnt, store, asker(cnt, "b", "proceed?"))
			ctx := context.Background()
			if res, err := c.Run(ctx, "t", tstate{}); err != nil || res.Status != graph.StatusInterrupted {
				t.Fatalf("run: %v, %+v", err, res)
			}
			store.crash.Store(true)
			if _, err := c.Resume(ctx, "t", "yes"); !errors.Is(err, errCrash) {
				t.Fatalf("resume during the crash: %v", err)
			}
			tu := latest(t, c, "t")
			var res graph.Result[tstate]
			var err error
			if after {
				if graph.StatusOf(tu) != graph.StatusCanceled || len(tu.Writes) != 1 || tu.Writes[0].Kind != checkpoint.WriteResume {
					t.Fatalf("after a crash once the answer was stored: status %s, writes %+v", graph.StatusOf(tu), tu.Writes)
				}
				if _, err := c.Resume(ctx, "t", "yes"); !errors.Is(err, graph.ErrNotInterrupted) {
					t.Fatalf("answering again: %v", err)
				}
				res, err = c.Resume(ctx, "t", nil)
			} else {
				if graph.StatusOf(tu) != graph.StatusInterrupted || len(graph.Interrupts(tu)) != 1 {
					t.Fatalf("after a crash before the answer was stored: status %s, writes %+v", graph.StatusOf(tu), tu.Writes)
				}
				res, err = c.Resume(ctx, "t", "yes")
			}
			if err != nil || res.Status != graph.StatusDone || res.State.Answer != "yes" {
				t.Fatalf("resume after the crash: %v, %+v", err, res)
			}
			if cnt.get("b") != 2 {
				t.Fatalf("b ran %d times, want 2 (asked, then answered once)", cnt.get("b"))
			}
		})
	}
}
