package runs

import (
	"reflect"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/state"
)

// A field added to agent.Event must be looked at by keptCompact, or a
// compact entry would drop it.
func TestLogEntryKnowsEveryEventField(t *testing.T) {
	kept := []string{"Type", "Thread", "RunID", "Time", "Seq", "Node", "Text", "Duration"}
	checked := []string{"Step", "Total", "Capability", "Attempt", "Capabilities", "Plan", "Retry", "Approval", "Message",
		"Usage", "Call", "Status", "NotBefore", "Err", "Audit", "Artifact", "Detail"}
	rt := reflect.TypeFor[agent.Event]()
	for i := range rt.NumField() {
		if name := rt.Field(i).Name; !slices.Contains(kept, name) && !slices.Contains(checked, name) {
			t.Errorf("agent.Event.%s is neither kept by a compact log entry nor checked by keptCompact", name)
		}
	}
	if got := unsafe.Sizeof(logEntry{}); got > 96 {
		t.Errorf("a log entry takes %d bytes; the point is to stay far below an agent.Event's %d", got, unsafe.Sizeof(agent.Event{}))
	}
}

// Every event comes back from the log exactly as it went in, compact or
// whole, and since numbers from where the reader stands.
func TestRunLogGivesBackWhatItKept(t *testing.T) {
	r := started(&Run[*testRun]{ID: "run-1", Thread: "th", notify: make(chan struct{}), max: 5})
	now := time.Date(2026, 11, 28, 4, 0, 0, 123, time.UTC)
	in := []agent.Event{
		{Type: agent.EventRunStart, Thread: "th", Time: now},
		{Type: agent.EventToken, Thread: "th", Time: now, Node: "respond", Text: "The beam "},
		{Type: agent.EventToken, Thread: "th", Time: now, Node: "respond", Text: "current is 500 mA."},
		{Type: agent.EventNodeEnd, Thread: "th", Time: now, Node: "respond", Duration: time.Second},
		{Type: agent.EventPlan, Thread: "th", Time: now, Plan: &state.Plan{}, Total: 2},
		{Type: agent.EventStatus, Thread: "elsewhere", Time: now, Text: "another thread's id is kept"},
		{Type: agent.EventDone, Thread: "th", Time: now, Status: agent.RunAnswered},
	}
	var want []agent.Event
	for _, ev := range in {
		want = append(want, r.Append(ev))
	}
	got, _, _ := r.Since(0, nil)
	if !reflect.DeepEqual(got, want[len(want)-5:]) {
		t.Fatalf("since(0) of a log bounded to 5:\n got %+v\nwant %+v", got, want[len(want)-5:])
	}
	got, _, _ = r.Since(want[4].Seq, nil)
	if !reflect.DeepEqual(got, want[5:]) {
		t.Fatalf("since(%d): got %+v, want %+v", want[4].Seq, got, want[5:])
	}
	if got, _, _ := r.Since(want[len(want)-1].Seq, nil); len(got) != 0 {
		t.Fatalf("since the last: %+v", got)
	}
	compact := 0
	for _, e := range r.events {
		if e.full == nil {
			compact++
		}
	}
	if compact != 2 { // a token and a node's end among the five kept; the status names another thread
		t.Errorf("%d compact entries of 5; want 2 (%+v)", compact, r.events)
	}
}
