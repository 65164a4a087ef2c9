package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/google/uuid"
)

// What a client reads of an error is written by the server for the client:
// the message of an error the server or the agent raised about the request
// (apierror.RequestError, a refused option, an approval that cannot be answered …).
// Anything else — a store, network or Go error, whose text may name
// addresses, file paths and internal ids — is logged with a reference, and
// the client gets the reference and a sentence saying so.

// publicMessage is the client's message for err.
func (s *Server) publicMessage(err error) string {
	if msg, ok := clientMessage(err); ok {
		return msg
	}
	ref := s.logInternal(err)
	return "internal server error (reference " + ref + "; the server logged the details)"
}

// logInternal logs an error the client is not shown and returns the
// reference the client gets instead.
func (s *Server) logInternal(err error) string {
	ref := uuid.NewString()[:8]
	s.cfg.Logger.Error("internal error", "reference", ref, "error", err)
	return ref
}

// clientMessage returns err's message when it is meant for the client.
func clientMessage(err error) (string, bool) {
	var (
		mbe *http.MaxBytesError
		re  *apierror.RequestError
		rl  *apierror.RateLimitError
		le  *agent.LoosenError
		ae  *agent.ApprovalError
		te  *apierror.TurnTimeoutError
		fe  *agent.FatalError
	)
	switch {
	case errors.As(err, &mbe):
		return "request body exceeds " + strconv.FormatInt(mbe.Limit, 10) + " bytes", true
	case errors.As(err, &re):
		if re.Kind == errInternal {
			return errInternal.Error(), true
		}
		return re.Error(), true
	case errors.As(err, &rl):
		return rl.Error(), true
	case errors.As(err, &le):
		return le.Error(), true
	case errors.As(err, &ae):
		return fmt.Sprintf("approval %q: %s: %s", ae.ID, strings.TrimPrefix(ae.Kind.Error(), "agent: "), ae.Problem), true
	case errors.As(err, &te):
		return te.Error(), true
	case errors.As(err, &fe):
		return fatalMessage(fe), true
	case errors.Is(err, agent.ErrThreadBusy):
		return "a run is already in progress on this thread (here or on another replica); try again when it has ended", true
	case errors.Is(err, agent.ErrUnknownThread):
		return "no such thread", true
	case errors.Is(err, agent.ErrBadRequest):
		// The agent's validation of a request: its own words after the
		// sentinel's ("agent: bad request: approval mode must be …").
		msg := err.Error()
		if i := strings.LastIndex(msg, agent.ErrBadRequest.Error()+": "); i >= 0 {
			return msg[i+len(agent.ErrBadRequest.Error()+": "):], true
		}
		return "invalid request", true
	case errors.Is(err, errInternal):
		return errInternal.Error(), true
	}
	return "", false
}

// fatalMessage is what a client is told of a FATAL failure: the
// classification's message for users, else where it happened.
func fatalMessage(fe *agent.FatalError) string {
	where := fe.Node
	if fe.Capability != "" {
		where = fe.Capability
	}
	if msg := strings.TrimSpace(fe.Classification.UserMessage); msg != "" {
		return fmt.Sprintf("The request was stopped by a fatal failure in %s: %s. Nothing more was done.", where, strings.TrimSuffix(msg, "."))
	}
	return fmt.Sprintf("The request was stopped by a fatal failure in %s. Nothing more was done.", where)
}
