package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Error kinds of MCP tool failures, beside the capabilities.Kind* ones.
const (
	// KindToolError: the tool ran and reported an error (isError).
	KindToolError = "tool_error"
	// KindOutcomeUnknown: a side-effecting tool that is not idempotent
	// timed out or lost its connection during the call: it may or may not
	// have acted, so it is not called again.
	KindOutcomeUnknown = "outcome_unknown"
)

// Metadata keys of the classifications of MCP tool failures (all of it is
// in the error report and shown to the planner).
const (
	MetaServer     = "mcp_server"
	MetaTool       = "mcp_tool"
	MetaToolOutput = "tool_output"
	MetaSchema     = "input_schema"
)

// maxSchemaText caps the input schema shown to the planner.
const maxSchemaText = 8 << 10

// Tool is one tool of an MCP server as a capability. Its parameters are the
// tool's arguments, checked against the tool's input schema before every
// call; its result is one value of its own context type (ContextType).
//
// It implements capabilities.SideEffecter and ActionDescriber (the action is
// the tool and its exact arguments, so an approval binds to them), and the
// classifier and orchestrator guides (the description, and the input schema
// for the planner).
type Tool struct {
	srv         *server
	tool        *sdk.Tool
	name        string
	contextType string
	description string
	guide       string
	schema      *jsonschema.Resolved // nil: left to the server to check
	schemaText  string
	sideEffects bool
	idempotent  bool
	isError     capabilities.Severity
	timeout     time.Duration
}

func newTool(srv *server, t *sdk.Tool, name string) (*Tool, error) {
	tc := srv.cfg.Tools[t.Name]
	c := &Tool{srv: srv, tool: t, name: name, contextType: strings.ToUpper(name) + "_RESULT",
		isError: tc.IsErrorSeverity, timeout: tc.Timeout}
	if c.isError == capabilities.SeverityUnset {
		c.isError = DefaultIsErrorSeverity
	}
	if c.timeout <= 0 {
		c.timeout = srv.cfg.timeout()
	}
	readOnly := t.Annotations != nil && t.Annotations.ReadOnlyHint
	if slices.Contains(srv.cfg.ReadOnlyTools, t.Name) {
		readOnly = true
	}
	c.sideEffects = !readOnly
	if tc.SideEffects != nil {
		c.sideEffects = *tc.SideEffects
	}
	c.idempotent = t.Annotations != nil && t.Annotations.IdempotentHint
	if tc.Idempotent != nil {
		c.idempotent = *tc.Idempotent
	}

	full := strings.TrimSpace(tc.Description)
	if full == "" {
		full = strings.TrimSpace(t.Description)
	}
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	if full == "" {
		full = strings.TrimSpace(title)
	}
	if full == "" {
		full = fmt.Sprintf("Call the tool %s of the MCP server %s.", t.Name, srv.cfg.Name)
	}
	c.guide = full
	c.description = firstParagraph(full, 300)

	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
	}
	c.schemaText = schemaText(raw)
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err == nil {
		if r, err := s.Resolve(nil); err == nil {
			c.schema = r
		} else {
			srv.log.Warn("MCP tool: input schema not understood; the server checks arguments alone", "server", srv.cfg.Name, "tool", t.Name, "error", err)
		}
	}
	return c, nil
}

// Name is the capability name: prefix_tool.
func (t *Tool) Name() string { return t.name }

// Description is the tool's description (its first paragraph).
func (t *Tool) Description() string { return t.description }

// Provides is the tool's own context type (ContextType).
func (t *Tool) Provides() []string { return []string{t.contextType} }

// Requires is nothing: a tool takes its arguments as parameters.
func (t *Tool) Requires() []capabilities.Requirement { return nil }

// ContextType is the context type of the tool's results: the capability
// name in upper case with _RESULT ("EVERYTHING_ECHO_RESULT").
func (t *Tool) ContextType() string { return t.contextType }

// Server is the name of the MCP server the tool belongs to.
func (t *Tool) Server() string { return t.srv.cfg.Name }

// ToolName is the tool's name on its server.
func (t *Tool) ToolName() string { return t.tool.Name }

// SideEffects reports whether the tool acts on the outside world: unless
// the configuration says otherwise, every tool the server does not annotate
// readOnlyHint (capabilities.SideEffecter).
func (t *Tool) SideEffects() bool { return t.sideEffects }

// ClassifierGuide gives the classifier the tool's whole description.
func (t *Tool) ClassifierGuide() *capabilities.ClassifierGuide {
	return &capabilities.ClassifierGuide{Instructions: t.guide}
}

// OrchestratorGuide shows the planner the tool's input schema.
func (t *Tool) OrchestratorGuide() *capabilities.OrchestratorGuide {
	var b strings.Builder
	fmt.Fprintf(&b, "%s calls the tool %q of the MCP server %q: %s\n", t.name, t.tool.Name, t.srv.cfg.Name, t.guide)
	b.WriteString("Give the tool's arguments as the step's parameters, exactly as its input schema describes")
	if req := t.required(); len(req) > 0 {
		fmt.Fprintf(&b, " (required: %s)", strings.Join(req, ", "))
	}
	fmt.Fprintf(&b, ":\n%s\nIt takes no inputs. Its result is a %s value: the tool's text, structured content and any images.", t.schemaText, t.contextType)
	if t.sideEffects {
		b.WriteString(" It acts on the outside world: plan it only when the user asks for that.")
	}
	return &capabilities.OrchestratorGuide{Instructions: b.String(), Priority: 50}
}

func (t *Tool) required() []string {
	if t.schema == nil || t.schema.Schema() == nil {
		return nil
	}
	return t.schema.Schema().Required
}

// DescribeAction is the call the step will make: the tool and its exact
// arguments, so an approval binds to them. Arguments that do not fit the
// schema fail here, before anyone is asked (capabilities.ActionDescriber).
func (t *Tool) DescribeAction(step capabilities.Step) (capabilities.Action, error) {
	args, err := t.arguments(step)
	if err != nil {
		return capabilities.Action{}, err
	}
	shown, _ := json.Marshal(args)
	return capabilities.Action{Capability: t.name,
		Changes: []capabilities.Change{{Target: "mcp:" + t.srv.cfg.Name + "/" + t.tool.Name, Value: map[string]any{"parameters": args}}},
		Summary: fmt.Sprintf("call the tool %s of the MCP server %s with %s", t.tool.Name, t.srv.cfg.Name, shown)}, nil
}

// arguments are the step's parameters, as JSON values, checked against the
// tool's input schema. A mismatch is REPLANNING, with the schema error and
// the schema for the planner.
func (t *Tool) arguments(step capabilities.Step) (map[string]any, error) {
	args := map[string]any{}
	if len(step.Parameters) > 0 {
		b, err := json.Marshal(step.Parameters)
		if err == nil {
			err = json.Unmarshal(b, &args)
		}
		if err != nil {
			return nil, t.invalid(fmt.Errorf("the parameters are not JSON: %w", err))
		}
	}
	if t.schema != nil {
		if err := t.schema.Validate(args); err != nil {
			return nil, t.invalid(err)
		}
	}
	return args, nil
}

func (t *Tool) invalid(err error) *capabilities.Error {
	reason := fmt.Sprintf("the parameters of %s do not fit the input schema of the MCP tool %s: %s", t.name, t.tool.Name, oneLine(err.Error()))
	// The message holds the cause: no Err, or the report would say it twice.
	return &capabilities.Error{Severity: capabilities.Replanning, Kind: capabilities.KindInvalidInput,
		UserMessage: reason,
		Metadata: map[string]any{MetaServer: t.srv.cfg.Name, MetaTool: t.tool.Name, capabilities.MetaTechnicalDetails: err.Error(),
			capabilities.MetaReplanningReason: reason, MetaSchema: t.schemaText,
			capabilities.MetaSuggestions: []string{"give " + t.name + " parameters that fit its input schema"}}}
}

// Execute calls the tool with the step's parameters. An error it knows
// left the tool uncalled, or that the tool itself reported (isError: the
// tool is taken at its word), is marked capabilities.NotApplied; any other
// failure of a side-effecting, non-idempotent tool leaves its outcome
// unknown, and the framework reports it unconfirmed instead of calling the
// tool again.
func (t *Tool) Execute(ctx context.Context, step capabilities.Step) (capabilities.Output, error) {
	args, err := t.arguments(step)
	if err != nil {
		return capabilities.Output{}, capabilities.NotApplied(err)
	}
	c, err := t.srv.session(ctx)
	if err != nil {
		return capabilities.Output{}, capabilities.NotApplied(err) // nothing was sent
	}
	cctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	res, err := c.sess.CallTool(cctx, &sdk.CallToolParams{Name: t.tool.Name, Arguments: args})
	if err != nil {
		return capabilities.Output{}, t.callError(ctx, cctx, c, err)
	}
	t.srv.succeeded()
	r := newResult(t.srv.cfg.Name, t.tool.Name, res)
	if res.IsError {
		return capabilities.Output{}, capabilities.NotApplied(t.toolError(r))
	}
	figs := r.figures()
	return capabilities.Output{Values: []capabilities.ContextValue{{Type: t.contextType, Value: r, Summary: r.Summary()}}, Artifacts: figs}, nil
}

// retrySafe reports whether a call whose outcome is unknown may be made
// again: the tool changes nothing, or repeating it changes nothing more.
func (t *Tool) retrySafe() bool { return !t.sideEffects || t.idempotent }

// Idempotent reports whether calling the tool again with the same arguments
// changes nothing more (the server's idempotentHint, or tools.NAME.idempotent
// in the configuration): the framework may then call it again when the
// outcome of a call is unknown (capabilities.Idempotenter).
func (t *Tool) Idempotent() bool { return t.retrySafe() }

func (t *Tool) meta(extra ...any) map[string]any {
	md := map[string]any{MetaServer: t.srv.cfg.Name, MetaTool: t.tool.Name}
	for i := 0; i+1 < len(extra); i += 2 {
		md[extra[i].(string)] = extra[i+1]
	}
	return md
}

// callError classifies a call that got no result.
func (t *Tool) callError(ctx, cctx context.Context, c conn, err error) error {
	if ctx.Err() != nil {
		return ctx.Err() // the turn was canceled or ran out of time: the agent decides
	}
	codes := rpcCodes(err)
	transport := errors.Is(err, sdk.ErrConnectionClosed) || slices.ContainsFunc(codes, func(c int64) bool {
		return c == codeClientClosing || c == codeServerClosing || c == codeRejected
	})
	switch {
	case len(codes) > 0 && !transport:
		t.srv.succeeded() // the server answered
		var werr *jsonrpc.Error
		errors.As(err, &werr)
		switch werr.Code {
		case jsonrpc.CodeInvalidParams:
			return capabilities.NotApplied(t.invalid(err))
		case jsonrpc.CodeMethodNotFound:
			return capabilities.NotApplied(&capabilities.Error{Severity: capabilities.Critical, Kind: capabilities.KindNotFound, Err: err, Metadata: t.meta(),
				UserMessage: fmt.Sprintf("the MCP server %q does not know the tool %s (any more)", t.srv.cfg.Name, t.tool.Name)})
		}
		return &capabilities.Error{Severity: capabilities.Critical, Kind: capabilities.KindServerError, Metadata: t.meta(capabilities.MetaTechnicalDetails, err.Error()),
			UserMessage: fmt.Sprintf("the MCP server %q failed to run the tool %s: %s", t.srv.cfg.Name, t.tool.Name, oneLine(werr.Message))}
	case cctx.Err() != nil:
		if !t.retrySafe() {
			return t.unknownOutcome(err, fmt.Sprintf("did not answer within its timeout of %s", t.timeout))
		}
		return &capabilities.Error{Severity: capabilities.Retriable, Kind: capabilities.KindTimeout, Err: err,
			Metadata:    t.meta("timeout", t.timeout.String()),
			UserMessage: fmt.Sprintf("the tool %s of the MCP server %q did not answer within its timeout of %s", t.tool.Name, t.srv.cfg.Name, t.timeout)}
	}
	// The transport failed: the process died, the endpoint went away.
	if t.srv.cfg.transport() == TransportStdio {
		t.srv.ended(c, 500*time.Millisecond)
	}
	t.srv.drop(c, err)
	if !t.retrySafe() && !neverSent(err, codes) {
		return t.unknownOutcome(err, "lost its connection during the call")
	}
	ue := t.srv.status()
	ue.Metadata[capabilities.MetaTechnicalDetails] = err.Error()
	ue.UserMessage = fmt.Sprintf("the call of the tool %s failed: %s", t.tool.Name, ue.UserMessage)
	ue.Metadata[MetaTool] = t.tool.Name
	if neverSent(err, codes) {
		return capabilities.NotApplied(ue)
	}
	return ue
}

// status is the server's state as a failure of a call that just failed.
func (s *server) status() *capabilities.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess != nil {
		return &capabilities.Error{Severity: capabilities.Retriable, Kind: capabilities.KindConnection,
			Metadata:    map[string]any{MetaServer: s.cfg.Name, "server_state": "reconnected"},
			UserMessage: fmt.Sprintf("the connection to the MCP server %q failed; it is connected again", s.cfg.Name)}
	}
	return s.unavailable(max(s.notBefore.Sub(s.now()), 0))
}

func (t *Tool) unknownOutcome(err error, what string) *capabilities.Error {
	return &capabilities.Error{Severity: capabilities.Critical, Kind: KindOutcomeUnknown, Err: err,
		Metadata:    t.meta(capabilities.MetaSuggestions, []string{"check whether " + t.tool.Name + " acted before asking again"}),
		UserMessage: fmt.Sprintf("the tool %s of the MCP server %q %s; it may or may not have acted, so it is not called again", t.tool.Name, t.srv.cfg.Name, what)}
}

// JSON-RPC codes the SDK uses for its own transport failures (not part of
// the specification; internal/jsonrpc2 in the SDK).
const (
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005 // the request never reached the tool
)

// rpcCodes lists the JSON-RPC error codes in err's chain, outermost first.
func rpcCodes(err error) []int64 {
	var codes []int64
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if w, ok := e.(*jsonrpc.Error); ok {
			codes = append(codes, w.Code)
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	return codes
}

// neverSent reports whether a transport error happened before the request
// reached the server (refused, or rejected by the transport), so the tool
// cannot have acted.
func neverSent(err error, codes []int64) bool {
	var oe *net.OpError
	return slices.Contains(codes, codeRejected) || errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &oe) && oe.Op == "dial")
}

// toolError classifies a result with isError. The server's own argument
// check ("MCP error -32602", as SDKs report it inside the result) is
// REPLANNING like capgraph's.
func (t *Tool) toolError(r ToolResult) error {
	text := r.Text
	if text == "" {
		text = "(no message)"
	}
	if strings.HasPrefix(text, "MCP error -32602") {
		return t.invalid(errors.New(text))
	}
	return &capabilities.Error{Severity: t.isError, Kind: KindToolError,
		Metadata:    t.meta(MetaToolOutput, trimText(text, 2000)),
		UserMessage: fmt.Sprintf("the tool %s of the MCP server %q reported an error: %s", t.tool.Name, t.srv.cfg.Name, trimText(oneLine(text), 300))}
}

// schemaText is the schema as compact JSON without its $schema line,
// capped for the prompt.
func schemaText(raw []byte) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) == nil {
		delete(m, "$schema")
		if b, err := json.Marshal(m); err == nil {
			raw = b
		}
	}
	return trimText(string(raw), maxSchemaText)
}

func firstParagraph(s string, limit int) string {
	if i := strings.Index(s, "\n\n"); i > 0 {
		s = s[:i]
	}
	return trimText(oneLine(s), limit)
}

// trimText cuts s to at most limit bytes at a rune boundary, marking the cut.
func trimText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
