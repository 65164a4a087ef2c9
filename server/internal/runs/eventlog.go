package runs

import (
	"time"

	"github.com/capgraph/capgraph/agent"
)

// logEntry is how a run's log keeps an event: most of a run's events (its
// tokens, statuses, node starts and ends) carry a type, a time, a node, a
// text and a duration, and are kept as those — 96 bytes where an
// agent.Event takes 312,
// which a streaming answer of a few hundred chunks would otherwise hold
// for as long as its run is kept. Any other event is kept whole (full).
type logEntry struct {
	seq  int
	typ  agent.EventType
	time time.Time
	node string
	text string
	took time.Duration
	full *agent.Event
}

// entryOf is ev as the log of the run (runID, thread) keeps it.
func entryOf(ev agent.Event, runID, thread string) logEntry {
	if ev.RunID == runID && ev.Thread == thread && keptCompact(ev) {
		return logEntry{seq: ev.Seq, typ: ev.Type, time: ev.Time, node: ev.Node, text: ev.Text, took: ev.Duration}
	}
	full := ev // escapes here only, not on the compact path
	return logEntry{seq: ev.Seq, full: &full}
}

// event is the entry as the event it keeps.
func (e *logEntry) event(runID, thread string) agent.Event {
	if e.full != nil {
		return *e.full
	}
	return agent.Event{Type: e.typ, Thread: thread, RunID: runID, Time: e.time, Seq: e.seq, Node: e.node, Text: e.text, Duration: e.took}
}

// keptCompact reports whether ev carries nothing but what a compact
// entry keeps. TestLogEntryKnowsEveryEventField fails when agent.Event
// gains a field this does not look at.
func keptCompact(ev agent.Event) bool {
	return ev.Step == 0 && ev.Total == 0 && ev.Capability == "" && ev.Attempt == 0 && ev.Capabilities == nil &&
		ev.Plan == nil && ev.Retry == nil && ev.Approval == nil && ev.Message == nil && ev.Usage == nil && ev.Call == nil &&
		ev.Status == "" && ev.NotBefore.IsZero() && ev.Err == "" && ev.Audit == nil &&
		ev.Artifact == nil && ev.Detail == nil
}
