package agent

import (
	"context"
	"time"

	"github.com/capgraph/capgraph/state"
)

// Observer sees every run the agent runs: the telemetry packages (traces,
// metrics, logs; see docs/observability.md) implement it, so the agent
// itself imports no telemetry library. Config.Observer is nil by default,
// and then a run costs nothing more.
type Observer interface {
	// StartRun is called when a run (a new turn, a resume, a recovery)
	// begins, on the goroutine that consumes its events.
	StartRun(ctx context.Context, run RunInfo) RunObserver
}

// RunObserver observes one run.
type RunObserver interface {
	// Event sees every event of the run in order, before the caller does,
	// on the run's goroutine, and must not block. It also sees the
	// observer-only events (EventFailure, EventRoute, EventCommit).
	Event(e Event)
	// TraceContext is the run's own trace context; the agent stores it with
	// a new turn, so a resume of the turn, in any process, continues its
	// trace (RunInfo.Parent). Empty when the observer does not trace.
	TraceContext() TraceContext
	// End is called once when the run's stream ends, also when the caller
	// stopped reading it.
	End()
}

// RunInfo describes a run to an Observer.
type RunInfo struct {
	Thread string
	// Run is the caller's id of the run (WithRunID: the server's run id,
	// the one its API and audit records show); empty from the Go API. The
	// engine's id of the run is in every Event (RunID).
	Run string
	// Resume is true for a resume of a turn started earlier (an approval's
	// answer, a recovery after a crash), false for a new turn.
	Resume bool
	// Parent is the trace context the run's spans belong under: on a new
	// turn the caller's (WithTraceContext); on a resume the turn's stored
	// one when it has one, else the caller's.
	Parent TraceContext
	// Caller is the caller's trace context (WithTraceContext), also on a
	// resume, where it may differ from Parent.
	Caller TraceContext
	// Answer is the human's answer a resume carries, if any (approval wait
	// time: Answer.At - Answer.Asked).
	Answer *state.ApprovalDecision
	// Trace is the run's own trace context when an observer before this
	// one (telemetry.Join) traces the run: a log line carries its trace id.
	Trace TraceContext
}

// TraceContext is a W3C trace context: the traceparent and tracestate
// headers, as text. The agent only carries it; the tracing observer parses
// it (an invalid one is ignored).
type TraceContext = state.TraceContext

type traceKey struct{}

// WithTraceContext returns ctx carrying the caller's trace context: a server
// puts the traceparent of an HTTP request here, and a run started under ctx
// belongs to that trace.
func WithTraceContext(ctx context.Context, tc TraceContext) context.Context {
	if tc.TraceParent == "" {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, tc)
}

// TraceContextFrom returns the trace context WithTraceContext put in ctx.
func TraceContextFrom(ctx context.Context) TraceContext {
	tc, _ := ctx.Value(traceKey{}).(TraceContext)
	return tc
}

// The observer-only events: the pump hands them to Config.Observer and never
// to the caller of Run or Resume.
const (
	// EventFailure: a failed attempt was recorded (Detail.Failure; Node,
	// Step, Capability, Attempt; Err the error text).
	EventFailure EventType = "failure"
	// EventRoute: the router's decision after Node: Detail.To holds the
	// next nodes.
	EventRoute EventType = "route"
	// EventCommit: a checkpoint was written; Duration is the store's time.
	EventCommit EventType = "commit"
	// EventErrorCause: the error node starts; Text is the router's cause
	// (router.Cause), Detail.Failure.Limit the limit or budget exhausted,
	// if any, and Detail.Failure.Severity the severity of the failure it
	// reports.
	EventErrorCause EventType = "error_cause"
)

// observerOnly reports whether events of type t go to the Observer only.
func observerOnly(t EventType) bool {
	return t == EventFailure || t == EventRoute || t == EventCommit || t == EventErrorCause
}

func severityOf(e *state.ErrorInfo) string {
	if e == nil {
		return ""
	}
	return e.Classification.Severity.String()
}

// Detail is what an observer-only event carries: a failure (EventFailure,
// EventErrorCause) or the router's next nodes (EventRoute). One pointer in
// Event, so that the events every turn makes stay in their size class.
type Detail struct {
	// To holds the next nodes of an EventRoute.
	To []string `json:"to,omitempty"`
	// Failure describes an EventFailure or an EventErrorCause.
	Failure FailureInfo `json:"failure,omitzero"`
}

// FailureInfo describes a failed attempt (EventFailure).
type FailureInfo struct {
	// Severity is the classification's severity (RETRIABLE, REPLANNING, …).
	Severity string `json:"severity"`
	// Kind is the classification's error kind.
	Kind string `json:"kind,omitempty"`
	// Action is what recording it did: "retry" (a retry is scheduled),
	// "fallback", "escalate", "abort" (FATAL) or "recorded" (the router
	// routes it: replan, reclassify, the error node).
	Action string `json:"action"`
	// Limit names the limit or budget the attempt ran into, if any.
	Limit string `json:"limit,omitempty"`
	// Delay is a scheduled retry's wait.
	Delay time.Duration `json:"delay,omitempty"`
}

// startObserving asks the configured Observer about a run; nil when there
// is none. stored is the turn's stored trace context (resumes).
func (a *Agent) startObserving(ctx context.Context, p *pump, thread string, resume bool, stored TraceContext, ans *state.ApprovalDecision) {
	if a.cfg.Observer == nil {
		return
	}
	caller := TraceContextFrom(ctx)
	parent := caller
	if stored.TraceParent != "" {
		parent = stored
	}
	p.obs = a.cfg.Observer.StartRun(ctx, RunInfo{Thread: thread, Run: runIDOf(ctx), Resume: resume, Parent: parent, Caller: caller, Answer: ans})
}

// storedTrace reads the trace context the thread's current turn was stored
// with (only when an observer wants it: it costs a read of the state).
func (a *Agent) storedTrace(ctx context.Context, thread string) TraceContext {
	if a.cfg.Observer == nil {
		return TraceContext{}
	}
	s, _, err := a.g.State(ctx, thread)
	if err != nil || s.Turn.Trace == nil {
		return TraceContext{}
	}
	return *s.Turn.Trace
}
