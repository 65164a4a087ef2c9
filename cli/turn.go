package cli

import (
	"errors"
	"iter"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/state"
)

// outcome is how a turn ended, as the commands need it.
type outcome struct {
	Message  *state.Message
	Approval *state.Approval
	Status   agent.RunStatus
	Retries  int
}

// consume drains a turn's events into p and returns its outcome. A
// *agent.FatalError or any other failure of the run is returned as the error.
func consume(events iter.Seq2[agent.Event, error], p progress) (outcome, error) {
	var out outcome
	defer p.stop()
	for e, err := range events {
		if err != nil {
			return out, err
		}
		p.event(e)
		switch e.Type {
		case agent.EventMessage:
			out.Message = e.Message
		case agent.EventApprovalRequired:
			out.Approval = e.Approval
		case agent.EventRetry:
			out.Retries++
		case agent.EventDone:
			out.Status = e.Status
			if e.Err != "" && e.Status != agent.RunAnswered && e.Status != agent.RunInterrupted {
				return out, errors.New(e.Err)
			}
		}
	}
	return out, nil
}

// fatalReason renders a FATAL failure as one line.
func fatalReason(err error) (string, bool) {
	var fe *agent.FatalError
	if !errors.As(err, &fe) {
		return "", false
	}
	where := fe.Node
	if fe.Capability != "" {
		where = fe.Capability
	}
	msg := fe.Classification.UserMessage
	if msg == "" && fe.Err != nil {
		msg = fe.Err.Error()
	}
	return "fatal error in " + where + ": " + msg, true
}
