package graph

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel error kinds. Every typed error below matches one of them with errors.Is.
var (
	// ErrBuild: the graph definition is invalid (see *BuildError).
	ErrBuild = errors.New("graph: invalid graph")
	// ErrInvalidTransition: a route named a node the graph does not declare.
	ErrInvalidTransition = errors.New("graph: invalid transition")
	// ErrStepLimit: the run exceeded its step limit (safety cap).
	ErrStepLimit = errors.New("graph: step limit exceeded")
	// ErrPanic: a node panicked.
	ErrPanic = errors.New("graph: node panicked")
	// ErrNodeFailed: a node returned an error.
	ErrNodeFailed = errors.New("graph: node failed")
	// ErrNoRun: Resume found nothing to continue on the thread.
	ErrNoRun = errors.New("graph: nothing to resume")
	// ErrNotInterrupted: a resume value was given but the thread is not interrupted.
	ErrNotInterrupted = errors.New("graph: thread is not interrupted")
	// ErrNoThread: Run, Stream or Resume was called with an empty thread id.
	ErrNoThread = errors.New("graph: thread id is empty")
	// ErrEncode: a state, an update, an interrupt's payload or a resume
	// value could not be encoded (see *EncodeError).
	ErrEncode = errors.New("graph: cannot encode")
)

// BuildProblemKind classifies one problem found by Compile.
type BuildProblemKind string

const (
	ProblemNoEntry         BuildProblemKind = "no_entry"          // SetEntry was not called
	ProblemUnknownEntry    BuildProblemKind = "unknown_entry"     // the entry names no declared node
	ProblemDuplicateNode   BuildProblemKind = "duplicate_node"    // AddNode twice with one name
	ProblemReservedName    BuildProblemKind = "reserved_name"     // a node named "" or End
	ProblemNilNode         BuildProblemKind = "nil_node"          // AddNode with a nil function
	ProblemUnknownSource   BuildProblemKind = "unknown_source"    // an edge or SetTerminal names an undeclared node
	ProblemUnknownTarget   BuildProblemKind = "unknown_target"    // an edge leads to an undeclared node
	ProblemUnreachable     BuildProblemKind = "unreachable"       // no path from the entry reaches the node
	ProblemNoOutgoingEdge  BuildProblemKind = "no_outgoing_edge"  // a non-terminal node without edge
	ProblemTerminalHasEdge BuildProblemKind = "terminal_has_edge" // a terminal node with an edge
	// ProblemTwoEdgeKinds: a second outgoing edge on one node (static or
	// conditional; a node has exactly one, fan-out is a conditional edge).
	ProblemTwoEdgeKinds BuildProblemKind = "static_and_conditional"
	ProblemNoApply      BuildProblemKind = "no_apply" // Config.Apply is nil
	// ProblemUnknownDurability: Config.Durability is neither sync nor async
	// (Target holds it).
	ProblemUnknownDurability BuildProblemKind = "unknown_durability"
	ProblemNilRoute          BuildProblemKind = "nil_route" // AddConditionalEdges with a nil route
)

// BuildProblem is one thing wrong with a graph definition.
type BuildProblem struct {
	Kind   BuildProblemKind
	Node   string // the node concerned, if any
	Target string // the edge target concerned, if any
}

func (p BuildProblem) String() string {
	switch {
	case p.Target != "":
		return fmt.Sprintf("%s: %s -> %s", p.Kind, p.Node, p.Target)
	case p.Node != "":
		return fmt.Sprintf("%s: %s", p.Kind, p.Node)
	}
	return string(p.Kind)
}

// BuildError is returned by Compile; it lists every problem found, in a stable order.
type BuildError struct {
	Problems []BuildProblem
}

func (e *BuildError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return "graph: invalid graph: " + strings.Join(parts, "; ")
}

func (e *BuildError) Unwrap() error { return ErrBuild }

// Has reports whether the error lists a problem of kind k.
func (e *BuildError) Has(k BuildProblemKind) bool {
	for _, p := range e.Problems {
		if p.Kind == k {
			return true
		}
	}
	return false
}

// InvalidTransitionError: a route from From named To, which is not a declared
// destination of that edge.
type InvalidTransitionError struct {
	From, To string
}

func (e *InvalidTransitionError) Error() string {
	return fmt.Sprintf("graph: invalid transition from %q to %q", e.From, e.To)
}
func (e *InvalidTransitionError) Unwrap() error { return ErrInvalidTransition }

// StepLimitError: the run took more than Limit steps.
type StepLimitError struct {
	Limit int
	Next  []string // what would have run next
}

func (e *StepLimitError) Error() string {
	return fmt.Sprintf("graph: step limit %d exceeded (next: %s)", e.Limit, strings.Join(e.Next, ", "))
}
func (e *StepLimitError) Unwrap() error { return ErrStepLimit }

// PanicError is a panic recovered from a node, or from the Apply or route
// function while handling that node's update (Value then says where). Node
// is empty for a panic in the Codec, the Metadata function or the Store.
type PanicError struct {
	Node  string
	Value any
	Stack string
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("graph: node %q panicked: %v", e.Node, e.Value)
}
func (e *PanicError) Unwrap() error { return ErrPanic }

// NodeError wraps the error a node returned.
type NodeError struct {
	Node    string
	Step    int
	Attempt int
	Err     error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("graph: node %q failed at step %d: %v", e.Node, e.Step, e.Err)
}

// Unwrap exposes both the kind and the cause.
func (e *NodeError) Unwrap() []error { return []error{ErrNodeFailed, e.Err} }

// EncodeError: the engine could not encode What ("the state after step
// 3", "the interrupt payload") with the Codec (or, for payloads and
// resume values, as JSON). A run ends with it as it ends with a node's
// error: the checkpoint before stays the thread's last. A type that may hold
// what its encoding refuses (for JSON, ±Inf and NaN) encodes it in a form
// of its own instead (MarshalJSON, JSONAppender).
type EncodeError struct {
	What string
	Err  error
}

func (e *EncodeError) Error() string { return "graph: encode " + e.What + ": " + e.Err.Error() }

// Unwrap exposes both the kind and the cause.
func (e *EncodeError) Unwrap() []error { return []error{ErrEncode, e.Err} }
