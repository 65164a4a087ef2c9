package tracing

import (
	"context"
	"errors"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/telemetry"
)

// ScopeName is the instrumentation scope of capgraph's spans.
const ScopeName = "github.com/capgraph/capgraph"

// The attribute keys of capgraph's spans.
const (
	AttrThread     = attribute.Key("capgraph.thread")
	AttrRun        = attribute.Key("capgraph.run")
	AttrGraphRun   = attribute.Key("capgraph.graph_run")
	AttrResume     = attribute.Key("capgraph.resume")
	AttrNode       = attribute.Key("capgraph.node")
	AttrCapability = attribute.Key("capgraph.capability")
	AttrStep       = attribute.Key("capgraph.step")
	AttrAttempt    = attribute.Key("capgraph.attempt")
	AttrSeverity   = attribute.Key("capgraph.severity")
	AttrErrorKind  = attribute.Key("capgraph.error.kind")
	AttrAction     = attribute.Key("capgraph.recovery")
	AttrRetryDelay = attribute.Key("capgraph.retry.delay_ms")
	AttrRoute      = attribute.Key("capgraph.route")
	AttrCause      = attribute.Key("capgraph.cause")
	AttrLimit      = attribute.Key("capgraph.limit")
	AttrOutcome    = attribute.Key("capgraph.outcome")
	AttrMessage    = attribute.Key("capgraph.message.kind")
	AttrTokens     = attribute.Key("capgraph.tokens")
	AttrRole       = attribute.Key("capgraph.llm.role")
	// OpenTelemetry's semantic conventions for generative AI.
	AttrModel        = attribute.Key("gen_ai.response.model")
	AttrInputTokens  = attribute.Key("gen_ai.usage.input_tokens")
	AttrOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
	AttrOperation    = attribute.Key("gen_ai.operation.name")
)

// EventInterrupted is the span event of a node that paused the run for a
// human (an approval): a pause, not a failure, so the span's status stays
// Unset and no exception is recorded.
const EventInterrupted = "interrupted"

// Observer makes spans of the agent's runs (agent.Config.Observer).
type Observer struct {
	tracer trace.Tracer
	prop   propagation.TraceContext
	now    func() time.Time
}

// New returns an observer tracing with tp.
func New(tp trace.TracerProvider) *Observer {
	return &Observer{tracer: tp.Tracer(ScopeName), now: time.Now}
}

// carrier is a TextMapCarrier over a trace context.
type carrier struct{ tc *agent.TraceContext }

func (c carrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.tc.TraceParent
	case "tracestate":
		return c.tc.TraceState
	}
	return ""
}

func (c carrier) Set(key, value string) {
	switch key {
	case "traceparent":
		c.tc.TraceParent = value
	case "tracestate":
		c.tc.TraceState = value
	}
}

func (c carrier) Keys() []string { return []string{"traceparent", "tracestate"} }

// parent returns the context a run's span starts under: the trace context
// the agent hands over, else a span already in ctx (a Go program's own), else
// none (a new trace).
func (o *Observer) parent(ctx context.Context, tc agent.TraceContext) context.Context {
	if tc.TraceParent != "" {
		pctx := o.prop.Extract(context.Background(), carrier{&tc})
		if trace.SpanContextFromContext(pctx).IsValid() {
			return pctx
		}
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return trace.ContextWithSpanContext(context.Background(), sc)
	}
	return context.Background()
}

// StartRun starts the run's span.
func (o *Observer) StartRun(ctx context.Context, info agent.RunInfo) agent.RunObserver {
	pctx := o.parent(ctx, info.Parent)
	name := "capgraph.run"
	if info.Resume {
		name = "capgraph.resume"
	}
	opts := []trace.SpanStartOption{trace.WithTimestamp(o.now()),
		trace.WithAttributes(AttrThread.String(info.Thread), AttrResume.Bool(info.Resume))}
	if info.Caller.TraceParent != "" && info.Caller != info.Parent {
		// A resume asked for by a request of its own: its caller's trace is
		// linked, the span stays in the turn's trace.
		if cctx := o.parent(context.Background(), info.Caller); trace.SpanContextFromContext(cctx).IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: trace.SpanContextFromContext(cctx)}))
		}
	}
	rctx, span := o.tracer.Start(pctx, name, opts...)
	if info.Run != "" {
		span.SetAttributes(AttrRun.String(info.Run))
	}
	r := &run{o: o, ctx: rctx, span: span, thread: info.Thread, named: info.Run, nodes: map[string]*nodeSpan{}, steps: map[int]*stepSpan{}}
	if a := info.Answer; a != nil {
		span.AddEvent("approval_answered", trace.WithAttributes(attribute.String("capgraph.approval", a.ID),
			attribute.Bool("capgraph.approved", a.Approved), attribute.Float64("capgraph.approval.wait_ms", ms(a.At.Sub(a.Asked)))))
	}
	return r
}

// nodeSpan is a node's span: ended when the router's decision after it is
// known (its route is an attribute), at the time the node ended.
type nodeSpan struct {
	ctx   context.Context
	span  trace.Span
	ended bool
	end   time.Time
}

type run struct {
	o      *Observer
	ctx    context.Context
	span   trace.Span
	thread string
	named  string // the caller's id of the run (RunInfo.Run), if any
	runID  string // the run's id on node spans: named, else the engine's
	nodes  map[string]*nodeSpan
	// steps are the capability attempts by plan step: an attempt's span
	// ends with its node, so the failure recorded after the attempt ended
	// is on it too.
	steps map[int]*stepSpan
}

type stepSpan struct {
	span  trace.Span
	node  string
	ended bool
	end   time.Time
}

// endSteps ends the capability attempts node ran.
func (r *run) endSteps(node string) {
	for i, st := range r.steps {
		if node != "" && st.node != node {
			continue
		}
		if st.ended {
			st.span.End(trace.WithTimestamp(st.end))
		} else {
			st.span.End()
		}
		delete(r.steps, i)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (r *run) TraceContext() agent.TraceContext {
	var tc agent.TraceContext
	r.o.prop.Inject(r.ctx, carrier{&tc})
	return tc
}

// parentOf is the span context a node's child starts under.
func (r *run) parentOf(node string) context.Context {
	if n := r.nodes[node]; n != nil {
		return n.ctx
	}
	return r.ctx
}

func (r *run) endNode(name string) {
	n := r.nodes[name]
	if n == nil {
		return
	}
	delete(r.nodes, name)
	if n.ended {
		n.span.End(trace.WithTimestamp(n.end))
		return
	}
	n.span.End()
}

func setError(s trace.Span, msg string) {
	s.RecordError(errors.New(msg))
	s.SetStatus(codes.Error, msg)
}

func (r *run) Event(e agent.Event) {
	switch e.Type {
	case agent.EventRunStart:
		r.runID = r.named
		if r.named == "" {
			r.runID = e.RunID
			r.span.SetAttributes(AttrRun.String(e.RunID))
		} else {
			r.span.SetAttributes(AttrGraphRun.String(e.RunID))
		}
	case agent.EventNodeStart:
		r.endNode(e.Node) // a node run again before its route was seen
		ctx, span := r.o.tracer.Start(r.ctx, "node "+e.Node, trace.WithTimestamp(e.Time),
			trace.WithAttributes(AttrNode.String(e.Node), AttrThread.String(r.thread), AttrRun.String(r.runID)))
		r.nodes[e.Node] = &nodeSpan{ctx: ctx, span: span}
	case agent.EventNodeEnd:
		r.endSteps(e.Node)
		if n := r.nodes[e.Node]; n != nil {
			n.ended, n.end = true, e.Time
			switch {
			case telemetry.Interrupted(e):
				n.span.AddEvent(EventInterrupted, trace.WithTimestamp(e.Time))
			case e.Err != "":
				setError(n.span, e.Err)
			}
		}
	case agent.EventRoute:
		if n := r.nodes[e.Node]; n != nil {
			n.span.SetAttributes(AttrRoute.String(strings.Join(detail(e).To, ",")))
			if n.ended {
				r.endNode(e.Node)
			}
		}
	case agent.EventStepStart:
		_, span := r.o.tracer.Start(r.parentOf(e.Node), "capability "+e.Capability, trace.WithTimestamp(e.Time),
			trace.WithAttributes(AttrCapability.String(e.Capability), AttrStep.Int(e.Step), AttrAttempt.Int(e.Attempt),
				AttrNode.String(e.Node), AttrThread.String(r.thread)))
		if old := r.steps[e.Step]; old != nil {
			old.span.End()
		}
		r.steps[e.Step] = &stepSpan{span: span, node: e.Node}
	case agent.EventStepEnd:
		if st := r.steps[e.Step]; st != nil {
			if e.Err != "" {
				setError(st.span, e.Err)
			}
			st.ended, st.end = true, e.Time
		}
	case agent.EventFailure:
		f := detail(e).Failure
		attrs := []attribute.KeyValue{AttrSeverity.String(f.Severity), AttrErrorKind.String(f.Kind), AttrAction.String(f.Action), AttrAttempt.Int(e.Attempt)}
		if f.Limit != "" {
			attrs = append(attrs, AttrLimit.String(f.Limit))
		}
		if f.Action == "retry" {
			attrs = append(attrs, AttrRetryDelay.Float64(ms(f.Delay)))
		}
		if st := r.steps[e.Step]; st != nil && e.Capability != "" {
			st.span.SetAttributes(attrs...)
		}
		if n := r.nodes[e.Node]; n != nil {
			n.span.SetAttributes(attrs...)
			n.span.AddEvent("failure", trace.WithTimestamp(e.Time), trace.WithAttributes(attrs...))
		}
	case agent.EventRetry:
		if n := r.nodes[e.Node]; n != nil {
			n.span.AddEvent("retry_scheduled", trace.WithTimestamp(e.Time), trace.WithAttributes(AttrAttempt.Int(e.Retry.Attempt),
				AttrRetryDelay.Float64(ms(e.Retry.Delay)), attribute.Int("capgraph.retry.max_attempts", e.Retry.Max)))
		}
	case agent.EventErrorCause:
		if n := r.nodes[e.Node]; n != nil {
			attrs := []attribute.KeyValue{AttrCause.String(e.Text)}
			if detail(e).Failure.Limit != "" {
				attrs = append(attrs, AttrLimit.String(detail(e).Failure.Limit))
			}
			if detail(e).Failure.Severity != "" {
				attrs = append(attrs, AttrSeverity.String(detail(e).Failure.Severity))
			}
			n.span.SetAttributes(attrs...)
		}
	case agent.EventModelCall:
		c := e.Call
		name := "llm " + c.Role
		_, span := r.o.tracer.Start(r.parentOf(e.Node), name, trace.WithTimestamp(e.Time.Add(-e.Duration)), trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(AttrRole.String(c.Role), AttrNode.String(e.Node), AttrOperation.String("chat"),
				AttrInputTokens.Int(c.Usage.PromptTokens), AttrOutputTokens.Int(c.Usage.CompletionTokens)))
		if c.Model != "" {
			span.SetAttributes(AttrModel.String(c.Model))
		}
		if e.Err != "" {
			setError(span, e.Err)
		}
		span.End(trace.WithTimestamp(e.Time))
	case agent.EventApprovalRequired:
		attrs := []attribute.KeyValue{AttrNode.String(e.Node)}
		if ap := e.Approval; ap != nil {
			attrs = append(attrs, attribute.String("capgraph.approval", ap.ID), attribute.String("capgraph.approval.kind", string(ap.Kind)))
		}
		r.span.AddEvent("approval_required", trace.WithTimestamp(e.Time), trace.WithAttributes(attrs...))
	case agent.EventAudit:
		if n := r.nodes[e.Node]; n != nil {
			n.span.AddEvent("side_effect", trace.WithTimestamp(e.Time), trace.WithAttributes(
				AttrCapability.String(e.Audit.Capability), attribute.String("capgraph.audit.event", e.Audit.Event),
				AttrOutcome.String(string(e.Audit.Outcome)), attribute.String("capgraph.reason", e.Audit.Reason)))
		}
	case agent.EventMessage:
		if e.Message != nil {
			r.span.SetAttributes(AttrMessage.String(string(e.Message.Kind)))
		}
	case agent.EventUsage:
		if e.Usage != nil {
			r.span.SetAttributes(AttrTokens.Int(e.Usage.TotalTokens))
		}
	case agent.EventDone:
		r.span.SetAttributes(AttrOutcome.String(string(e.Status)))
		if e.Status == agent.RunFailed {
			setError(r.span, e.Err)
		}
	}
}

// End ends what is still open: nodes whose route was never seen (a run
// that ended in them), then the run.
func (r *run) End() {
	r.endSteps("")
	for name := range r.nodes {
		r.endNode(name)
	}
	r.span.End(trace.WithTimestamp(r.o.now()))
}

// detail is what an observer-only event carries (none: zero).
func detail(e agent.Event) agent.Detail {
	if e.Detail != nil {
		return *e.Detail
	}
	return agent.Detail{}
}
