package telemetry

import (
	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph"
)

// Interrupted reports whether a node_end event is a node pausing the run
// for a human (an approval): a pause, not a failure. The agent passes the
// graph's interrupt on as the event's error text; it is compared exactly
// with graph.InterruptError's own wording for that node.
func Interrupted(e agent.Event) bool {
	return e.Type == agent.EventNodeEnd && e.Err != "" && e.Err == (&graph.InterruptError{Node: e.Node}).Error()
}
