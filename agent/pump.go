package agent

import (
	"context"
	"encoding/json"
	"iter"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/state"
)

// pump maps the graph's events to agent events, numbers them, and ends the
// stream with the turn's message, its usage and EventDone (or an error).
type pump struct {
	a           *Agent
	thread      string
	runID       string
	yield       func(Event, error) bool
	seq         int
	stopped     bool
	interrupted bool
	// obs observes the run (Config.Observer); nil when none.
	obs RunObserver
}

func (p *pump) send(e Event, err error) bool {
	if p.stopped {
		return false
	}
	if p.obs != nil && observerOnly(e.Type) {
		e.Thread, e.RunID = p.thread, p.runID
		p.obs.Event(e)
		return true
	}
	if observerOnly(e.Type) {
		return true
	}
	p.seq++
	e.Seq, e.Thread = p.seq, p.thread
	if e.RunID == "" {
		e.RunID = p.runID
	}
	if e.Time.IsZero() {
		e.Time = p.a.cfg.Now()
	}
	if p.obs != nil {
		p.obs.Event(e)
	}
	if !p.yield(e, err) {
		p.stopped = true
	}
	return !p.stopped
}

func (p *pump) fail(err error) {
	status := RunFailed
	if isCtxErr(err) {
		status = RunCanceled
	}
	p.send(Event{Type: EventDone, Status: status, Err: err.Error()}, err)
}

func (p *pump) run(ctx context.Context, events iter.Seq2[graph.Event, error]) {
	if p.obs != nil {
		defer p.obs.End()
	}
	var (
		runErr error
		final  state.State // the finished run's state, from its run_end
		live   bool        // final was set
		parked time.Time   // the run parked until then (graph.StatusWaiting)
	)
	for ev, err := range events {
		if err != nil {
			runErr = err
			break
		}
		if ev.Kind == graph.EventRunEnd {
			final, live = ev.Payload.(state.State)
			parked = ev.NotBefore
		}
		if p.runID == "" && ev.RunID.String() != "00000000-0000-0000-0000-000000000000" {
			p.runID = ev.RunID.String()
		}
		if !p.forward(ev) {
			return // the consumer stopped; the graph cancels the run
		}
	}
	p.finish(ctx, runErr, final, live, parked)
}

// forward sends the agent event of a graph event, if it maps to one, and
// reports whether the consumer goes on. It and finish are functions of
// their own so that the run's goroutine, which waits in the loop above for
// a whole turn, keeps none of their locals (events of 300 bytes each) on
// its stack: a live conversation's stack stays small enough for the
// collector to shrink it.
//
//go:noinline
func (p *pump) forward(ev graph.Event) bool {
	e, ok := p.mapEvent(ev)
	return !ok || p.send(e, nil)
}

// finish ends the run's events after the graph's: its failure, or its
// message, usage and end.
//
//go:noinline
func (p *pump) finish(ctx context.Context, runErr error, final state.State, live bool, parked time.Time) {
	if runErr != nil {
		p.fail(runErr)
		return
	}
	if ctx.Err() != nil {
		p.fail(ctx.Err())
		return
	}
	if p.interrupted {
		p.send(Event{Type: EventDone, Status: RunInterrupted}, nil)
		return
	}
	if !parked.IsZero() {
		p.send(Event{Type: EventDone, Status: RunWaiting, NotBefore: parked}, nil)
		return
	}
	if !live {
		// Not a finished run (an interrupt is handled above): read what
		// the last checkpoint holds.
		var err error
		if final, _, err = p.a.g.State(context.WithoutCancel(ctx), p.thread); err != nil {
			p.fail(err)
			return
		}
	}
	s := final
	if m, ok := s.LastAssistant(); ok && m.Turn == s.Turn.Number && s.Turn.Done {
		if live {
			// The message as stored (times without a monotonic reading),
			// as a later read of the thread gives it: a round trip of the
			// message alone, not a decoding of the whole state.
			m = storedForm(m)
		}
		if !p.send(Event{Type: EventMessage, Message: &m}, nil) {
			return
		}
	}
	if !p.send(Event{Type: EventUsage, Usage: usageOf(s)}, nil) {
		return
	}
	p.send(Event{Type: EventDone, Status: RunAnswered}, nil)
}

// storedForm returns m as the checkpoint store gives it back: the state's
// JSON encoding of m, decoded.
func storedForm(m state.Message) state.Message {
	// The usual message needs no round trip: a time at offset zero comes
	// back in UTC without its monotonic reading, valid UTF-8 as it is.
	if _, off := m.Time.Zone(); off == 0 && m.Report == nil && m.Time.Year() >= 0 && m.Time.Year() <= 9999 &&
		utf8.ValidString(m.Content) && utf8.ValidString(string(m.Role)) && utf8.ValidString(string(m.Kind)) {
		m.Time = m.Time.UTC().Round(0)
		return m
	}
	b, err := json.Marshal(m)
	if err != nil {
		return m
	}
	var out state.Message
	if json.Unmarshal(b, &out) != nil {
		return m
	}
	return out
}

func usageOf(s state.State) *Usage {
	// The state counts total tokens per role; prompt/completion are not split there.
	return &Usage{TotalTokens: s.Turn.Control.Tokens}
}

// mapEvent turns one graph event into an agent event, or none (ok false).
func (p *pump) mapEvent(ev graph.Event) (Event, bool) {
	base := Event{Time: ev.Time, Node: ev.Node}
	switch ev.Kind {
	case graph.EventRunStart:
		base.Type = EventRunStart
		return base, true
	case graph.EventNodeStart:
		base.Type = EventNodeStart
		return base, true
	case graph.EventNodeEnd:
		base.Type, base.Duration = EventNodeEnd, ev.Duration
		if ev.Err != nil {
			base.Err = ev.Err.Error()
		}
		return base, true
	case graph.EventWait:
		base.Type = EventStatus
		base.Text = "waiting until " + ev.NotBefore.UTC().Format(time.RFC3339Nano) + " before continuing (" + strings.Join(ev.To, ", ") + ")"
		return base, true
	case graph.EventInterrupt:
		p.interrupted = true
		base.Type = EventApprovalRequired
		var ap state.Approval
		if raw, ok := ev.Payload.(json.RawMessage); ok && json.Unmarshal(raw, &ap) == nil && ap.ID != "" {
			base.Approval = &ap
			base.Text = ap.Summary
		}
		return base, true
	case graph.EventCustom:
		return mapPayload(base, ev.Payload)
	case graph.EventRoute:
		if p.obs != nil {
			base.Type, base.Detail = EventRoute, &Detail{To: ev.To}
			return base, true
		}
	case graph.EventCheckpoint:
		if p.obs != nil {
			base.Type, base.Duration = EventCommit, ev.Duration
			return base, true
		}
	}
	return Event{}, false
}

// mapPayload maps what nodes emit with graph.Emit: agent events (from the
// wrappers), status strings, and the payload types of the nodes package.
func mapPayload(base Event, payload any) (Event, bool) {
	switch v := payload.(type) {
	case Event:
		if v.Node == "" {
			v.Node = base.Node
		}
		if v.Time.IsZero() {
			v.Time = base.Time
		}
		return v, true
	case *Event:
		if v == nil {
			return Event{}, false
		}
		return mapPayload(base, *v)
	case string:
		base.Type, base.Text = EventStatus, v
		return base, true
	}
	return mapNodePayload(base, payload)
}

// mapNodePayload maps the nodes package's payloads. It is extended as the
// nodes package defines them; unknown payloads are dropped.
func mapNodePayload(base Event, payload any) (Event, bool) {
	switch v := payload.(type) {
	case nodes.Status:
		base.Type, base.Node, base.Text = EventStatus, v.Node, v.Text
	case nodes.Token:
		base.Type, base.Node, base.Text = EventToken, v.Node, v.Text
	case nodes.AnswerReset:
		base.Type, base.Node, base.Text = EventAnswerReset, v.Node, v.Reason
	case nodes.TaskExtracted:
		base.Type, base.Text = EventTask, v.Task
	case nodes.CapabilitiesSelected:
		base.Type, base.Capabilities = EventCapabilities, v.Capabilities
	case nodes.NotSelected:
		base.Type, base.Capability = EventStatus, v.Capability
		base.Text = v.Capability + " was not considered: " + v.Err
	case nodes.PlanMade:
		p := v.Plan
		base.Type, base.Plan, base.Total = EventPlan, &p, len(p.Steps)
	case nodes.ModelDecision:
		base.Type, base.Node, base.Text = EventStatus, v.Node, v.Text()
	case nodes.OfflineFallback:
		base.Type, base.Node = EventStatus, v.Node
		base.Text = v.Node + " answered offline: " + v.Reason
	default:
		return base, false
	}
	return base, true
}

// zero reports whether no answer is given (a plain resume).
func (ans Answer) zero() bool {
	return ans.ApprovalID == "" && strings.TrimSpace(ans.Text) == "" && ans.Approved == nil && ans.Plan == nil
}
