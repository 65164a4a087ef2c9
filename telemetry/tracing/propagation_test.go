package tracing_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/server"
	"github.com/capgraph/capgraph/telemetry/internal/teletest"
	"github.com/capgraph/capgraph/telemetry/tracing"
)

const (
	traceID    = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan = "00f067aa0ba902b7"
)

func byName(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// waitSpan waits for the exporter to hold a span named name: the server
// answers on the run's last event, and the run's span ends just after.
func waitSpan(t *testing.T, exp *tracetest.InMemoryExporter, name string) tracetest.SpanStub {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if s := byName(exp.GetSpans(), name); len(s) > 0 {
			return s[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span %s; spans: %v", name, exp.GetSpans())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A traceparent sent with a request is the parent of the run's span, and
// every span of the run is in the caller's trace; a malformed one starts a
// trace of its own and fails nothing.
func TestTraceparentOfARequestIsTheParentOfTheRun(t *testing.T) {
	obs, exp := newTracer(t)
	a, _ := teletest.Agent(t, memory.New(), obs, false)
	srv, err := server.New(server.Config{Runner: a})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	body := `{"model":"` + server.DefaultModel + `","messages":[{"role":"user","content":"` + teletest.Inputs[teletest.Answered] + `"}]}`
	for _, tc := range []struct {
		name, traceparent string
		inCallers         bool
	}{
		{"valid", "00-" + traceID + "-" + callerSpan + "-01", true},
		{"malformed", "00-" + traceID + "-zz-01", false},
		{"all zeros", "00-00000000000000000000000000000000-" + callerSpan + "-01", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp.Reset()
			req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("traceparent", tc.traceparent)
			req.Header.Set("tracestate", "vendor=abc")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "401.5 mA") {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			run := waitSpan(t, exp, "capgraph.run")
			parent := run.Parent
			if got := parent.IsValid() && parent.TraceID().String() == traceID && parent.SpanID().String() == callerSpan && parent.IsRemote(); got != tc.inCallers {
				t.Fatalf("run span's parent %s/%s (remote %v); in the caller's trace: %v, want %v",
					parent.TraceID(), parent.SpanID(), parent.IsRemote(), got, tc.inCallers)
			}
			// The run is named as the server's API and audit records name it;
			// the engine's id is beside it.
			if !strings.HasPrefix(str(run, tracing.AttrRun), "run-") || str(run, tracing.AttrGraphRun) == "" {
				t.Errorf("run span: capgraph.run %q, capgraph.graph_run %q; want the server's run id and the engine's",
					str(run, tracing.AttrRun), str(run, tracing.AttrGraphRun))
			}
			if tc.inCallers && run.SpanContext.TraceState().Get("vendor") != "abc" {
				t.Errorf("tracestate %q, want the caller's carried on", run.SpanContext.TraceState())
			}
			for _, s := range exp.GetSpans() {
				if s.SpanContext.TraceID() != run.SpanContext.TraceID() {
					t.Errorf("span %s in trace %s, the run in %s", s.Name, s.SpanContext.TraceID(), run.SpanContext.TraceID())
				}
			}
			if len(exp.GetSpans()) < 8 {
				t.Errorf("%d spans, want the run's nodes and model calls", len(exp.GetSpans()))
			}
		})
	}
}

// A turn that waits for approval and is resumed by another process (a new
// agent over the same SQLite file, with a tracer of its own): the resume's
// span continues the turn's trace under the first run's span, and links the
// trace of the request that resumed it.
func TestResumeInAnotherProcessContinuesTheTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "threads.db")
	open := func() *sqlite.Store {
		st, err := sqlite.New(sqlite.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	obs1, exp1 := newTracer(t)
	a1, _ := teletest.Agent(t, open(), obs1, true)
	ctx := agent.WithTraceContext(context.Background(), agent.TraceContext{TraceParent: "00-" + traceID + "-" + callerSpan + "-01"})
	var interrupted bool
	for ev, err := range a1.Run(ctx, agent.TurnRequest{Thread: "ops-9", Input: teletest.Inputs[teletest.Approval]}) {
		if err != nil {
			t.Fatal(err)
		}
		interrupted = interrupted || ev.Type == agent.EventDone && ev.Status == agent.RunInterrupted
	}
	if !interrupted {
		t.Fatal("the turn did not wait for approval")
	}
	first := byName(exp1.GetSpans(), "capgraph.run")
	if len(first) != 1 || first[0].SpanContext.TraceID().String() != traceID {
		t.Fatalf("first run: %v", first)
	}

	obs2, exp2 := newTracer(t)
	a2, _ := teletest.Agent(t, open(), obs2, true)
	const resumer = "0af7651916cd43dd8448eb211c80319c"
	rctx := agent.WithTraceContext(context.Background(), agent.TraceContext{TraceParent: "00-" + resumer + "-b7ad6b7169203331-01"})
	yes := true
	var answered bool
	for ev, err := range a2.Resume(rctx, "ops-9", agent.Answer{Approved: &yes, By: "operator"}) {
		if err != nil {
			t.Fatal(err)
		}
		answered = answered || ev.Type == agent.EventDone && ev.Status == agent.RunAnswered
	}
	if !answered {
		t.Fatal("the resumed turn did not end answered")
	}
	res := byName(exp2.GetSpans(), "capgraph.resume")
	if len(res) != 1 {
		t.Fatalf("resume spans: %v", exp2.GetSpans())
	}
	r := res[0]
	if r.Parent.TraceID().String() != traceID || r.Parent.SpanID() != first[0].SpanContext.SpanID() {
		t.Errorf("resume's parent %s/%s, want the first run's span %s/%s", r.Parent.TraceID(), r.Parent.SpanID(), traceID, first[0].SpanContext.SpanID())
	}
	if len(r.Links) != 1 || r.Links[0].SpanContext.TraceID().String() != resumer {
		t.Errorf("resume's links %v, want the resuming request's trace", r.Links)
	}
	var executed bool
	for _, s := range exp2.GetSpans() {
		if s.SpanContext.TraceID().String() != traceID {
			t.Errorf("span %s of the resume in trace %s", s.Name, s.SpanContext.TraceID())
		}
		executed = executed || s.Name == "capability set_current" && str(s, tracing.AttrCapability) == "set_current"
	}
	if !executed {
		t.Errorf("no span of the approved write: %v", exp2.GetSpans())
	}
}

// A Go program that traces on its own: a span in the context of Run is the
// run's parent when no trace context was handed over.
func TestSpanInTheContextIsTheParent(t *testing.T) {
	obs, exp := newTracer(t)
	a, _ := teletest.Agent(t, memory.New(), obs, false)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx, app := tp.Tracer("app").Start(context.Background(), "shift handover")
	for _, err := range a.Run(ctx, agent.TurnRequest{Thread: "op-4", Input: teletest.Inputs[teletest.Answered]}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	app.End()
	run := byName(exp.GetSpans(), "capgraph.run")
	if len(run) != 1 || run[0].Parent.SpanID() != app.SpanContext().SpanID() || run[0].SpanContext.TraceID() != app.SpanContext().TraceID() {
		t.Fatalf("run spans %v, want one under the program's span %s", run, app.SpanContext().SpanID())
	}
}
