package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/turns"
)

// A turn opens the same way on every protocol (Chat Completions,
// Responses, AG-UI, the native API, MCP): the message within
// Config.MaxMessageBytes, the agent's request built from who asks and
// what their key may do, and the options checked as the agent would check
// them, all before a thread is created or a run recorded, so a refused
// request leaves nothing behind. What differs (how a protocol names its
// thread and its message, how it answers a repeated request) stays with
// the protocol.

// openTurn checks a new turn and returns the agent's request for it: a
// 400 naming o.Field for a message over the limit, the agent's refusal
// (403 for a loosening option) otherwise.
func (s *Server) openTurn(c caller, o turns.TurnOpening) (agent.TurnRequest, error) {
	if len(o.Input) > s.cfg.MaxMessageBytes {
		return agent.TurnRequest{}, badRequest(o.Field, "%d bytes exceed the limit of %d", len(o.Input), s.cfg.MaxMessageBytes)
	}
	meta := s.turnMetadata(c, o.Source, o.ClientThread, o.ClientMeta)
	for k, v := range o.ExtraMeta {
		meta[k] = v
	}
	req := s.turnRequest(c, o.Thread, o.Input, o.Options, meta)
	req.AllowedCapabilities = narrowAllowed(req.AllowedCapabilities, o.Allowed)
	if o.By != "" {
		req.By = o.By
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

// opening is how a request of any protocol (Chat Completions, Responses,
// AG-UI, the native API) becomes a run, always in this order: the
// Idempotency-Key header checked and the run's key made (the header's,
// else the protocol's implicit one); with lookFirst, the run that key
// started before looked up, so a repeat is answered by it before anything
// is opened; then what the protocol opens for the run (spec: the thread,
// the turn through openTurn, or an approval's answer); the run recorded
// and started (submit); and a run the key started first checked to come
// from the same request (sameRequest). What differs stays with the
// protocol: its spec, and how it answers a repeat (opened.dup) — joined,
// replayed or refused.
type opening struct {
	w http.ResponseWriter
	r *http.Request
	c caller
	// scope names the protocol (and thread) the key is good for;
	// implicit is the protocol's own key for a request without an
	// Idempotency-Key ("" none; see idempotencyKey).
	scope, implicit string
	// lookFirst answers a repeat by the run its key started before
	// anything is opened; request is then what the request asks
	// (runSpec.requestDigest), to refuse a key sent with another request.
	lookFirst bool
	request   string
	// spec opens what the run needs and returns it (its key is set by
	// open); nil and no error when the protocol answers without a run.
	spec func(ctx context.Context, key string) (*runSpec, error)
	// refused, when set, is told that the run spec returned did not
	// start (refused, or the key's run came first): it gives back what
	// spec claimed (a chat approval token).
	refused func()
	// failed, when set, may answer the refusal of a run itself (true);
	// otherwise the refusal is written as the error it is.
	failed func(err error) bool
}

// opened is what an opening came to: the run it started (ru), or the run
// a request with the same key started before, checked to be the same
// request (dup), or neither when the protocol answers without a run.
type opened struct {
	ru  *run
	dup *runstore.Record
	// earlier: dup was found before anything was opened (lookFirst).
	earlier bool
	// key is the run's key; explicit when the client named it.
	key      string
	explicit bool
}

// open turns o's request into a run; false when the request has been
// answered (with the error that refused it).
func (s *Server) open(o opening) (opened, bool) {
	if err := checkIdempotencyKey(o.r); err != nil {
		s.writeError(o.w, err)
		return opened{}, false
	}
	key, explicit := idempotencyKey(o.r, o.c, o.scope, o.implicit)
	out, err := s.openKeyed(o.r.Context(), key, o)
	if err != nil {
		var refusal *runRefusal
		if errors.As(err, &refusal) {
			if o.failed != nil && o.failed(refusal.err) {
				return opened{}, false
			}
			err = refusal.err
		}
		s.writeError(o.w, err)
		return opened{}, false
	}
	out.explicit = explicit
	return out, true
}

// runRefusal is the refusal of the run itself (its key's release not
// awaited, its limits, its record), apart from the request's errors: an
// opening's failed may answer it in the protocol's own way.
type runRefusal struct{ err error }

func (e *runRefusal) Error() string { return e.err.Error() }
func (e *runRefusal) Unwrap() error { return e.err }

// openKeyed is open's work once the run's key is known ("" none): the
// run that key started looked up first (o.lookFirst), what the protocol
// opens (o.spec), the run recorded and started, and a run the key started
// first checked to come from the same request. A refusal of the run
// itself is a *runRefusal. o.w and o.r are not used.
func (s *Server) openKeyed(ctx context.Context, key string, o opening) (opened, error) {
	out := opened{key: key}
	if o.lookFirst && key != "" {
		if err := s.releases.wait(ctx, key); err != nil {
			return opened{}, &runRefusal{err}
		}
		if rec, err := s.records.GetRunByKey(ctx, key); err == nil {
			rec = s.settledRecord(ctx, rec)
			if err := sameRequest(rec, o.request); err != nil {
				return opened{}, err
			}
			out.dup, out.earlier = &rec, true
			return out, nil
		}
	}
	sp, err := o.spec(ctx, key)
	if err != nil || sp == nil {
		return out, err
	}
	sp.key = key
	ru, dup, err := s.submit(ctx, *sp)
	if (err != nil || dup != nil) && o.refused != nil {
		o.refused()
	}
	if err != nil {
		return opened{}, &runRefusal{err}
	}
	if dup != nil {
		*dup = s.settledRecord(ctx, *dup)
		if err := sameRequest(*dup, sp.requestDigest()); err != nil {
			return opened{}, err
		}
	}
	out.ru, out.dup = ru, dup
	return out, nil
}

// settledRecord is rec once it says how its run ended, when the run has
// ended in this process and its record is being written (its client was
// told first: runs.Run.Settled) — a repeat of the request is then
// answered as the record says, milliseconds later. Otherwise rec.
func (s *Server) settledRecord(ctx context.Context, rec runstore.Record) runstore.Record {
	if rec.Status.Terminal() {
		return rec
	}
	ru, ok := s.runs.ByID(rec.ID)
	if !ok {
		return rec
	}
	settled := ru.Settled()
	if settled == nil {
		return rec
	}
	select {
	case <-settled:
	case <-ctx.Done():
		return rec
	}
	if cur, err := s.records.GetRun(ctx, rec.ID); err == nil {
		return cur
	}
	return rec
}
