package cli

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/logging"
)

func checkpointFilter() checkpoint.ThreadFilter { return checkpoint.ThreadFilter{} }

// A run stopped between two steps (a crash, a shutdown) is finished by
// resumeStopped from its last checkpoint: the step that had completed does
// not run again, the stopped one does, and the thread ends answered.
func TestResumeStoppedFinishesCanceledRuns(t *testing.T) {
	var finds, reads atomic.Int32
	stop := make(chan struct{})
	find, _ := capabilities.Define(capabilities.Definition{
		Name: "find_sensor", Description: "Find the sensor of the beam", Provides: []string{"SENSOR"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use to read the beam sensor.",
			Examples: []capabilities.ClassifierExample{{Query: "read the beam sensor", Result: true, Reason: "sensor"}}},
		Run: func(ctx context.Context, s capabilities.Step) (capabilities.Output, error) {
			finds.Add(1)
			return capabilities.Result("SENSOR", "S1", "sensor S1"), nil
		},
	})
	read, _ := capabilities.Define(capabilities.Definition{
		Name: "read_sensor", Description: "Read the beam sensor value", Provides: []string{"VALUE"},
		Requires: []capabilities.Requirement{{Type: "SENSOR"}},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use to read the beam sensor.",
			Examples: []capabilities.ClassifierExample{{Query: "read the beam sensor", Result: true, Reason: "sensor"}}},
		Run: func(ctx context.Context, s capabilities.Step) (capabilities.Output, error) {
			if reads.Add(1) == 1 {
				close(stop) // the process "dies" here: the caller cancels
				<-ctx.Done()
				return capabilities.Output{}, ctx.Err()
			}
			return capabilities.Result("VALUE", 42.0, "sensor S1 reads 42.0"), nil
		},
	})
	reg := capabilities.NewRegistry()
	if err := reg.Register(find, read); err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	a, err := agent.New(agent.Config{Registry: reg, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-stop; cancel() }()
	for range a.Run(ctx, agent.TurnRequest{Thread: "t1", Input: "read the beam sensor"}) {
	}
	if _, status, err := a.State(context.Background(), "t1"); err != nil || status != agent.RunCanceled {
		t.Fatalf("before: status %s, %v", status, err)
	}
	n, err := resumeStopped(context.Background(), st, a, time.Now, logging.Nop())
	if err != nil || n != 1 {
		t.Fatalf("resumed %d, %v", n, err)
	}
	s, status, err := a.State(context.Background(), "t1")
	if err != nil || status != agent.RunAnswered {
		t.Fatalf("after: status %s, %v", status, err)
	}
	if m, _ := s.LastAssistant(); !strings.Contains(m.Content, "42.0") {
		t.Errorf("answer %q", m.Content)
	}
	if finds.Load() != 1 || reads.Load() != 2 {
		t.Errorf("find ran %d times, read %d times; want 1 and 2", finds.Load(), reads.Load())
	}
	// Nothing left to resume; an old stopped run is left alone.
	if n, _ := resumeStopped(context.Background(), st, a, time.Now, logging.Nop()); n != 0 {
		t.Errorf("resumed %d the second time", n)
	}
}

func TestResumeStoppedLeavesOldRuns(t *testing.T) {
	st := memory.New()
	reg := capabilities.NewRegistry()
	a, err := agent.New(agent.Config{Registry: reg, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	for range a.Run(context.Background(), agent.TurnRequest{Thread: "old", Input: "hello"}) {
	}
	later := func() time.Time { return time.Now().Add(resumeWindow + time.Hour) }
	if n, err := resumeStopped(context.Background(), st, a, later, logging.Nop()); n != 0 || err != nil {
		t.Errorf("resumed %d, %v", n, err)
	}
}
