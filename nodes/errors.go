package nodes

import (
	"errors"
	"fmt"
	"strings"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/prompts"
	"github.com/capgraph/capgraph/state"
)

// Sentinel kinds of the nodes' own failures.
var (
	// ErrFormat: a model reply could not be parsed (RETRIABLE: re-prompted
	// with the exact parse error and the expected shape).
	ErrFormat = errors.New("nodes: unusable model reply")
	// ErrUnknownCapability: a plan names a capability that is not registered
	// (RECLASSIFICATION).
	ErrUnknownCapability = errors.New("nodes: plan uses an unknown capability")
	// ErrInvalidInputKey: a plan step reads a context key that does not exist
	// or that a later step produces (REPLANNING).
	ErrInvalidInputKey = errors.New("nodes: plan reads an invalid context key")
	// ErrUnrequestedChange: a plan has a side-effecting step the user did not
	// ask for, or one that changes another target or value than the user
	// stated (REPLANNING). The PlanError's Cause wraps
	// intent.ErrNoChange or intent.ErrMismatch.
	ErrUnrequestedChange = errors.New("nodes: plan changes what the user did not ask to change")
	// ErrNoTask: a node needing a task ran before task extraction.
	ErrNoTask = errors.New("nodes: no task")
)

// Metadata keys the nodes put on classifications, in addition to the
// capabilities Meta* keys.
const (
	MetaParseError    = "parse_error"
	MetaExpectedShape = "expected_shape"
	MetaPreviousReply = "previous_reply"
	MetaAvailableKeys = "available_keys"
	MetaUnknown       = "unknown_capabilities"
)

// maxReplyInPrompt bounds how much of a bad reply is shown again.
const maxReplyInPrompt = 2000

// FormatError is an unparsable model reply.
type FormatError struct {
	// Node that asked.
	Node string
	// Problem is the exact parse or validation error.
	Problem string
	// Shape describes the expected reply.
	Shape string
	// Reply is the model's reply.
	Reply string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s: the model's reply is unusable: %s (expected %s)", e.Node, e.Problem, e.Shape)
}
func (e *FormatError) Unwrap() error { return ErrFormat }

// formatError is a RETRIABLE format failure carrying what the next attempt
// must show the model.
func formatError(node, problem, shape, reply string, extra map[string]any) *capabilities.Error {
	fe := &FormatError{Node: node, Problem: problem, Shape: shape, Reply: reply}
	meta := map[string]any{MetaParseError: problem, MetaExpectedShape: shape, MetaPreviousReply: truncate(reply, maxReplyInPrompt)}
	for k, v := range extra {
		meta[k] = v
	}
	return &capabilities.Error{Severity: capabilities.Retriable, Kind: capabilities.KindFormat,
		UserMessage: fmt.Sprintf("the %s model's reply was not usable: %s", node, problem), Metadata: meta, Err: fe}
}

// formatRetry returns what the node's previous attempt got wrong when it
// failed with a format error (its parse error, the shape wanted and its
// reply), for the next attempt's prompt; the zero value otherwise.
func formatRetry(e *state.ErrorInfo, node string) prompts.FormatRetry {
	if e == nil || e.Node != node || e.Classification.Kind != capabilities.KindFormat {
		return prompts.FormatRetry{}
	}
	md := e.Classification.Metadata
	var r prompts.FormatRetry
	r.FormatError, _ = md[MetaParseError].(string)
	if r.FormatError == "" {
		r.FormatError = e.Message
	}
	r.ExpectedShape, _ = md[MetaExpectedShape].(string)
	r.PreviousReply, _ = md[MetaPreviousReply].(string)
	return r
}

// PlanError is a plan that parsed but cannot run.
type PlanError struct {
	// Kind is ErrUnknownCapability, ErrInvalidInputKey, ErrUnrequestedChange
	// or ErrNotFinite.
	Kind    error
	Step    int
	Problem string
	// Unknown lists unknown capabilities; Available lists usable context keys.
	Unknown   []string
	Available []string
	// Cause is the underlying error, if any (intent.ErrNoChange…).
	Cause error
	// Operator says an ErrUnrequestedChange to the operator in plain words
	// (Problem is the instruction to the planning model); Action is the
	// refused step's action as far as the plan says.
	Operator string
	Action   capabilities.Action
}

func (e *PlanError) Error() string {
	return fmt.Sprintf("plan step %d: %s", e.Step+1, e.Problem)
}

// Unwrap returns Kind and Cause, so errors.Is finds either.
func (e *PlanError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Cause}
}

func (e *PlanError) capabilityError() *capabilities.Error {
	if errors.Is(e.Kind, ErrUnknownCapability) {
		return &capabilities.Error{Severity: capabilities.Reclassification, Kind: capabilities.KindNotFound,
			UserMessage: e.Error(), Err: e, Metadata: map[string]any{
				capabilities.MetaReclassificationReason: fmt.Sprintf("the plan needed capabilities that are not available: %s", strings.Join(e.Unknown, ", ")),
				MetaUnknown:                             e.Unknown}}
	}
	meta := map[string]any{capabilities.MetaReplanningReason: e.Problem}
	user := e.Error()
	if errors.Is(e.Kind, ErrUnrequestedChange) {
		user = e.Operator
	} else {
		meta[MetaAvailableKeys] = e.Available
	}
	return &capabilities.Error{Severity: capabilities.Replanning, Kind: capabilities.KindInvalidInput,
		UserMessage: user, Err: e, Metadata: meta}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
