package tracing_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/telemetry/internal/teletest"
	"github.com/capgraph/capgraph/telemetry/tracing"
)

func newTracer(t *testing.T) (*tracing.Observer, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	return tracing.New(tp), exp
}

func attr(s tracetest.SpanStub, k attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == k {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func str(s tracetest.SpanStub, k attribute.Key) string {
	v, _ := attr(s, k)
	return v.Emit()
}

// tree draws the spans as an indented tree, children in start order, each
// line the span's name and the attributes given.
func tree(spans tracetest.SpanStubs, keys ...attribute.Key) string {
	children := map[string][]tracetest.SpanStub{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanContext.SpanID().String()] = true
	}
	var roots []tracetest.SpanStub
	for _, s := range spans {
		if p := s.Parent.SpanID().String(); s.Parent.IsValid() && ids[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var walk func(s tracetest.SpanStub, depth int)
	walk = func(s tracetest.SpanStub, depth int) {
		b.WriteString(strings.Repeat("  ", depth) + s.Name)
		for _, k := range keys {
			if v, ok := attr(s, k); ok {
				fmt.Fprintf(&b, " %s=%s", strings.TrimPrefix(string(k), "capgraph."), v.Emit())
			}
		}
		if s.Status.Code == codes.Error {
			b.WriteString(" ERROR")
		}
		b.WriteByte('\n')
		kids := children[s.SpanContext.SpanID().String()]
		slices.SortStableFunc(kids, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}

// The turn that retries a step and then replans: every node, capability
// attempt and model call is a span under the run's, with the failure's
// severity, the recovery, the retry's delay and the route taken.
func TestSpanTreeOfATurnWithARetryAndAReplan(t *testing.T) {
	obs, exp := newTracer(t)
	a, _ := teletest.Agent(t, memory.New(), obs, false)
	teletest.Turn(t, a, "op-7", teletest.Replanned)

	spans := exp.GetSpans()
	got := tree(spans, tracing.AttrAttempt, tracing.AttrSeverity, tracing.AttrAction, tracing.AttrRoute, tracing.AttrOutcome)
	want := `capgraph.run outcome=answered
  node task_extraction route=classifier
    llm task_extraction
  node classifier route=orchestrator
    llm classifier
  node orchestrator route=read_current
    llm orchestrator
  node read_current attempt=1 severity=retriable recovery=retry route=read_current
    capability read_current attempt=1 severity=retriable recovery=retry ERROR
  node read_current attempt=2 severity=replanning recovery=recorded route=orchestrator
    capability read_current attempt=2 severity=replanning recovery=recorded ERROR
  node orchestrator route=find_channel,read_current
    llm orchestrator
  node find_channel route=respond
    capability find_channel attempt=1
  node read_current route=respond
    capability read_current attempt=1
  node respond route=__end__
    llm response
`
	// The second plan's two steps run together: either may start first.
	first, second := "  node find_channel route=respond\n    capability find_channel attempt=1\n", "  node read_current route=respond\n    capability read_current attempt=1\n"
	if got != want && got != strings.Replace(want, first+second, second+first, 1) {
		t.Errorf("span tree:\n%s\nwant:\n%s", got, want)
	}
	// One trace; the run's span carries the thread and run; the retry's
	// delay is on the failed attempt; model calls carry their tokens.
	run := spans[len(spans)-1]
	if run.Name != "capgraph.run" || str(run, tracing.AttrThread) != "op-7" || str(run, tracing.AttrRun) == "" {
		t.Errorf("run span %s: thread %q run %q", run.Name, str(run, tracing.AttrThread), str(run, tracing.AttrRun))
	}
	var retried, calls int
	for _, s := range spans {
		if s.SpanContext.TraceID() != run.SpanContext.TraceID() {
			t.Errorf("span %s is in trace %s, the run in %s", s.Name, s.SpanContext.TraceID(), run.SpanContext.TraceID())
		}
		if s.Name == "capability read_current" && str(s, tracing.AttrAction) == "retry" {
			retried++
			if v, ok := attr(s, tracing.AttrRetryDelay); !ok || v.AsFloat64() <= 0 {
				t.Errorf("retried attempt: delay %v, want > 0", v.Emit())
			}
			if len(s.Events) == 0 || s.Events[0].Name != "exception" || !strings.Contains(fmt.Sprint(s.Events[0].Attributes), "the archiver timed out") {
				t.Errorf("retried attempt: events %+v, want the error recorded", s.Events)
			}
		}
		if strings.HasPrefix(s.Name, "llm ") {
			calls++
			if _, ok := attr(s, tracing.AttrInputTokens); !ok || !s.EndTime.After(s.StartTime) && s.EndTime != s.StartTime {
				t.Errorf("%s: no token attributes or a negative duration", s.Name)
			}
		}
	}
	if retried != 1 || calls != 5 {
		t.Errorf("%d retried attempts, %d model calls; want 1 and 5", retried, calls)
	}
}

// An error report: the error node's span says why it ran.
func TestErrorNodeSpanCarriesTheCause(t *testing.T) {
	obs, exp := newTracer(t)
	a, _ := teletest.Agent(t, memory.New(), obs, false)
	teletest.Turn(t, a, "op-8", teletest.ErrorReport)
	got := tree(exp.GetSpans(), tracing.AttrSeverity, tracing.AttrCause, tracing.AttrMessage)
	if !strings.Contains(got, "\n  node error severity=critical cause=critical\n") || !strings.HasPrefix(got, "capgraph.run message.kind=error_report") {
		t.Errorf("span tree:\n%s\nwant the error node with severity and cause, the run's message an error report", got)
	}
}
