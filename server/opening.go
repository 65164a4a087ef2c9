package server

import (
	"github.com/capgraph/capgraph/agent"
)

// A turn opens the same way on every protocol (Chat Completions,
// Responses, AG-UI, the native API, MCP): the message within
// Config.MaxMessageBytes, the agent's request built from who asks and
// what their key may do, and the options checked as the agent would check
// them, all before a thread is created or a run recorded, so a refused
// request leaves nothing behind. What differs (how a protocol names its
// thread and its message, how it answers a repeated request) stays with
// the protocol.

// turnOpening is what a protocol read from its request for a new turn.
type turnOpening struct {
	// field names the request field the message came in, for the client.
	field string
	// input is the message; options the turn options asked for.
	input   string
	options *agent.TurnOptions
	// source names the protocol in the thread's metadata; clientThread
	// and thread are the client's and the internal thread ids.
	source, clientThread, thread string
	// clientMeta is the metadata the client gave the thread; extraMeta is
	// the protocol's own, stored beside it.
	clientMeta, extraMeta map[string]string
	// allowed, when not nil, narrows the key's allowed capabilities (a
	// trigger's list); by, when set, names who asks instead of the key.
	allowed []string
	by      string
}

// openTurn checks a new turn and returns the agent's request for it: a
// 400 naming o.field for a message over the limit, the agent's refusal
// (403 for a loosening option) otherwise.
func (s *Server) openTurn(c caller, o turnOpening) (agent.TurnRequest, error) {
	if len(o.input) > s.cfg.MaxMessageBytes {
		return agent.TurnRequest{}, badRequest(o.field, "%d bytes exceed the limit of %d", len(o.input), s.cfg.MaxMessageBytes)
	}
	meta := s.turnMetadata(c, o.source, o.clientThread, o.clientMeta)
	for k, v := range o.extraMeta {
		meta[k] = v
	}
	req := s.turnRequest(c, o.thread, o.input, o.options, meta)
	req.AllowedCapabilities = narrowAllowed(req.AllowedCapabilities, o.allowed)
	if o.by != "" {
		req.By = o.by
	}
	if err := s.checkTurn(req); err != nil {
		return agent.TurnRequest{}, err
	}
	return req, nil
}

// turnRequest is the agent request of a turn c starts on an internal
// thread: who asks (By), what the key may do (allowed capabilities, the
// settings it may raise) and the options asked for.
func (s *Server) turnRequest(c caller, thread, input string, opts *agent.TurnOptions, meta map[string]string) agent.TurnRequest {
	return agent.TurnRequest{Thread: thread, Input: input, Options: opts, Metadata: meta, AllowedCapabilities: allowedCapabilities(c),
		MayRaise: c.Principal.MayRaise, By: callerName(c)}
}

// checkTurn refuses a turn whose options the agent would refuse, before
// any run starts: the caller gets the error (403 for a loosening option)
// instead of a run that fails.
func (s *Server) checkTurn(req agent.TurnRequest) error {
	if tc := s.features.turns; tc != nil {
		_, err := tc.TurnOptions(req)
		return err
	}
	return nil
}
